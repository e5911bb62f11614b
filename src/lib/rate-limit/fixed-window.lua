-- Fixed-window counters checked together, all or nothing (src/lib/rate-limit/rate-limiter.ts).
-- KEYS[i]: the counter of one (rule, subject). ARGV[3i-2]: its limit, ARGV[3i-1]: its window in
-- ms, ARGV[3i]: events the process already let through on its own (local burst) and charges now.
-- Returns {0, 0} when every counter had room for this event (each was incremented; a new one got
-- the window as its TTL), else {i, ms until counter i expires} with this event's increments undone
-- (the earlier local events stay charged: they happened): a refused event charges no rule, so a
-- client that keeps hammering never extends its own ban.
-- Increment first and undo on refusal: the usual (allowed) case costs one INCRBY per counter
-- (+ PEXPIRE when new) and no reads.
local refused = 0
for i = 1, #KEYS do
  local earlier = tonumber(ARGV[3 * i])
  local count = redis.call('INCRBY', KEYS[i], earlier + 1)
  if count == earlier + 1 then redis.call('PEXPIRE', KEYS[i], ARGV[3 * i - 1]) end
  if count > tonumber(ARGV[3 * i - 2]) then
    refused = i
    break
  end
end
if refused == 0 then return { 0, 0 } end
for i = 1, refused do redis.call('DECR', KEYS[i]) end
local ttl = redis.call('PTTL', KEYS[refused])
if ttl < 0 then
  -- A counter without a TTL would refuse forever: give it its window back.
  ttl = tonumber(ARGV[3 * refused - 1])
  redis.call('PEXPIRE', KEYS[refused], ttl)
end
return { refused, ttl }
