--[[
  Gives an order's unit back: stock + 1 and the order's slot freed in the user's bitmask, so the
  user may buy again. Exactly once per order, however often it is called (a crashed canceller
  retries, two instances cancel the same order, a dead letter is handled twice): the first call
  leaves a marker that later calls see.

  KEYS[1]  {seckill:N}:voucher:{voucherId}
  KEYS[2]  {seckill:N}:buyer-slots:{voucherId}
  KEYS[3]  {seckill:N}:released:{orderId}   string marker
  KEYS[4]  {seckill:N}:queued
  KEYS[5]  {seckill:N}:queued-by-user
  ARGV     userId, orderId, marker TTL in seconds, slot (1..limit), the order's queued-by-user member
  Returns 1 when released now, 0 when it had been released before.
]]
if not redis.call('SET', KEYS[3], '1', 'NX', 'EX', ARGV[3]) then
  return 0
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'stock', 1)
  -- A unit is back: instances that know the voucher sold out drop their flag (sold-out.ts).
  redis.call('HINCRBY', KEYS[1], 'restocks', 1)
end
local held = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
local left = bit.band(held, bit.bnot(bit.lshift(1, tonumber(ARGV[4]) - 1)))
if left == 0 then
  redis.call('HDEL', KEYS[2], ARGV[1])
else
  redis.call('HSET', KEYS[2], ARGV[1], left)
end
redis.call('HDEL', KEYS[4], ARGV[2])
redis.call('ZREM', KEYS[5], ARGV[5])
return 1
