--[[
  Schedules orders just written to MySQL for cancellation at the end of their payment window,
  on Redis' clock (the clock claim-unpaid.lua reads), so that instances' clocks never matter.
  NX: an order scheduled before keeps its due time (a redelivered write changes nothing).

  KEYS[1]  {seckill:N}:unpaid-due   sorted set "orderId:userId:voucherId:slot" -> due time (ms)
  ARGV     payment window (ms), then one member per order
  Returns the number of orders newly scheduled.
]]
--- @include "server-time"
local due = server_time_ms() + tonumber(ARGV[1])
local added = 0
for i = 2, #ARGV do
  added = added + redis.call('ZADD', KEYS[1], 'NX', due, ARGV[i])
end
return added
