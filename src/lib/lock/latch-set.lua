--[[
  Sets the count of a latch that is open (trySetCount): only when there is no count yet.

  KEYS[1]  latch:{name}  string, the count
  ARGV[1]  count (>= 1)

  Returns 1 when set, 0 when the latch is still counting down.
]]
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
