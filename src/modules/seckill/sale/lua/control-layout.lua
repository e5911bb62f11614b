--[[
  Moves the window in the layout record of a voucher sold from B > 1 buckets (bucket-controls.ts,
  after the buckets themselves took it): the record keeps begin and end for the instances that
  read the layout (a sale begun has a fixed B), and expires a week after the end, as the buckets
  do. Absolute: a repeat changes nothing more. Nothing written where the record is missing (the
  next order publishes the sale from MySQL, with the new window).

  KEYS[1]  {seckill:N}:voucher:{voucherId}  hash {buckets, begin, end}
  ARGV     begin, end (epoch ms), keep after the end (ms)
  Returns 1 when written, 0 when the hash holds no layout.
]]
if redis.call('HEXISTS', KEYS[1], 'buckets') == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'begin', ARGV[1], 'end', ARGV[2])
redis.call('PEXPIREAT', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[3]))
return 1
