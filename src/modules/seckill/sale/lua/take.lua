--[[
  A refill's first step, on the donor bucket (transfers.ts): takes up to half its stock (at most
  ARGV[2] units, at least 1 while it has any) and records them as pending in its lane's transfers
  hash under the transfer id, in one step. Units taken are counted in the donor's `pending` until
  transfer-end.lua settles the transfer (given) or returns them (not given): a unit is always in
  some bucket's stock or pending, never in neither, so a crash after this leaves it late, not lost.
  A repeated call with the same id takes nothing more and answers what the first took. A frozen
  bucket gives nothing: a reconciliation repair is counting the voucher's units (freeze.lua).

  KEYS[1]  {lane}:voucher:{voucherId}:b{b}of{B}  the donor bucket's hash {stock, pending, restocks, frozen_until, ...}
  KEYS[2]  {lane}:transfers                      hash transferId -> "voucherId:from:of:to:units:takenMs"
  ARGV     transferId, most units, "voucherId:from:of:to" (the record's head)
  Returns the units taken (0: the bucket had none).
]]
--- @include "server-time"
local recorded = redis.call('HGET', KEYS[2], ARGV[1])
if recorded then
  return tonumber(string.match(recorded, '^[^:]*:[^:]*:[^:]*:[^:]*:(%d+)'))
end
local fields = redis.call('HMGET', KEYS[1], 'stock', 'frozen_until')
local stock = tonumber(fields[1] or '0')
if stock <= 0 or server_time_ms() < tonumber(fields[2] or '0') then
  return 0
end
local units = math.min(math.ceil(stock / 2), tonumber(ARGV[2]))
redis.call('HINCRBY', KEYS[1], 'stock', -units)
redis.call('HINCRBY', KEYS[1], 'pending', units)
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3] .. ':' .. units .. ':' .. string.format('%d', server_time_ms()))
return units
