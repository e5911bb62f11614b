-- Fixed-window counters checked together, all or nothing (src/lib/rate-limit/rate-limiter.ts).
-- KEYS[i]: the counter of one (rule, subject); ARGV[2i-1]: its limit, ARGV[2i]: its window in ms.
-- Returns {0, 0} when every counter had room (each was incremented; a new one got the window as
-- its TTL), else {i, ms until counter i expires} with every increment undone: a refused event
-- charges no rule, so a client that keeps hammering never extends its own ban.
-- Increment first and undo on refusal: the usual (allowed) case costs one INCR per counter
-- (+ PEXPIRE when new) and no reads.
local refused = 0
for i = 1, #KEYS do
  local count = redis.call('INCR', KEYS[i])
  if count == 1 then redis.call('PEXPIRE', KEYS[i], ARGV[2 * i]) end
  if count > tonumber(ARGV[2 * i - 1]) then
    refused = i
    break
  end
end
if refused == 0 then return { 0, 0 } end
for i = 1, refused do redis.call('DECR', KEYS[i]) end
local ttl = redis.call('PTTL', KEYS[refused])
if ttl < 0 then
  -- A counter without a TTL would refuse forever: give it its window back.
  ttl = tonumber(ARGV[2 * refused])
  redis.call('PEXPIRE', KEYS[refused], ttl)
end
return { refused, ttl }
