--[[
  Counts a latch down by one (Redisson's RCountDownLatch.countDown); at zero the latch key is
  deleted and every waiter is woken.

  KEYS[1]  latch:{name}  string, the count (no key: zero)
  ARGV[1]  channel (the caller adds the key prefix)

  Returns the count left (0 when the latch is open, also if it already was).
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local left = redis.call('DECR', KEYS[1])
if left > 0 then
  return left
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[1], 'all')
return 0
