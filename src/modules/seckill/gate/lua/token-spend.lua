--[[
  Spends a purchase token on an order: a token buys one order. A retry of the same order (the
  same Idempotency-Key, e.g. after an "outcome unknown" answer) passes again, as reserve.lua
  answers it with the key's one order; anything else with a spent token is refused.

  KEYS[1]  seckill:purchase-token:{nonce}   hash {key: the Idempotency-Key or '', attempts}
  ARGV     Idempotency-Key ('' without one), ms to keep the mark (past the token's expiry)
  Returns 1 spent on this order, 0 spent already on another.
]]
local key = redis.call('HGET', KEYS[1], 'key')
if key and (ARGV[1] == '' or key ~= ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[1], 'key', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
