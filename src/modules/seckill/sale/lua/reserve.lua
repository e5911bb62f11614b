--[[
  One seckill order, atomically: replay an Idempotency-Key's order, check the sale window (Redis
  server time, so app instances with skewed clocks agree), the stock and the user's limit of live
  orders (every slot the user holds counts, also those above a lowered limit); then take one unit,
  give the user its lowest free slot, remember the order as queued (per shard and per user) and,
  by mode, append it to the order stream (async strategy) or hold it in the in-flight set while
  the caller writes MySQL itself (sync strategy). Both strategies decide here, on the same stock
  and slots, so instances on different strategies, or a switch mid-sale, can neither oversell nor
  drop an accepted order.
  Every key shares the hash tag {seckill:N}: one Redis Cluster hash slot.

  KEYS[1]  {seckill:N}:voucher:{voucherId}  hash {stock, begin, end, restocks[, limit, total, suspended, frozen_until, frozen_by]}
  KEYS[2]  {seckill:N}:buyer-slots:{voucherId}  hash userId -> bitmask of the slots its live orders hold
  KEYS[3]  {seckill:N}:orders               stream the order worker reads
  KEYS[4]  {seckill:N}:queued               hash orderId -> "userId:voucherId:slot", until in MySQL
  KEYS[5]  {seckill:N}:in-flight            sorted set orderId -> reserve time (ms) of held orders
  KEYS[6]  {seckill:N}:user-orders:{userId}  hash orderId -> "voucherId:reserveMs:slot"
  KEYS[7]  {seckill:N}:idem:{userId}:{key}  string orderId (touched only when ARGV[6] is not "")
  ARGV     userId, orderId, voucherId, keep after the end (ms), mode ("stream" or "hold"),
           Idempotency-Key TTL (ms; "" when the request has no key), user-orders TTL (ms)

  Returns {code, value}; codes 0 accepted, 1 not started, 2 ended, 3 sold out, 4 already bought, 5 unknown voucher, 6 frozen, 7 suspended, 8 replayed.
  value: the slot (accepted; a third element, the acceptance time in ms, which the stream entry
  carries as acceptedMs and MySQL stores as create_time), the limit (already bought: the user holds that many live orders),
  the order id the key was accepted as (replayed: the same key came again; nothing else is
  checked, so a retry never reads "already bought" or "sold out" for its own order), else 0.
  frozen: the reconciliation is repairing this voucher (stock and slots are about to be rewritten
  from MySQL, so nothing may be taken meanwhile; the freeze lapses by itself at frozen_until, so a
  repair that dies cannot stop a sale). suspended: an administrator paused the sale (control.lua).
]]
--- @include "server-time"

-- How many slots the mask holds, counted up to `up_to` (one bit operation per slot counted).
local function slots_held(mask, up_to)
  local count = 0
  while mask ~= 0 and count < up_to do
    mask = bit.band(mask, mask - 1)
    count = count + 1
  end
  return count
end

local with_key = ARGV[6] ~= ''
if with_key then
  local earlier = redis.call('GET', KEYS[7])
  if earlier then
    return {8, earlier}
  end
end
local voucher = redis.call('HMGET', KEYS[1], 'stock', 'begin', 'end', 'frozen_until', 'suspended', 'limit')
if not voucher[1] then
  return {5, 0}
end
local now = server_time_ms()
if now < tonumber(voucher[2]) then
  return {1, 0}
end
if now >= tonumber(voucher[3]) then
  return {2, 0}
end
if voucher[4] and now < tonumber(voucher[4]) then
  return {6, 0}
end
if voucher[5] then
  return {7, 0}
end
if tonumber(voucher[1]) <= 0 then
  return {3, 0}
end
local limit = tonumber(voucher[6] or '1')
local held = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
-- Every held slot counts, those above a lowered limit too: a user at or over the limit buys no more.
if slots_held(held, limit) >= limit then
  return {4, limit}
end
-- The lowest free slot: fewer than `limit` are held, so it is at most `limit`.
local slot, slot_bit = 1, 1
while bit.band(held, slot_bit) ~= 0 do
  slot, slot_bit = slot + 1, slot_bit * 2
end
redis.call('HINCRBY', KEYS[1], 'stock', -1)
redis.call('HSET', KEYS[2], ARGV[1], held + slot_bit)
redis.call('PEXPIREAT', KEYS[2], tonumber(voucher[3]) + tonumber(ARGV[4]))
redis.call('HSET', KEYS[4], ARGV[2], ARGV[1] .. ':' .. ARGV[3] .. ':' .. slot)
redis.call('HSET', KEYS[6], ARGV[2], ARGV[3] .. ':' .. string.format('%d', now) .. ':' .. slot)
redis.call('PEXPIRE', KEYS[6], ARGV[7])
if with_key then
  redis.call('SET', KEYS[7], ARGV[2], 'PX', ARGV[6])
end
if ARGV[5] == 'hold' then
  -- The caller writes MySQL and then settles (hand-off.lua streams it if the caller does not).
  redis.call('ZADD', KEYS[5], now, ARGV[2])
else
  redis.call('XADD', KEYS[3], '*', 'orderId', ARGV[2], 'userId', ARGV[1], 'voucherId', ARGV[3], 'slot', slot, 'acceptedMs', now)
end
return {0, slot, now}
