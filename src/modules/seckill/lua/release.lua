--[[
  Gives an order's unit back: stock + 1 and the buyer mark removed, so the user may buy again.
  Exactly once per order, however often it is called (a crashed canceller retries, two
  instances cancel the same order, a dead letter is handled twice): the first call leaves a
  marker that later calls see.

  KEYS[1]  {seckill:N}:voucher:{voucherId}
  KEYS[2]  {seckill:N}:buyers:{voucherId}
  KEYS[3]  {seckill:N}:released:{orderId}   string marker
  KEYS[4]  {seckill:N}:queued
  ARGV     userId, orderId, marker TTL in seconds
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
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[2])
return 1
