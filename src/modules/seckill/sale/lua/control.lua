--[[
  An administrator's change to a live sale, atomically, on the sale's own hash (sale-controls.ts
  calls it under the voucher's MySQL lock, in the order that keeps Redis's stock at or below
  MySQL's). Every field is absolute, so a repeated call changes nothing more.

  Stock is set through `total`, the units the sale offers, sold or not: sold = total - stock
  (orders in MySQL, queued, or cancelled and not yet given back); the new stock is total' - sold,
  refused when total' < sold. A hash without `total` gets ARGV[1] (MySQL's total, read before
  any change) first: call once with only ARGV[1] before changing MySQL.

  A voucher sold from B > 1 buckets runs it on each bucket (bucket-controls.ts): a bucket's `total`
  is its part of the sale's total (the sum over the buckets is the sale's), and its `pending` units
  count as sold here, so a lower never takes them (new stock = stock + total' - total >= 0).

  KEYS[1]  {seckill:N}:voucher:{voucherId}  hash {stock, begin, end, total, suspended, ...}
           (or a bucket's {lane}:voucher:{voucherId}:b{b}of{B})
  KEYS[2]  {seckill:N}:buyer-slots:{voucherId}  (or the bucket's buyer-slots)
  ARGV     total if missing, new total, begin, end (epoch ms), suspended ("1"/"0"), keep after
           the end (ms), limit per user (users holding more keep their orders, and buy no more);
           "" leaves a field as it is
  Returns {0, stock, total} applied, {1, 0, 0} not in Redis (nothing written: the next order
  publishes it from MySQL), {2, sold, total} the new total is below what is sold (nothing written).
]]
local fields = redis.call('HMGET', KEYS[1], 'stock', 'total', 'frozen_created')
if not fields[1] or fields[3] then
  return {1, 0, 0}
end
local stock = tonumber(fields[1])
local total = tonumber(fields[2] or ARGV[1])
if not fields[2] then
  redis.call('HSET', KEYS[1], 'total', total)
end
if ARGV[2] ~= '' then
  local target = tonumber(ARGV[2])
  local sold = total - stock
  if target < sold then
    return {2, sold, total}
  end
  local raised = target - sold > stock
  stock = target - sold
  total = target
  redis.call('HSET', KEYS[1], 'stock', stock, 'total', total)
  if raised then
    -- Units are back: instances that know the voucher sold out drop their flag (sold-out.ts).
    redis.call('HINCRBY', KEYS[1], 'restocks', 1)
  end
end
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[1], 'begin', ARGV[3])
end
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[1], 'end', ARGV[4])
  local expire_at = tonumber(ARGV[4]) + tonumber(ARGV[6])
  redis.call('PEXPIREAT', KEYS[1], expire_at)
  redis.call('PEXPIREAT', KEYS[2], expire_at)
end
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[1], 'suspended', 1)
elseif ARGV[5] == '0' then
  redis.call('HDEL', KEYS[1], 'suspended')
end
if ARGV[7] and ARGV[7] ~= '' then
  redis.call('HSET', KEYS[1], 'limit', ARGV[7])
end
return {0, stock, total}
