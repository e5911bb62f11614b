--[[
  Pauses a voucher's sale for a reconciliation repair: reserve.lua answers "paused" until
  paused_until (Redis time) or until repair.lua / unpause.lua clear it. A voucher missing from
  Redis is created paused (stock 0, the window from MySQL), so an order cannot publish it from
  MySQL's stock meanwhile (publish-voucher.lua leaves an existing hash alone).

  KEYS[1]  {seckill:N}:voucher:{voucherId}
  ARGV     token (who paused), pause length (ms), begin, end (epoch ms), keep after the end (ms)
  Returns 1 when the voucher was created by the pause, 0 when it existed.
]]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local created = 0
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'stock', 0, 'begin', ARGV[3], 'end', ARGV[4], 'paused_created', 1)
  redis.call('PEXPIREAT', KEYS[1], tonumber(ARGV[4]) + tonumber(ARGV[5]))
  created = 1
end
redis.call('HSET', KEYS[1], 'paused_until', now + tonumber(ARGV[2]), 'paused_by', ARGV[1])
return created
