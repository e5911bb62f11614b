--[[
  Lifts a reconciliation freeze without changing anything else, if it is still the caller's. A
  voucher the freeze had created (it was missing) is deleted again: missing, the next order
  publishes it from MySQL; left with the placeholder stock 0, it would answer "sold out".

  KEYS[1]  {seckill:N}:voucher:{voucherId}
  ARGV[1]  token given to freeze.lua
  Returns 1 when lifted, 0 when the freeze was not the caller's (or gone).
]]
if redis.call('HGET', KEYS[1], 'frozen_by') ~= ARGV[1] then
  return 0
end
if redis.call('HGET', KEYS[1], 'frozen_created') then
  redis.call('DEL', KEYS[1])
  return 1
end
redis.call('HDEL', KEYS[1], 'frozen_until', 'frozen_by')
return 1
