--[[
  Watchdog renewal of a simple lock, only while the token still holds it.

  KEYS[1]  lock:{name}        string token
  KEYS[2]  lock:{name}:fence  string, last fencing token
  ARGV[1]  token
  ARGV[2]  lease in ms
  ARGV[3]  TTL of the fence key in ms

  Returns 1 when renewed, 0 when the token no longer holds the lock.
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
