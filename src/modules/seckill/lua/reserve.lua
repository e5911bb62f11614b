--[[
  One seckill order, atomically: check the sale window (Redis server time, so app instances
  with skewed clocks agree), the stock and whether this user already bought; then take one unit,
  mark the buyer, remember the order as queued and, by mode, append it to the order stream
  (async strategy) or hold it in the in-flight set while the caller writes MySQL itself (sync
  strategy). Both strategies decide here, on the same stock and buyers, so instances on
  different strategies, or a switch mid-sale, can neither oversell nor drop an accepted order.
  Every key shares the hash tag {seckill:N}: one Redis Cluster slot.

  KEYS[1]  {seckill:N}:voucher:{voucherId}  hash {stock, begin, end[, total, suspended, paused_until, paused_by]}
  KEYS[2]  {seckill:N}:buyers:{voucherId}   set of user ids with a live order
  KEYS[3]  {seckill:N}:orders               stream the order worker reads
  KEYS[4]  {seckill:N}:queued               hash orderId -> "userId:voucherId", until in MySQL
  KEYS[5]  {seckill:N}:in-flight            sorted set orderId -> reserve time (ms) of held orders
  ARGV     userId, orderId, voucherId, keep after the end (ms), mode ("stream" or "hold")

  Returns 0 accepted, 1 not started, 2 ended, 3 sold out, 4 already bought, 5 unknown voucher,
  6 paused (the reconciliation is repairing this voucher: stock and buyers are about to be
  rewritten from MySQL, so nothing may be taken meanwhile; the pause lapses by itself at
  paused_until, so a repair that dies cannot stop a sale), 7 suspended (an administrator paused
  the sale: control.lua).
]]
local voucher = redis.call('HMGET', KEYS[1], 'stock', 'begin', 'end', 'paused_until', 'suspended')
if not voucher[1] then
  return 5
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if now < tonumber(voucher[2]) then
  return 1
end
if now >= tonumber(voucher[3]) then
  return 2
end
if voucher[4] and now < tonumber(voucher[4]) then
  return 6
end
if voucher[5] then
  return 7
end
if tonumber(voucher[1]) <= 0 then
  return 3
end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then
  return 4
end
redis.call('HINCRBY', KEYS[1], 'stock', -1)
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('PEXPIREAT', KEYS[2], tonumber(voucher[3]) + tonumber(ARGV[4]))
redis.call('HSET', KEYS[4], ARGV[2], ARGV[1] .. ':' .. ARGV[3])
if ARGV[5] == 'hold' then
  -- The caller writes MySQL and then settles (hand-off.lua streams it if the caller does not).
  redis.call('ZADD', KEYS[5], now, ARGV[2])
else
  redis.call('XADD', KEYS[3], '*', 'orderId', ARGV[2], 'userId', ARGV[1], 'voucherId', ARGV[3])
end
return 0
