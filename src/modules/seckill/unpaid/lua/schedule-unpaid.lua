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
-- One ZADD per batch (in chunks: unpack's limit is the Lua C stack, about 8,000 values).
local CHUNK = 1000
local added = 0
local args = {}
for i = 2, #ARGV, 2 do
  args[#args + 1] = (tonumber(ARGV[i]) or now) + window
  args[#args + 1] = ARGV[i + 1]
  if #args == 2 * CHUNK or i + 2 > #ARGV then
    added = added + redis.call('ZADD', KEYS[1], 'NX', unpack(args))
    args = {}
  end
end
return added
