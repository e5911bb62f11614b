--[[
  A refill's second step, on the recipient bucket (transfers.ts): `give` adds the transfer's
  units to its stock, or `refuse` (the sweep, for a transfer left pending too long) makes sure
  they never will be. Either way the outcome is written once, in the transfer's marker, and a
  later call of either mode only reads it: the units arrive at most once, and the donor returns
  them only when they never arrived.

  Giving bumps `restocks`, the bucket's version: units came in. The sold-out decision across
  buckets (sold-out-memory.ts) relies on every step that adds units to a bucket bumping it.

  KEYS[1]  {lane}:voucher:{voucherId}:b{b}of{B}  the recipient bucket's hash
  KEYS[2]  {lane}:transfer-in:{transferId}       string "given" or "returned"
  ARGV     mode ("give" or "refuse"), units, marker TTL (s)
  Returns 1 when the units are in the recipient (now or before), 0 when they are not and never will be.
]]
local earlier = redis.call('GET', KEYS[2])
if earlier then
  return earlier == 'given' and 1 or 0
end
-- A bucket gone (expired after its sale) takes nothing: its donor keeps the units.
if ARGV[1] == 'give' and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('SET', KEYS[2], 'given', 'EX', ARGV[3])
  redis.call('HINCRBY', KEYS[1], 'stock', ARGV[2])
  redis.call('HINCRBY', KEYS[1], 'restocks', 1)
  return 1
end
redis.call('SET', KEYS[2], 'returned', 'EX', ARGV[3])
return 0
