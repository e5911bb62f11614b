-- The Redis nodes a worker's sale watcher keeps a pair of connections to, and the node of a key:
-- the app's standalone Redis (one node holds every key), or on a Cluster the master serving the
-- key's slot now (hmdp.edge.cluster's map). A Cluster's masters are watched from the start, and a
-- node that comes to serve a key later (a failover, a resharding) from the first time it does.
local settings = require "hmdp.edge.settings"
local sale_node = require "hmdp.edge.sale_node"

local M = {}

local nodes = {}      -- "host:port" -> {name, host, port, node}
local on_new

local function clustered() return settings.values.redis.cluster ~= nil end

--- The watched node at host:port, made (and its pair started) the first time it is met.
local function target_at(host, port)
  local name = host .. ":" .. port
  local target = nodes[name]
  if not target then
    target = { name = name, host = host, port = port, node = sale_node.new(name) }
    nodes[name] = target
    if on_new then on_new(target) end
  end
  return target
end

--- The nodes watched so far.
function M.all()
  local list = {}
  for _, target in pairs(nodes) do list[#list + 1] = target end
  return list
end

--- The node that holds `key` now, or nil when none is known (the request goes to the app).
function M.node_of(key)
  if not clustered() then
    local cfg = settings.values.redis
    return target_at(cfg.host, cfg.port).node
  end
  local host, port = require("hmdp.edge.cluster").node_of(key)
  if not host then return nil end
  return target_at(host, port).node
end

--- Whether every node's push is fresh (what /_edge/status shows); none watched yet is not fresh.
function M.fresh()
  local any = false
  for _, target in pairs(nodes) do
    if not target.node:fresh() then return false end
    any = true
  end
  return any
end

--- Watches the nodes there are (in a timer: a Cluster's map is asked of the network), calling
--- `started(target)` for each, now and for every node met later.
function M.watch(started)
  on_new = started
  if not clustered() then
    local cfg = settings.values.redis
    return target_at(cfg.host, cfg.port)
  end
  for _, master in ipairs(require("hmdp.edge.cluster").masters()) do target_at(master.host, master.port) end
end

return M
