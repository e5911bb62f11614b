--[[
  A batch of seckill orders of one shard, atomically and in the order given: each decided by the
  same rules as if it came alone (decide_order below, the one place they are written). Per order:
  replay an Idempotency-Key's order, check the sale window (Redis server time, so app instances
  with skewed clocks agree), the stock and the user's limit of live orders (every slot the user
  holds counts, also those above a lowered limit); then take one unit, give the user its lowest
  free slot, remember the order as queued (by order and by user) and, by its mode, append it to
  the order stream (async strategy) or hold it in the in-flight set while the caller writes MySQL
  itself (sync strategy). Both strategies decide here, on the same stock and slots, so instances on
  different strategies, or a switch mid-sale, can neither oversell nor drop an accepted order.
  An earlier order of the batch is seen by a later one: its unit is taken, its slot held, its
  Idempotency-Key's order stored (a key repeated inside the batch replays the first order).
  Every key shares the hash tag {seckill:N}: one Redis Cluster hash slot, one call per shard.

  Two passes, so that a batch costs few commands: the first reads (each voucher's hash and its
  buyers' slot masks once per batch) and decides every order in memory; the second writes, per
  voucher one stock decrement and one HSET of the buyers' masks; per batch one HSET and one ZADD
  of the queued orders, and one stream entry holding every streamed order (or, for the orders the
  sync strategy holds, one ZADD of the in-flight set); per order only its Idempotency-Key. The
  stock is written first: a script that fails midway leaves units taken without their order
  (reconcile finds them), never an order without its unit.

  KEYS[1]  {seckill:N}:orders               stream the order worker reads: one entry per batch,
                                            {acceptedMs, orders "orderId:userId:voucherId:slot,..."}
  KEYS[2]  {seckill:N}:queued               hash orderId -> "userId:voucherId:slot:acceptedMs", until in MySQL
  KEYS[3]  {seckill:N}:in-flight            sorted set orderId -> reserve time (ms) of held orders
  KEYS[4]  {seckill:N}:queued-by-user       sorted set, scores 0, members "userId:orderId" (a user's queued orders)
  then 2 keys per voucher of the batch, in the order of their first order (V vouchers):
  KEYS[+0] {seckill:N}:voucher:{voucherId}  hash {stock, begin, end, restocks[, limit, total, suspended, frozen_until, frozen_by]}
  KEYS[+1] {seckill:N}:buyer-slots:{voucherId}  hash userId -> bitmask of the slots its live orders hold
  then 1 key per order with an Idempotency-Key, in the batch's order:
  KEYS[+0] {seckill:N}:idem:{userId}:{key}  string orderId
  ARGV     keep after the end (ms), V,
           then 5 per order (ARGV[3 + 5i] .. ARGV[7 + 5i]): userId, orderId, voucherId,
           mode ("stream" or "hold"), Idempotency-Key TTL (ms; "" when the request has no key)
  (Each voucher's keys once, and idem keys only for the orders that have one: the call's size, for
  the client to encode and Redis to parse, grows by 5 short arguments per order.)

  Returns a flat list, the batch's time then a code and a value per order; codes 0 accepted, 1 not started, 2 ended, 3 sold out, 4 already bought, 5 unknown voucher, 6 frozen, 7 suspended, 8 replayed.
  The time is the batch's Redis time in ms, an accepted order's acceptance (the batch's stream
  entry carries it as acceptedMs, MySQL stores it as create_time); flat, so that no table per order is
  built and encoded. value: the slot (accepted), the limit (already bought: the user holds that many live orders),
  the order id the key was accepted as (replayed: the same key came again; nothing else is
  checked, so a retry never reads "already bought" or "sold out" for its own order), else 0.
  frozen: the reconciliation is repairing this voucher (stock and slots are about to be rewritten
  from MySQL, so nothing may be taken meanwhile; the freeze lapses by itself at frozen_until, so a
  repair that dies cannot stop a sale). suspended: an administrator paused the sale (control.lua).
]]
--- @include "server-time"

local STREAM, QUEUED, IN_FLIGHT, QUEUED_BY_USER = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local KEEP_AFTER_END, VOUCHERS = ARGV[1], tonumber(ARGV[2])
local ORDERS = (#ARGV - 2) / 5
-- Order i's first argument.
local function arg_of(i)
  return 3 + 5 * i
end
-- One clock reading per batch: its orders are decided at one instant, in the batch's order.
local now = server_time_ms()

-- How many slots the mask holds, counted up to `up_to` (one bit operation per slot counted).
local function slots_held(mask, up_to)
  local count = 0
  while mask ~= 0 and count < up_to do
    mask = bit.band(mask, mask - 1)
    count = count + 1
  end
  return count
end

-- A command over a long list of arguments in pieces: unpack is bounded by the Lua C stack.
local CHUNK = 2000
local function call_in_chunks(command, key, values)
  for first = 1, #values, CHUNK do
    redis.call(command, key, unpack(values, first, math.min(first + CHUNK - 1, #values)))
  end
end

-- The batch's sales, by voucher key, each read once: its fields and the slot masks of the
-- batch's buyers (one HMGET), then kept here as the orders are decided.
local sale_list = {}
local function read_sale(voucher_key, buyers_key)
  local fields = redis.call('HMGET', voucher_key, 'stock', 'begin', 'end', 'frozen_until', 'suspended', 'limit')
  if not fields[1] then
    return false
  end
  local sale = {
    key = voucher_key, buyers = buyers_key, stock = tonumber(fields[1]), begin = tonumber(fields[2]),
    ['end'] = tonumber(fields[3]), frozen_until = tonumber(fields[4] or '0'), suspended = fields[5] ~= false,
    limit = tonumber(fields[6] or '1'), taken = 0, masks = {}, users = {}, changed = {},
  }
  sale_list[#sale_list + 1] = sale
  return sale
end

-- First pass, reads only: each voucher's hash (its keys named in the order of its first order),
-- then its buyers' masks in one HMGET; each order's idem key, if it has one.
local sale_of_voucher, idem_key_of = {}, {}
local next_voucher_key, next_idem_key = 5, 5 + 2 * VOUCHERS
for i = 0, ORDERS - 1 do
  local a = arg_of(i)
  local user, voucher_id = ARGV[a], ARGV[a + 2]
  if sale_of_voucher[voucher_id] == nil then
    sale_of_voucher[voucher_id] = read_sale(KEYS[next_voucher_key], KEYS[next_voucher_key + 1])
    next_voucher_key = next_voucher_key + 2
  end
  if ARGV[a + 4] ~= '' then
    idem_key_of[i] = KEYS[next_idem_key]
    next_idem_key = next_idem_key + 1
  end
  local sale = sale_of_voucher[voucher_id]
  if sale and sale.masks[user] == nil then
    sale.masks[user] = false
    sale.users[#sale.users + 1] = user
  end
end
for _, sale in ipairs(sale_list) do
  local masks = redis.call('HMGET', sale.buyers, unpack(sale.users))
  for j, user in ipairs(sale.users) do
    sale.masks[user] = tonumber(masks[j] or '0')
  end
end

-- What the second pass writes, built as the orders are accepted.
local idem_orders = {}   -- Idempotency-Key -> the order it was accepted as in this batch
local queued = {}        -- HSET arguments of QUEUED
local by_user = {}       -- ZADD arguments of QUEUED_BY_USER
local streamed = {}      -- "orderId:userId:voucherId:slot" of the orders the worker writes
local held_orders = {}   -- ZADD arguments of IN_FLIGHT: the orders whose caller writes MySQL
local keyed = {}         -- the accepted orders with an Idempotency-Key: {key, orderId, TTL}
local accepted_count = 0
local accepted_at = string.format('%d', now)

-- Order i's rules.
local function decide_order(i)
  local a = arg_of(i)
  local user, order = ARGV[a], ARGV[a + 1]
  local idem_key = idem_key_of[i]
  if idem_key then
    local earlier = idem_orders[idem_key] or redis.call('GET', idem_key)
    if earlier then
      return 8, earlier
    end
  end
  local sale = sale_of_voucher[ARGV[a + 2]]
  if not sale then
    return 5, 0
  end
  if now < sale.begin then
    return 1, 0
  end
  if now >= sale['end'] then
    return 2, 0
  end
  if now < sale.frozen_until then
    return 6, 0
  end
  if sale.suspended then
    return 7, 0
  end
  if sale.stock <= 0 then
    return 3, 0
  end
  local held = sale.masks[user]
  -- Every held slot counts, those above a lowered limit too: a user at or over the limit buys no more.
  if slots_held(held, sale.limit) >= sale.limit then
    return 4, sale.limit
  end
  -- The lowest free slot: fewer than `limit` are held, so it is at most `limit`.
  local slot, slot_bit = 1, 1
  while bit.band(held, slot_bit) ~= 0 do
    slot, slot_bit = slot + 1, slot_bit * 2
  end
  sale.stock = sale.stock - 1
  sale.taken = sale.taken + 1
  sale.masks[user] = held + slot_bit
  sale.changed[user] = true
  local voucher_id = ARGV[a + 2]
  accepted_count = accepted_count + 1
  local at = 2 * accepted_count
  queued[at - 1] = order
  queued[at] = user .. ':' .. voucher_id .. ':' .. slot .. ':' .. accepted_at
  by_user[at - 1] = 0
  by_user[at] = user .. ':' .. order
  if ARGV[a + 3] == 'hold' then
    held_orders[#held_orders + 1] = now
    held_orders[#held_orders + 1] = order
  else
    streamed[#streamed + 1] = order .. ':' .. user .. ':' .. voucher_id .. ':' .. slot
  end
  if idem_key then
    idem_orders[idem_key] = order
    keyed[#keyed + 1] = {idem_key, order, ARGV[a + 4]}
  end
  return 0, slot
end

local replies = {now}
for i = 0, ORDERS - 1 do
  local code, value = decide_order(i)
  replies[2 * i + 2] = code
  replies[2 * i + 3] = value
end

-- Second pass, writes: the units first, then the buyers' slots, then the orders.
for _, sale in ipairs(sale_list) do
  if sale.taken > 0 then
    redis.call('HINCRBY', sale.key, 'stock', -sale.taken)
    local masks = {}
    for user in pairs(sale.changed) do
      masks[#masks + 1] = user
      masks[#masks + 1] = sale.masks[user]
    end
    call_in_chunks('HSET', sale.buyers, masks)
    -- The same deadline for every order of the voucher.
    redis.call('PEXPIREAT', sale.buyers, sale['end'] + tonumber(KEEP_AFTER_END))
  end
end
if #queued > 0 then
  call_in_chunks('HSET', QUEUED, queued)
  call_in_chunks('ZADD', QUEUED_BY_USER, by_user)
end
for _, key in ipairs(keyed) do
  redis.call('SET', key[1], key[2], 'PX', key[3])
end
-- The sync strategy's caller writes MySQL and then settles (hand-off.lua streams an order it does not).
if #held_orders > 0 then
  call_in_chunks('ZADD', IN_FLIGHT, held_orders)
end
-- One entry for the batch's streamed orders (order-stream.ts parseEntry reads it).
if #streamed > 0 then
  redis.call('XADD', STREAM, '*', 'acceptedMs', accepted_at, 'orders', table.concat(streamed, ','))
end
return replies
