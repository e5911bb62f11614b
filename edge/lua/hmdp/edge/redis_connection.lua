-- Opening a Redis connection as every part of the edge does: AUTH with the app's credentials when
-- the settings carry a password (ACL user or not), and for a dedicated connection (a subscriber,
-- the sale watcher's reader) a name after the deployment's prefix, so that an operator (or a test)
-- finds it in CLIENT LIST.
local redis = require "nginx.redis"
local settings = require "hmdp.edge.settings"

local M = {}

--- AUTH on `client` when the settings carry a password: true, or nil, err.
function M.authenticate(client)
  local cfg = settings.values.redis
  if not cfg.password then return true end
  if cfg.username then return client:auth(cfg.username, cfg.password) end
  return client:auth(cfg.password)
end

--- A connection of its own (never pooled) to host:port, authenticated and named: client, or nil, err.
function M.dedicated(host, port, timeout_ms, name)
  local client = redis:new()
  client:set_timeout(timeout_ms)
  local ok, err = client:connect(host, port)
  if ok then ok, err = M.authenticate(client) end
  if ok then ok, err = client:client("setname", name) end
  if not ok then
    client:close()
    return nil, err
  end
  return client
end

return M
