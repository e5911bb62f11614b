-- Leases admission tokens of one subject's current second (src/lib/rate-limit/admission-limiter.ts).
-- KEYS[1]: hash {s = second (Redis clock), n = tokens leased in it}; ARGV[1]: tokens per second,
-- ARGV[2]: tokens wanted. Returns {tokens granted (0..wanted), ms left in the second}.
-- Redis' clock decides the second, so instances with skewed clocks still share one window.
--- @include "server-time"

local now = server_time_ms()
local second = math.floor(now / 1000)
local msLeft = 1000 - now % 1000
local state = redis.call('HMGET', KEYS[1], 's', 'n')
local leased = 0
if tonumber(state[1]) == second then leased = tonumber(state[2]) end
local granted = math.max(0, math.min(tonumber(ARGV[2]), tonumber(ARGV[1]) - leased))
if granted > 0 or leased == 0 then
  redis.call('HSET', KEYS[1], 's', second, 'n', leased + granted)
  redis.call('PEXPIRE', KEYS[1], 2000)
end
return { granted, msLeft }
