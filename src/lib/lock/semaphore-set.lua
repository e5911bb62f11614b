--[[
  Sets the permits of a semaphore: only if never set (trySetPermits), or always (setPermits).

  KEYS[1]  semaphore:{name}  string, available permits
  ARGV[1]  permits
  ARGV[2]  channel (the caller adds the key prefix)
  ARGV[3]  '1': set even if already set

  Returns 1 when set, 0 when it was already set (and ARGV[3] is not '1').
]]
if ARGV[3] ~= '1' and redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
if tonumber(ARGV[1]) > 0 then
  redis.call('PUBLISH', ARGV[2], ARGV[1])
end
return 1
