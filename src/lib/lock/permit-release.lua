--[[
  Gives permits back by id. A permit whose lease ended but was not reclaimed yet is given back
  too, but counts as not held (as in Redisson's tryRelease).

  KEYS[1]  psemaphore:{name}         string, permits available
  KEYS[2]  psemaphore:{name}:leases  sorted set, permit id -> end of lease
  ARGV[1]  channel (the caller adds the key prefix)
  ARGV[2...]  permit ids

  Returns 1 when every permit was held, -1 otherwise.
]]
--- @include "server-time"

local now = server_time_ms()
local given, held = 0, 0
for i = 2, #ARGV do
  local lease_end = redis.call('ZSCORE', KEYS[2], ARGV[i])
  if lease_end then
    redis.call('ZREM', KEYS[2], ARGV[i])
    given = given + 1
    if tonumber(lease_end) > now then
      held = held + 1
    end
  end
end
if given > 0 then
  redis.call('PUBLISH', ARGV[1], redis.call('INCRBY', KEYS[1], given))
end
if held == #ARGV - 1 then
  return 1
end
return -1
