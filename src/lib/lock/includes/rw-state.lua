--[[
  Included by the read-write lock scripts (`--- @include "includes/rw-state"`).

  KEYS[1] rwlock:{name} is a hash: mode ('read' | 'write'), writer (the owner holding the write
  lock), and one hold count per owner and kind, '<owner>:r' and '<owner>:w'. KEYS[2]
  rwlock:{name}:leases is a sorted set with the same '<owner>:r' / '<owner>:w' members, scored
  with the server time (ms) at which that owner's hold expires. Every hold has its own lease, so a
  reader that died loses its hold even while other readers keep renewing theirs; both keys expire
  with the longest lease.
]]
-- Drops the holds whose lease ran out, turns 'write' into 'read' when the writer is gone but reads
-- remain (a downgrade), deletes both keys when nothing is held, and sets their TTL to the longest
-- lease. Returns the mode: false (free), 'read' or 'write'.
local function settle(lock_key, leases_key, now)
  local expired = redis.call('ZRANGEBYSCORE', leases_key, '-inf', now)
  for _, member in ipairs(expired) do
    redis.call('HDEL', lock_key, member)
  end
  if #expired > 0 then redis.call('ZREMRANGEBYSCORE', leases_key, '-inf', now) end
  local longest = redis.call('ZRANGE', leases_key, -1, -1, 'WITHSCORES')
  if #longest == 0 then
    redis.call('DEL', lock_key, leases_key)
    return false
  end
  local mode = redis.call('HGET', lock_key, 'mode')
  if mode == 'write' then
    local writer = redis.call('HGET', lock_key, 'writer')
    if not writer or redis.call('HEXISTS', lock_key, writer .. ':w') == 0 then
      redis.call('HSET', lock_key, 'mode', 'read')
      redis.call('HDEL', lock_key, 'writer')
      mode = 'read'
    end
  end
  local ttl = math.max(1, tonumber(longest[2]) - now)
  redis.call('PEXPIRE', lock_key, ttl)
  redis.call('PEXPIRE', leases_key, ttl)
  return mode
end

-- After a hold's lease was set to end in ms from now: both keys must live at least that long.
local function outlive(lock_key, leases_key, ms)
  for _, key in ipairs({lock_key, leases_key}) do
    if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, ms) end
  end
end
