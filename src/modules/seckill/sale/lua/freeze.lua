--[[
  Freezes a voucher's sale for a reconciliation repair: reserve.lua answers "frozen" until
  frozen_until (Redis time) or until repair.lua / thaw.lua lift it, so a repair that dies cannot
  stop a sale. A voucher missing from Redis is created frozen (stock 0, the window from MySQL),
  so an order cannot publish it from MySQL's stock meanwhile (publish-voucher.lua leaves an
  existing hash alone). An administrator's pause is another thing: `suspended` (control.lua).

  KEYS[1]  {seckill:N}:voucher:{voucherId}
  ARGV     token (who froze it), freeze length (ms), begin, end (epoch ms), keep after the end (ms)
  Returns 1 when the voucher was created by the freeze, 0 when it existed.
]]
--- @include "server-time"
local now = server_time_ms()
local created = 0
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'stock', 0, 'begin', ARGV[3], 'end', ARGV[4], 'frozen_created', 1)
  redis.call('PEXPIREAT', KEYS[1], tonumber(ARGV[4]) + tonumber(ARGV[5]))
  created = 1
end
redis.call('HSET', KEYS[1], 'frozen_until', now + tonumber(ARGV[2]), 'frozen_by', ARGV[1])
return created
