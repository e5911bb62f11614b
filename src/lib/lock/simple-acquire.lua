--[[
  Acquires a simple (non-reentrant) lock: SET NX PX plus a fencing token, atomically
  (next_fence comes from includes/fence.lua).

  KEYS[1]  lock:{name}        string, the holder's random token, PX lease
  KEYS[2]  lock:{name}:fence  string, last fencing token
  ARGV[1]  token of this acquisition
  ARGV[2]  lease in ms
  ARGV[3]  TTL of the fence key in ms

  Returns {1, fencing token} when acquired, {0, pttl} when the lock is held.
]]
--- @include "includes/fence"

if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, next_fence(KEYS[2], ARGV[3])}
end
return {0, redis.call('PTTL', KEYS[1])}
