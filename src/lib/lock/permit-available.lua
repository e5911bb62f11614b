--[[
  Permits available now, after giving back those of ended leases. reclaim comes from
  includes/permit-reclaim.lua. Also sets the permits if asked (trySetPermits / addPermits).

  KEYS[1]  psemaphore:{name}         string, permits available
  KEYS[2]  psemaphore:{name}:leases  sorted set, permit id -> end of lease
  ARGV[1]  channel (the caller adds the key prefix)
  ARGV[2]  '' (only read), 'set' (set to ARGV[3] if never set), 'add' (add ARGV[3], may be negative)
  ARGV[3]  permits

  Returns {permits available now, 1 if the permits were changed else 0}.
]]
--- @include "server-time"
--- @include "includes/permit-reclaim"

local reclaimed = reclaim(KEYS[1], KEYS[2], server_time_ms())
local changed = 0
if ARGV[2] == 'set' and redis.call('EXISTS', KEYS[1]) == 0 and redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('SET', KEYS[1], ARGV[3])
  changed = 1
elseif ARGV[2] == 'add' then
  redis.call('INCRBY', KEYS[1], ARGV[3])
  changed = 1
end
local available = tonumber(redis.call('GET', KEYS[1]) or '0')
if (reclaimed > 0 or changed == 1) and available > 0 then
  redis.call('PUBLISH', ARGV[1], available)
end
return {available, changed}
