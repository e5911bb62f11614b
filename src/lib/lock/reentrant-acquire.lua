--[[
  Acquires or re-enters a reentrant lock (next_fence comes from includes/fence.lua).

  KEYS[1]  lock:{name}        hash {owner: hold count}, PX lease
  KEYS[2]  lock:{name}:fence  string, last fencing token
  ARGV[1]  owner (instance id : async context id)
  ARGV[2]  lease in ms
  ARGV[3]  TTL of the fence key in ms

  Returns {1, token} for a new hold, {2, token} for a re-entry (the token of the hold it joins),
          {0, pttl}  when another owner holds the lock (pttl: its remaining lease in ms).
]]
--- @include "includes/fence"

if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], ARGV[1], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, next_fence(KEYS[2], ARGV[3])}
end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
  -- A re-entry may lengthen the lease but never shortens what the outer hold asked for.
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return {2, redis.call('GET', KEYS[2]) or '0'}
end
return {0, redis.call('PTTL', KEYS[1])}
