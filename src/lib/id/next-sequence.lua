--[[
  Reserves the next numbers of a daily ID sequence, refusing to go past the 32-bit limit.

  KEYS[1]  icr:{prefix}:{yyyyMMdd}  string counter, kept forever (it is the day's count)
  ARGV[1]  the largest sequence number allowed (2^32 - 1)
  ARGV[2]  how many numbers to reserve (1, or a block the generator hands out from memory)

  Returns {first, last}: the reserved numbers (1 is the first of the day), fewer than asked only
  when the day's sequence runs out; or {-1, -1} when it is exhausted (the counter is then left
  untouched, so it still reads as the exact number of IDs reserved that day).
]]
local issued = tonumber(redis.call('GET', KEYS[1]) or '0')
local max = tonumber(ARGV[1])
if issued >= max then
  return {-1, -1}
end
local count = math.min(tonumber(ARGV[2]), max - issued)
local last = redis.call('INCRBY', KEYS[1], count)
return {last - count + 1, last}
