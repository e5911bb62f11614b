--[[
  Puts a blog in one follower's inbox and trims the inbox to its bounded length
  (hmdp "推送到粉丝收件箱", push model).

  KEYS[1]  feed:{userId}  zset, member = blog id, score = publish time (ms)
  ARGV[1]  score
  ARGV[2]  blog id
  ARGV[3]  longest inbox: entries beyond it, oldest first, are removed

  Returns the number of entries trimmed.
]]
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
if excess > 0 then
  return redis.call('ZREMRANGEBYRANK', KEYS[1], 0, excess - 1)
end
return 0
