--[[
  Adds permits to a semaphore and tells waiters how many are available now (release and
  addPermits; a negative count takes permits away and wakes no one).

  KEYS[1]  semaphore:{name}  string, available permits
  ARGV[1]  permits to add (may be negative)
  ARGV[2]  channel (pub/sub channels are not keys: the caller adds the key prefix)

  Returns the permits available now.
]]
local available = redis.call('INCRBY', KEYS[1], ARGV[1])
if tonumber(ARGV[1]) > 0 and available > 0 then
  redis.call('PUBLISH', ARGV[2], available)
end
return available
