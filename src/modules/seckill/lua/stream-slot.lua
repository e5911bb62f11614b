--[[
  Takes one of a user's slots for an open event stream, if one is free. Each slot has a lease
  (server time) that its holder renews; a dead instance's slots come back when theirs end. The
  key expires with the last lease.

  KEYS[1]  order-streams:{userId}   sorted set, stream id -> end of lease (ms)
  ARGV     stream id, slots allowed (0: renew this id's lease only), lease in ms
  Returns 1 taken (or renewed), 0 every slot is in use (or the lease had ended).
]]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if ARGV[2] == '0' then
  local renewed = redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[3]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return renewed
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
