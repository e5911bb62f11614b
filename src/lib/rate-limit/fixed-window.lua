--[[
  Fixed-window counters for a batch of events (src/lib/rate-limit/rate-limiter.ts), decided in
  order, each all or nothing, exactly as one call per event would decide them.

  KEYS     the counters of every event's checks, event after event: `rl:{rule}:{subject}`
  ARGV[1]  the number of events; then, for each event, its number of checks n and, per check:
             limit, window in ms, events the process already let through on its own (local burst)
             and charges now, the cost of this event (1 for a request; e.g. its bytes for a byte
             quota)

  Returns two numbers per event: {0, 0} when every counter had room for it (each was incremented;
  a new one got the window as its TTL), else {i, ms until counter i expires} with the event's
  increments undone (the earlier local events stay charged: they happened): a refused event
  charges no rule, so a client that keeps hammering never extends its own ban.
  Increment first and undo on refusal: the usual (allowed) case costs one INCRBY per counter
  (+ PEXPIRE when new) and no reads.
]]

-- Decides one event whose counters are KEYS[key .. key + n - 1] and whose numbers start at ARGV[arg].
local function decide(key, arg, n)
  local refused = 0
  for i = 1, n do
    local at = arg + 4 * (i - 1)
    local charge = tonumber(ARGV[at + 2]) + tonumber(ARGV[at + 3])
    local count = redis.call('INCRBY', KEYS[key + i - 1], charge)
    if count == charge then redis.call('PEXPIRE', KEYS[key + i - 1], ARGV[at + 1]) end
    if count > tonumber(ARGV[at]) then
      refused = i
      break
    end
  end
  if refused == 0 then return 0, 0 end
  for i = 1, refused do redis.call('DECRBY', KEYS[key + i - 1], ARGV[arg + 4 * (i - 1) + 3]) end
  local counter = KEYS[key + refused - 1]
  local ttl = redis.call('PTTL', counter)
  if ttl < 0 then
    -- A counter without a TTL would refuse forever: give it its window back.
    ttl = tonumber(ARGV[arg + 4 * (refused - 1) + 1])
    redis.call('PEXPIRE', counter, ttl)
  end
  return refused, ttl
end

local verdicts = {}
local key, arg = 1, 2
for _ = 1, tonumber(ARGV[1]) do
  local n = tonumber(ARGV[arg])
  local refused, ttl = decide(key, arg + 1, n)
  verdicts[#verdicts + 1] = refused
  verdicts[#verdicts + 1] = ttl
  key = key + n
  arg = arg + 1 + 4 * n
end
return verdicts
