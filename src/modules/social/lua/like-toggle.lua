--[[
  Toggles one user's like of a blog atomically (hmdp "点赞" on a sorted set).

  KEYS[1]  blog:liked:{blogId}  zset, member = user id, score = time of the like (ms)
  ARGV[1]  the user id
  ARGV[2]  now in ms

  Returns 1 if the user now likes the blog (added), -1 if the like was removed. Check and change
  in one script: concurrent toggles of one user never both add or both remove.
]]
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return -1
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
