-- L1: answers already built, in a shared dict all workers read, each kept a short life with
-- jitter (entries made together do not end together), never past its record's logical expiry.
-- What a change made through the app costs here: the old answer until the entry ends.
local settings = require "hmdp.edge.settings"

local M = {}

local dict = ngx.shared.hmdp_edge_l1
local random, min = math.random, math.min

M.FOUND = 1
M.MISSING = 2

--- body, flags (FOUND or MISSING), or nil
function M.get(key)
  return dict:get(key)
end

function M.set(key, body, flags, expire_at_ms)
  local l1 = settings.values.l1
  local ms = l1.ttlMs * (1 + random() * l1.jitterPercent / 100)
  if expire_at_ms then ms = min(ms, expire_at_ms - ngx.now() * 1000) end
  if ms < 1 then return end
  -- When the dict is full, set() drops the least recently used entries: a cache, not a store.
  dict:set(key, body, ms / 1000, flags)
end

return M
