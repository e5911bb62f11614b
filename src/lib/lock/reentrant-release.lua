--[[
  Releases one hold of a reentrant lock; the last one deletes the lock and wakes waiters.

  KEYS[1]  lock:{name}  hash {owner: hold count}
  ARGV[1]  owner
  ARGV[2]  release channel (pub/sub channels are not keys: the caller adds the key prefix)

  Returns 1 when the lock is now free, 0 when the owner still holds it (re-entered),
         -1 when the owner does not hold it (lease expired, or never held).
]]
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return -1
end
if redis.call('HINCRBY', KEYS[1], ARGV[1], -1) > 0 then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], 'released')
return 1
