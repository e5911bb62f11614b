--[[
  Takes permits of a permit-expirable semaphore, each with an id and a lease
  (Redisson's RPermitExpirableSemaphore.tryAcquire). reclaim comes from includes/permit-reclaim.lua.

  KEYS[1]  psemaphore:{name}         string, permits available
  KEYS[2]  psemaphore:{name}:leases  sorted set, permit id -> end of lease (ms, server time)
  ARGV[1]  lease in ms
  ARGV[2...]  one new id per permit wanted

  Returns {1, permits left} when taken,
          {0, ms until the next lease ends (-1: no lease)} when too few are available.
]]
--- @include "server-time"
--- @include "includes/permit-reclaim"

local now = server_time_ms()
reclaim(KEYS[1], KEYS[2], now)
local wanted = #ARGV - 1
local available = tonumber(redis.call('GET', KEYS[1]) or '0')
if available >= wanted then
  redis.call('DECRBY', KEYS[1], wanted)
  local lease_end = now + tonumber(ARGV[1])
  for i = 2, #ARGV do
    redis.call('ZADD', KEYS[2], lease_end, ARGV[i])
  end
  return {1, available - wanted}
end
local next_end = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')[2]
if next_end then
  return {0, math.max(0, tonumber(next_end) - now)}
end
return {0, -1}
