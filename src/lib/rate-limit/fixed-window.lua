-- Fixed-window counters checked together, all or nothing (src/lib/rate-limit/rate-limiter.ts).
-- KEYS[i]: the counter of one (rule, subject); ARGV[2i-1]: its limit, ARGV[2i]: its window in ms.
-- Returns {0, 0} when every counter had room (each was incremented; a new one gets the window as
-- its TTL), else {i, ms until counter i expires} and nothing is incremented: a refused event
-- charges no rule, so a client that keeps hammering never extends its own ban.
for i = 1, #KEYS do
  local count = tonumber(redis.call('GET', KEYS[i]) or '0')
  if count >= tonumber(ARGV[2 * i - 1]) then
    local ttl = redis.call('PTTL', KEYS[i])
    if ttl < 0 then
      -- A counter without a TTL would refuse forever: give it its window back.
      ttl = tonumber(ARGV[2 * i])
      redis.call('PEXPIRE', KEYS[i], ttl)
    end
    return { i, ttl }
  end
end
for i = 1, #KEYS do
  if redis.call('INCR', KEYS[i]) == 1 then
    redis.call('PEXPIRE', KEYS[i], ARGV[2 * i])
  end
end
return { 0, 0 }
