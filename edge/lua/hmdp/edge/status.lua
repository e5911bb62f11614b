-- GET /_edge/status (loopback only): whether the push of changes works, how many drops it made
-- (the generation), whether this worker's view of the sales is fresh on every node, and L1's room, for an
-- operator or a probe.
local cjson = require "cjson.safe"
local settings = require "hmdp.edge.settings"
local push_state = require "hmdp.edge.push_state"
local sale_nodes = require "hmdp.edge.sale_nodes"

local M = {}

function M.serve()
  local values = settings.values
  local push = "off"
  if values.reads and values.push then push = push_state.alive() and "up" or "down" end
  local dict = ngx.shared.hmdp_edge_l1
  ngx.header["content-type"] = "application/json; charset=utf-8"
  ngx.header["cache-control"] = "no-store"
  ngx.print(cjson.encode({
    reads = values.reads,
    push = push,
    generation = push_state.generation(),
    -- This worker's view of the sales: "fresh" while its watcher's heartbeat comes back in time.
    sales = values.sales and (sale_nodes.fresh() and "fresh" or "stale") or "off",
    l1 = { capacity = dict:capacity(), free = dict:free_space() },
  }))
end

return M
