-- Fixed-window counters checked together, all or nothing (src/lib/rate-limit/rate-limiter.ts).
-- KEYS[i]: the counter of one (rule, subject). ARGV[4i-3]: its limit, ARGV[4i-2]: its window in
-- ms, ARGV[4i-1]: events the process already let through on its own (local burst) and charges now,
-- ARGV[4i]: the cost of this event (1 for a request; e.g. its bytes for a byte quota).
-- Returns {0, 0} when every counter had room for this event (each was incremented; a new one got
-- the window as its TTL), else {i, ms until counter i expires} with this event's increments undone
-- (the earlier local events stay charged: they happened): a refused event charges no rule, so a
-- client that keeps hammering never extends its own ban.
-- Increment first and undo on refusal: the usual (allowed) case costs one INCRBY per counter
-- (+ PEXPIRE when new) and no reads.
local refused = 0
for i = 1, #KEYS do
  local earlier = tonumber(ARGV[4 * i - 1])
  local cost = tonumber(ARGV[4 * i])
  local count = redis.call('INCRBY', KEYS[i], earlier + cost)
  if count == earlier + cost then redis.call('PEXPIRE', KEYS[i], ARGV[4 * i - 2]) end
  if count > tonumber(ARGV[4 * i - 3]) then
    refused = i
    break
  end
end
if refused == 0 then return { 0, 0 } end
for i = 1, refused do redis.call('DECRBY', KEYS[i], ARGV[4 * i]) end
local ttl = redis.call('PTTL', KEYS[refused])
if ttl < 0 then
  -- A counter without a TTL would refuse forever: give it its window back.
  ttl = tonumber(ARGV[4 * refused - 2])
  redis.call('PEXPIRE', KEYS[refused], ttl)
end
return { refused, ttl }
