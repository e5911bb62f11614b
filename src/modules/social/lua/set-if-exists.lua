--[[
  Adds a member to, or removes it from, a follows set, but only if the set exists: a missing set
  is rebuilt from tb_follow on its next read, and creating it here would leave it partial.

  KEYS[1]  follows:{userId}
  ARGV[1]  'add' or 'remove'
  ARGV[2]  the followee's id

  Returns 1 if the set exists (and was updated), 0 if it does not.
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
if ARGV[1] == 'add' then
  redis.call('SADD', KEYS[1], ARGV[2])
else
  redis.call('SREM', KEYS[1], ARGV[2])
end
return 1
