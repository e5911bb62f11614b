-- Commands on a Redis Cluster, one key each, from the edge's workers (lua-resty-redis has no
-- Cluster client). Each worker keeps the slot map (CLUSTER SLOTS, asked of the seed nodes of the
-- settings, then of the nodes it knows) and sends a key's command to the master of its slot
-- (hmdp.edge.crc16), over a keepalive pool per node. A MOVED answer is followed at once and the
-- map asked again; an ASK is followed with ASKING on the target, the map left as it is. A node
-- that fails (refused, closed, timed out) is skipped for backoffMs, and the map is asked again:
-- after a failover, the slots of a dead master point to its promoted replica as soon as the
-- Cluster says so. Every command is bounded by timeoutMs; a map is asked for at most every
-- refreshMs.
local redis = require "nginx.redis"
local crc16 = require "hmdp.edge.crc16"
local settings = require "hmdp.edge.settings"
local redis_connection = require "hmdp.edge.redis_connection"
local log_once = require "hmdp.edge.log_once"

local M = {}

local MAX_REDIRECTS = 3
local match, tonumber, type = string.match, tonumber, type

-- "host:port" → { host, port, address, down_until }: every node this worker has heard of.
local nodes = {}
-- slot + 1 → its master's node; empty until the first map.
local slots = {}
local mapped = false
local refreshing, pending = false, false
local last_refresh = -math.huge

local function node_at(host, port)
  local address = host .. ":" .. port
  local node = nodes[address]
  if not node then
    node = { host = host, port = port, address = address, down_until = 0 }
    nodes[address] = node
  end
  return node
end

--- A connected client of `node`, from its pool (authenticated when the settings carry a password).
local function connect(node)
  local cfg = settings.values.redis
  local client = redis:new()
  client:set_timeout(cfg.timeoutMs)
  local ok, err = client:connect(node.host, node.port, { pool = "hmdp-edge:" .. node.address })
  if not ok then return nil, err end
  if client:get_reused_times() == 0 then
    ok, err = redis_connection.authenticate(client)
    if not ok then
      client:close()
      return nil, "AUTH: " .. tostring(err)
    end
  end
  return client
end

local function release(client)
  local cfg = settings.values.redis
  client:set_keepalive(cfg.idleMs, cfg.poolSize)
end

--- The map from one node's CLUSTER SLOTS: slot + 1 → node, or nil, err.
local function map_from(node)
  local client, err = connect(node)
  if not client then return nil, err end
  local ranges
  ranges, err = client:cluster("slots")
  if type(ranges) ~= "table" then
    client:close()
    return nil, err or "CLUSTER SLOTS: no list"
  end
  release(client)
  local map = {}
  for _, range in ipairs(ranges) do
    local master = range[3]
    if type(master) == "table" then
      -- An empty address means "the node you asked" (cluster-announce-ip unset, or unknown).
      local host = master[1]
      if type(host) ~= "string" or host == "" or host == "?" then host = node.host end
      local owner = node_at(host, tonumber(master[2]))
      for slot = tonumber(range[1]), tonumber(range[2]) do map[slot + 1] = owner end
    end
  end
  return map
end

--- Asks the seeds, then the other nodes known, for the map, until one answers or timeoutMs is spent.
local function refresh()
  local cfg = settings.values.redis
  ngx.update_time()
  local started = ngx.now()
  local asked, err = {}, "no node to ask"
  local function ask(node)
    if asked[node.address] or ngx.now() - started >= cfg.timeoutMs / 1000 then return false end
    asked[node.address] = true
    local map
    map, err = map_from(node)
    ngx.update_time()
    if not map then return false end
    slots, mapped = map, true
    return true
  end
  for _, seed in ipairs(cfg.cluster) do
    if ask(node_at(seed.host, seed.port)) then return true end
  end
  for _, node in pairs(nodes) do
    if ask(node) then return true end
  end
  log_once.warn("cluster-map:" .. tostring(err), "no Redis Cluster node gave its slot map (" .. tostring(err) .. "): reads go to the app until one does")
  return nil, err
end

--- One refresh at a time per worker, at most every refreshMs; returns whether the map is there.
local function refresh_now()
  local now = ngx.now()
  if refreshing or now - last_refresh < settings.values.redis.refreshMs / 1000 then return mapped end
  refreshing, last_refresh = true, now
  local ok, ran = pcall(refresh)
  refreshing = false
  return ok and ran == true
end

--- A refresh in the background (a MOVED, a failed node): the request at hand does not wait.
local function refreshed_later(premature)
  pending = false
  if not premature then refresh_now() end
end

local function refresh_soon()
  if pending or refreshing or ngx.now() - last_refresh < settings.values.redis.refreshMs / 1000 then return end
  pending = ngx.timer.at(0, refreshed_later) ~= nil
end

local function failed(node, client, err)
  local cfg = settings.values.redis
  if client then client:close() end
  node.down_until = ngx.now() + cfg.backoffMs / 1000
  log_once.warn("redis:" .. node.address .. ":" .. tostring(err), "Redis Cluster node " .. node.address .. " failed (" .. tostring(err) .. "): its slots' reads go to the app for " .. cfg.backoffMs .. " ms after each failure")
  refresh_soon()
  return nil, err
end

--- One command on `node` (after ASKING when asked to): the reply, false + the error reply, or nil, err.
local function run(node, asking, command, ...)
  if ngx.now() < node.down_until then
    refresh_soon() -- the slots of a failed master may have moved to its replica meanwhile
    return nil, "backing off"
  end
  local client, err = connect(node)
  if not client then return failed(node, nil, err) end
  local reply
  if asking then
    client:init_pipeline(2)
    client:asking()
    client[command](client, ...)
    local replies
    replies, err = client:commit_pipeline()
    if replies then
      reply = replies[2]
      if type(reply) == "table" and reply[1] == false then reply, err = false, reply[2] end
    end
  else
    reply, err = client[command](client, ...)
  end
  if reply == nil then return failed(node, client, err) end
  release(client)
  return reply, err
end

--- The master serving `key`'s slot now, or nil when this worker has no map (and none came).
local function owner(key)
  if not mapped and not refresh_now() then return nil end
  return slots[crc16.slot(key) + 1]
end

--- host, port of the master serving key's slot now (per-node subscriptions, diagnostics), or nil.
function M.node_of(key)
  local node = owner(key)
  if not node then return nil end
  return node.host, node.port
end

--- `command` (a lua-resty-redis method name) with its arguments, on the master of `key`'s slot,
--- following MOVED and ASK: the reply, or nil, err (an error reply, a node failing, no map).
function M.call(key, command, ...)
  local node = owner(key)
  if not node then return nil, "no slot map" end
  local asking = false
  for _ = 0, MAX_REDIRECTS do
    local reply, err = run(node, asking, command, ...)
    if reply ~= false then return reply, err end
    local kind, slot, host, port = match(err, "^(%u+) (%d+) (.*):(%d+)$")
    if host == "" then host = node.host end
    if kind == "MOVED" then
      node, asking = node_at(host, tonumber(port)), false
      slots[tonumber(slot) + 1] = node
      refresh_soon()
    elseif kind == "ASK" then
      node, asking = node_at(host, tonumber(port)), true
    else
      return nil, err
    end
  end
  return nil, "too many redirections"
end

function M.get(key) return M.call(key, "get", key) end

--- The masters serving slots now ({host, port} each), from this worker's map (asked for if none).
function M.masters()
  if not mapped and not refresh_now() then return {} end
  local seen, list = {}, {}
  for i = 1, 16384 do
    local node = slots[i]
    if node and not seen[node] then
      seen[node] = true
      list[#list + 1] = { host = node.host, port = node.port }
    end
  end
  return list
end

--- A caller met a MOVED or ASK of its own (the sale's watcher): the map is asked again soon.
function M.stale() refresh_soon() end

return M
