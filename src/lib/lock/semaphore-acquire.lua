--[[
  Takes permits of a semaphore if enough are available (Redisson's RSemaphore.tryAcquire).

  KEYS[1]  semaphore:{name}  string, available permits (no key: none)
  ARGV[1]  permits wanted (>= 1)

  Returns {1, permits left} when taken, {0, permits available} when too few are available.
]]
local available = tonumber(redis.call('GET', KEYS[1]) or '0')
local wanted = tonumber(ARGV[1])
if available >= wanted then
  return {1, redis.call('DECRBY', KEYS[1], wanted)}
end
return {0, available}
