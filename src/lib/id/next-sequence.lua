--[[
  Takes the next number of a daily ID sequence, refusing to go past the 32-bit limit.

  KEYS[1]  icr:{prefix}:{yyyyMMdd}  string counter, kept forever (it is the day's count)
  ARGV[1]  the largest sequence number allowed (2^32 - 1)

  Returns the new sequence number (1 for the first ID of the day),
          or -1 when the day's sequence is exhausted (the counter is then left untouched,
          so it still reads as the exact number of IDs issued that day).
]]
local issued = tonumber(redis.call('GET', KEYS[1]) or '0')
if issued >= tonumber(ARGV[1]) then
  return -1
end
return redis.call('INCR', KEYS[1])
