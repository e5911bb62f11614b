--[[
  Takes every available permit at once (drainPermits).

  KEYS[1]  semaphore:{name}  string, available permits

  Returns the permits taken (0 when none were available).
]]
local available = tonumber(redis.call('GET', KEYS[1]) or '0')
if available <= 0 then
  return 0
end
redis.call('DECRBY', KEYS[1], available)
return available
