--[[
  A refill's last step, on the donor bucket (transfers.ts): drops the transfer's record and its
  units from `pending`; `return` (the recipient refused them: transfer-in.lua answered 0) also
  gives them back to the donor's stock and bumps its version (units came back). Once per
  transfer: a repeated call finds no record and does nothing.

  KEYS[1]  {lane}:voucher:{voucherId}:b{b}of{B}  the donor bucket's hash
  KEYS[2]  {lane}:transfers                      hash transferId -> "voucherId:from:of:to:units:takenMs"
  ARGV     transferId, mode ("settle" or "return")
  Returns the units settled or returned (0: nothing recorded under that id).
]]
local recorded = redis.call('HGET', KEYS[2], ARGV[1])
if not recorded then
  return 0
end
local units = tonumber(string.match(recorded, '^[^:]*:[^:]*:[^:]*:[^:]*:(%d+)'))
redis.call('HDEL', KEYS[2], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'pending', -units)
  if ARGV[2] == 'return' then
    redis.call('HINCRBY', KEYS[1], 'stock', units)
    redis.call('HINCRBY', KEYS[1], 'restocks', 1)
  end
end
return units
