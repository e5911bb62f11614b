--[[
  Publishes a seckill voucher's stock and sale window to Redis, unless it is there already
  (then live stock, which orders have been taking, must not be overwritten by an older count).

  The hash expires some days after the sale ends (ARGV[4]): no sale leaves keys behind forever.

  KEYS[1]  {seckill:N}:voucher:{voucherId}  hash {stock, begin, end, restocks[, limit, total, suspended]}  (begin/end: epoch ms)
  ARGV     stock, begin, end, keep after the end (ms), total ("" unknown), suspended ("1" or ""),
           limit per user ("" or absent: 1)
  Returns 1 when published, 0 when the voucher was already there.
]]
--- @include "server-time"
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
-- restocks: the version of the sold-out flags (sold-out.ts); a fresh one for a (re)published sale.
redis.call('HSET', KEYS[1], 'stock', ARGV[1], 'begin', ARGV[2], 'end', ARGV[3], 'restocks', string.format('%.0f', server_time_us()))
if ARGV[5] and ARGV[5] ~= '' then
  redis.call('HSET', KEYS[1], 'total', ARGV[5])
end
if ARGV[7] and ARGV[7] ~= '' then
  redis.call('HSET', KEYS[1], 'limit', ARGV[7])
end
if ARGV[6] == '1' then
  redis.call('HSET', KEYS[1], 'suspended', 1)
end
redis.call('PEXPIREAT', KEYS[1], tonumber(ARGV[3]) + tonumber(ARGV[4]))
return 1
