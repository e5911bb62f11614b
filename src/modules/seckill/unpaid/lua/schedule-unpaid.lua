--[[
  Schedules orders just written to MySQL for cancellation at the end of their payment window,
  counted from each order's acceptance (reserve.lua's Redis time; now, on Redis' clock, for an
  order that lacks it), so that neither instances' clocks nor a late write move the due time.
  NX: an order scheduled before keeps its due time (a redelivered write changes nothing).

  KEYS[1]  {seckill:N}:unpaid-due   sorted set "orderId:userId:voucherId:slot" -> due time (ms)
  ARGV     payment window (ms), then per order: acceptance time (ms, or ""), member
  Returns the number of orders newly scheduled.
]]
--- @include "server-time"
local window = tonumber(ARGV[1])
local now = server_time_ms()
local added = 0
for i = 2, #ARGV, 2 do
  local accepted = tonumber(ARGV[i]) or now
  added = added + redis.call('ZADD', KEYS[1], 'NX', accepted + window, ARGV[i + 1])
end
return added
