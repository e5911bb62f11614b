-- The Redis nodes a worker's sale watcher keeps a pair of connections to, and the node of a key:
-- the app's standalone Redis (one node holds every key).
local settings = require "hmdp.edge.settings"
local sale_node = require "hmdp.edge.sale_node"

local M = {}

local single

local function standalone()
  local cfg = settings.values.redis
  if not single then single = sale_node.new(cfg.host .. ":" .. cfg.port) end
  return single, cfg
end

--- The nodes to watch: {name = "host:port", host, port, node}.
function M.all()
  local node, cfg = standalone()
  return { { name = node.name, host = cfg.host, port = cfg.port, node = node } }
end

--- The node that holds `key`, or nil when none is known.
function M.node_of(_key)
  return (standalone())
end

--- Whether every node's push is fresh (what /_edge/status shows).
function M.fresh()
  for _, target in ipairs(M.all()) do
    if not target.node:fresh() then return false end
  end
  return true
end

--- Whether the node is still one to watch (its pair ends when not).
function M.watched(node)
  return node == single
end

--- `started(target)` is called for each node that becomes one to watch after the start.
function M.on_new_node(_started) end

return M
