-- L2: the app's own Redis records, read with lua-resty-redis (Debian's nginx.redis) over pooled
-- keepalive connections, on a standalone Redis or a Redis Cluster (hmdp.edge.cluster). Every
-- command is bounded by the settings' timeout, and after a failure this worker sends its reads
-- straight to the app for backoffMs (on a Cluster: the failed node's reads): a Redis that is down
-- or stalled costs a request at most one timeout, never a hang. Concurrent reads of one key in a
-- worker share one GET (lua-resty-mlcache's single flight): the first reader fetches, the others
-- wait for its answer on a semaphore for at most the timeout.
local redis = require "nginx.redis"
local semaphore = require "ngx.semaphore"
local settings = require "hmdp.edge.settings"
local redis_connection = require "hmdp.edge.redis_connection"
local cluster = require "hmdp.edge.cluster"
local push_state = require "hmdp.edge.push_state"
local log_once = require "hmdp.edge.log_once"

local M = {}

local down_until = 0

local function failed(client, err)
  local cfg = settings.values.redis
  if client then client:close() end
  down_until = ngx.now() + cfg.backoffMs / 1000
  log_once.warn("redis:" .. tostring(err), "Redis " .. cfg.host .. ":" .. cfg.port .. " failed (" .. tostring(err) .. "): reads go to the app for " .. cfg.backoffMs .. " ms after each failure")
  return nil, err
end

--- A connected client of the standalone Redis (authenticated, on the app's database), or nil, err.
function M.connect()
  local cfg = settings.values.redis
  if cfg.cluster then return nil, "a Redis Cluster: use l2.command" end
  if ngx.now() < down_until then return nil, "backing off" end
  local client = redis:new()
  client:set_timeout(cfg.timeoutMs)
  local ok, err = client:connect(cfg.host, cfg.port, { pool = "hmdp-edge:" .. cfg.host .. ":" .. cfg.port .. ":" .. cfg.db })
  if not ok then return failed(nil, err) end
  if client:get_reused_times() == 0 then
    ok, err = redis_connection.authenticate(client)
    if not ok then return failed(client, "AUTH: " .. tostring(err)) end
    if cfg.db ~= 0 then
      ok, err = client:select(cfg.db)
      if not ok then return failed(client, "SELECT: " .. tostring(err)) end
    end
  end
  return client
end

--- Back to the pool after a command that succeeded.
function M.release(client)
  local cfg = settings.values.redis
  client:set_keepalive(cfg.idleMs, cfg.poolSize)
end

M.failed = failed

--- One command about `key` (a lua-resty-redis method name and its arguments), on the standalone
--- Redis or on the Cluster node of key's slot: the reply, or nil, err.
function M.command(key, command, ...)
  if settings.values.redis.cluster then return cluster.call(key, command, ...) end
  local client, err = M.connect()
  if not client then return nil, err end
  local reply
  reply, err = client[command](client, ...)
  if reply == nil then return failed(client, err) end
  M.release(client)
  if reply == false then return nil, err end -- an error reply: the connection is sound
  return reply
end

-- Reads in flight in this worker, by key: { semaphore, generation, waiting, value, err }. An entry
-- lives while its one GET does, so the table holds at most one entry per request in flight.
local inflight = {}

local function fetch(key)
  local ok, value, err = pcall(M.command, key, "get", key)
  if not ok then return nil, value end
  return value, err
end

--- The string at key, ngx.null when there is none; nil, err when Redis did not answer.
function M.get(key)
  -- Join a read only if no announcement came since it began: it may have read the record before
  -- the write announced (L1 would then keep what was dropped).
  local generation = push_state.generation()
  local flight = inflight[key]
  if flight and flight.generation == generation then
    flight.waiting = flight.waiting + 1
    local ok, err = flight.semaphore:wait(settings.values.redis.timeoutMs / 1000)
    if not ok then return nil, err end
    return flight.value, flight.err
  end
  flight = { semaphore = semaphore.new(), generation = generation, waiting = 0 }
  inflight[key] = flight
  flight.value, flight.err = fetch(key)
  if inflight[key] == flight then inflight[key] = nil end
  if flight.waiting > 0 then flight.semaphore:post(flight.waiting) end
  return flight.value, flight.err
end

return M
