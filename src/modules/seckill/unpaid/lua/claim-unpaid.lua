--[[
  Claims the orders whose payment window has ended, for one instance: each due member is pushed
  to now + lease, so no other instance sees it due while this one cancels it. The claimer
  removes it when done (ZREM); if the claimer dies or fails, the member is due again once the
  lease ends and another instance claims it. Cancelling twice is harmless anyway (MySQL's
  conditional update and the release marker make it a no-op); the lease only saves the work.

  KEYS[1]  {seckill:N}:unpaid-due   sorted set "orderId:userId:voucherId:slot" -> due time (ms)
  ARGV     most members to claim, lease (ms)
  Returns a flat array: member, due time (ms), member, due time, ... (oldest due first).
]]
--- @include "server-time"
local now = server_time_ms()
local due = redis.call('ZRANGE', KEYS[1], '-inf', now, 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[1]), 'WITHSCORES')
local leased = now + tonumber(ARGV[2])
for i = 1, #due, 2 do
  redis.call('ZADD', KEYS[1], 'XX', leased, due[i])
end
return due
