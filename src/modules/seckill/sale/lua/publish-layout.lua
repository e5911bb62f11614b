--[[
  The layout record of a voucher sold from B > 1 buckets (issue 30): its shard's voucher hash holds
  `buckets` and the window, and no `stock`, so an order routed as if B were 1 finds no sale there
  (reserve.lua: unknown voucher) and its instance reads the layout again. Refused over a hash that
  still has stock (a B = 1 sale: unpublish it first).

  KEYS[1]  {seckill:N}:voucher:{voucherId}  hash {buckets, begin, end}
  ARGV     buckets, begin, end (epoch ms), keep after the end (ms)
  Returns 1 when written, 0 when the hash holds a B = 1 sale.
]]
if redis.call('HEXISTS', KEYS[1], 'stock') == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'buckets', ARGV[1], 'begin', ARGV[2], 'end', ARGV[3])
redis.call('PEXPIREAT', KEYS[1], tonumber(ARGV[3]) + tonumber(ARGV[4]))
return 1
