--[[
  Lifts a reconciliation pause without changing anything else, if it is still the caller's.

  KEYS[1]  {seckill:N}:voucher:{voucherId}
  ARGV[1]  token given to pause.lua
  Returns 1 when lifted, 0 when the pause was not the caller's (or gone).
]]
if redis.call('HGET', KEYS[1], 'paused_by') ~= ARGV[1] then
  return 0
end
redis.call('HDEL', KEYS[1], 'paused_until', 'paused_by')
return 1
