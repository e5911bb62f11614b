--[[
  Rewrites a frozen voucher's stock and buyer slots from MySQL's record and lifts the freeze, in
  one step, only if the freeze is still the caller's and has not lapsed (else orders may have been
  taken since the caller read MySQL, and an absolute write could oversell).

  Cancelled orders whose unit the canceller has not yet given back in Redis are decided here,
  atomically with the write, by their release marker: marker present → already released
  (nothing held); absent → still held (one unit off the stock, its slot kept), and the
  canceller's later release.lua adds it back exactly once.

  KEYS[1]     {seckill:N}:voucher:{voucherId}
  KEYS[2]     {seckill:N}:buyer-slots:{voucherId}
  KEYS[3..]   {seckill:N}:released:{orderId} of each cancelled, not yet released order
  ARGV        token, stock (MySQL), begin, end (epoch ms), keep after the end (ms), limit per
              user (MySQL), holder count H, H pairs (user id, slot bitmask of its live orders),
              then a pair (user id, slot) for each KEYS[3..] order
  Returns the stock written, or -1 when the freeze is gone (nothing written).
]]
--- @include "server-time"
--- @include "rewrite-buyers"
local now = server_time_ms()
local freeze = redis.call('HMGET', KEYS[1], 'frozen_by', 'frozen_until')
if freeze[1] ~= ARGV[1] or not freeze[2] or now >= tonumber(freeze[2]) then
  return -1
end
local expire_at = tonumber(ARGV[4]) + tonumber(ARGV[5])
local stock = tonumber(ARGV[2]) - rewrite_buyers(KEYS[2], 7, 3, expire_at)
if stock < 0 then
  stock = 0
end
redis.call('HSET', KEYS[1], 'stock', stock, 'begin', ARGV[3], 'end', ARGV[4], 'limit', ARGV[6])
redis.call('HINCRBY', KEYS[1], 'restocks', 1)
-- The stock now derives from MySQL: so must the total the live controls count sold units from
-- (control.lua seeds it again from tb_seckill_voucher.total_stock).
redis.call('HDEL', KEYS[1], 'frozen_until', 'frozen_by', 'frozen_created', 'total')
redis.call('PEXPIREAT', KEYS[1], expire_at)
return stock
