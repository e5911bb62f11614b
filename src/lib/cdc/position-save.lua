-- Fenced save of a change follower's binlog position: refused when an earlier save carried a
-- higher fencing token (a newer holder of the follower's lease), so a paused former leader,
-- resumed, cannot move the position back.
-- KEYS[1] position hash {file, position, token, savedAt}
-- ARGV[1] binlog file
-- ARGV[2] position in that file (after the last applied transaction)
-- ARGV[3] fencing token of the saver's lease (decimal; below 2^53)
-- ARGV[4] time of the save, epoch ms
-- Returns 1 saved, 0 refused (a higher token saved before).
local last = tonumber(redis.call('HGET', KEYS[1], 'token') or '0')
if tonumber(ARGV[3]) < last then return 0 end
redis.call('HSET', KEYS[1], 'file', ARGV[1], 'position', ARGV[2], 'token', ARGV[3], 'savedAt', ARGV[4])
return 1
