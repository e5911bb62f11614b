--[[
  Takes one of a user's seats for an open event stream, if one is free. Each seat has a lease
  (server time) that its holder renews; a dead instance's seats come back when theirs end. The
  key expires with the last lease.

  KEYS[1]  order-streams:{userId}   sorted set, stream id -> end of lease (ms)
  ARGV     stream id, seats allowed (0: renew this id's lease only), lease in ms
  Returns 1 taken (or renewed), 0 every seat is taken (or the lease had ended).
]]
--- @include "server-time"
local now = server_time_ms()
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
