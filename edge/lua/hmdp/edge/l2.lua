-- L2: the app's own Redis records, read with lua-resty-redis (Debian's nginx.redis) over pooled
-- keepalive connections. Every command is bounded by the settings' timeout, and after a failure
-- this worker sends its reads straight to the app for backoffMs: a Redis that is down or stalled
-- costs a request at most one timeout, never a hang.
local redis = require "nginx.redis"
local settings = require "hmdp.edge.settings"
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

--- A connected client (authenticated, on the app's database), or nil, err.
function M.connect()
  local cfg = settings.values.redis
  if ngx.now() < down_until then return nil, "backing off" end
  local client = redis:new()
  client:set_timeout(cfg.timeoutMs)
  local ok, err = client:connect(cfg.host, cfg.port, { pool = "hmdp-edge:" .. cfg.host .. ":" .. cfg.port .. ":" .. cfg.db })
  if not ok then return failed(nil, err) end
  if client:get_reused_times() == 0 then
    if cfg.password then
      if cfg.username then ok, err = client:auth(cfg.username, cfg.password) else ok, err = client:auth(cfg.password) end
      if not ok then return failed(client, "AUTH: " .. tostring(err)) end
    end
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

--- The string at key, ngx.null when there is none; nil, err when Redis did not answer.
function M.get(key)
  local client, err = M.connect()
  if not client then return nil, err end
  local value
  value, err = client:get(key)
  if err then return failed(client, err) end
  M.release(client)
  return value
end

return M
