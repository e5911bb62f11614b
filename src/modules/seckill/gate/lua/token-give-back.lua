--[[
  Gives back a token whose order the sale refused, unless another attempt with it (a retry of
  the same Idempotency-Key) is or was under way: that one may have been accepted.

  KEYS[1]  seckill:purchase-token:{nonce}   hash {key, attempts}
  ARGV     (none)
  Returns 1 given back, 0 kept spent.
]]
if redis.call('HGET', KEYS[1], 'attempts') == '1' then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
