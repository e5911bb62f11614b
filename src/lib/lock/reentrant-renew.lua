--[[
  Watchdog renewal of a reentrant lock, only while the owner still holds it.

  KEYS[1]  lock:{name}        hash {owner: hold count}
  KEYS[2]  lock:{name}:fence  string, last fencing token
  ARGV[1]  owner
  ARGV[2]  lease in ms
  ARGV[3]  TTL of the fence key in ms

  Returns 1 when renewed, 0 when the owner no longer holds the lock.
]]
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
-- Like a re-entry, a renewal never shortens a longer fixed lease that a hold of the owner asked for.
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
