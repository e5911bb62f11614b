--[[
  Rewrites one bucket of a frozen bucketed sale from MySQL's record (admin/reconcile-buckets.ts),
  only if the freeze is still the caller's and has not lapsed: the buyer slots of the users homing
  to it (as repair.lua, cancelled orders decided by their release markers), and its stock moved by
  a delta the caller worked out over every bucket. The stock is moved, not set: units come and go
  by releases while the caller works, and a release moves a bucket's stock and its marker together,
  so a delta read against both stays right. `pending` is set to 0 (the caller ended every transfer
  of the voucher first, and a frozen bucket gives none: take.lua), the version bumped (units may
  have come back: the sold-out rule must look again). The freeze stays: the caller lifts it from
  every bucket once all are written (thaw.lua).

  KEYS[1]     {lane}:voucher:{voucherId}:b{b}of{B}
  KEYS[2]     {lane}:buyer-slots:{voucherId}:b{b}of{B}
  KEYS[3..]   {lane}:released:{orderId} of each cancelled, not yet released order of its users
  ARGV        token, stock delta, begin, end (epoch ms), keep after the end (ms), limit per user
              (MySQL), holder count H, H pairs (user id, slot bitmask of its live orders), then a
              pair (user id, slot) for each KEYS[3..] order
  Returns the bucket's stock written, or -1 when the freeze is gone (nothing written).
]]
--- @include "server-time"
--- @include "rewrite-buyers"
local now = server_time_ms()
local freeze = redis.call('HMGET', KEYS[1], 'frozen_by', 'frozen_until', 'stock')
if freeze[1] ~= ARGV[1] or not freeze[2] or now >= tonumber(freeze[2]) then
  return -1
end
local expire_at = tonumber(ARGV[4]) + tonumber(ARGV[5])
rewrite_buyers(KEYS[2], 7, 3, expire_at)
local stock = tonumber(freeze[3] or '0') + tonumber(ARGV[2])
if stock < 0 then
  stock = 0
end
redis.call('HSET', KEYS[1], 'stock', stock, 'pending', 0, 'begin', ARGV[3], 'end', ARGV[4], 'limit', ARGV[6])
redis.call('HINCRBY', KEYS[1], 'restocks', 1)
-- Written now: a repair that gives up later must not delete it as the freeze's placeholder (thaw.lua).
redis.call('HDEL', KEYS[1], 'frozen_created', 'total')
redis.call('PEXPIREAT', KEYS[1], expire_at)
return stock
