--[[
  Spends purchase tokens on orders, a batch in arrival order, each as if alone: a token buys one
  order. A retry of the same order (the same Idempotency-Key, e.g. after an "outcome unknown"
  answer) passes again, as reserve.lua answers it with the key's one order; anything else with a
  spent token is refused. A token spent twice in one batch: the second sees the first.

  KEYS[i]      seckill:purchase-token:{nonce}   hash {key: the Idempotency-Key or '', attempts}
  ARGV[2i-1]   spend i's Idempotency-Key ('' without one)
  ARGV[2i]     ms to keep its mark (past the token's expiry)
  Returns per spend 1 spent on this order, 0 spent already on another.
]]
local function spend(token, idempotency_key, keep_ms)
  local key = redis.call('HGET', token, 'key')
  if key and (idempotency_key == '' or key ~= idempotency_key) then
    return 0
  end
  redis.call('HSET', token, 'key', idempotency_key)
  redis.call('HINCRBY', token, 'attempts', 1)
  redis.call('PEXPIRE', token, keep_ms)
  return 1
end

local spent = {}
for i = 1, #KEYS do
  spent[i] = spend(KEYS[i], ARGV[2 * i - 1], ARGV[2 * i])
end
return spent
