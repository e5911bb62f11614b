--[[
  Included by the fair lock scripts (`--- @include "includes/fair-queue"`).

  The queue is a list of owners in arrival order; each queued owner also has an entry in a sorted
  set scored with the server time (ms) until which it counts as alive. A waiter refreshes its
  entry on each attempt; a waiter whose process died stops doing so and is dropped, wherever it
  stands in the queue, once its entry is older than its waiter lease.
]]
local function drop_dead_waiters(queue_key, waiters_key, now)
  local dead = redis.call('ZRANGEBYSCORE', waiters_key, '-inf', now)
  for _, owner in ipairs(dead) do
    redis.call('LREM', queue_key, 1, owner)
  end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', waiters_key, '-inf', now) end
  -- A head without a liveness entry (the two keys expired apart) could never be dropped: drop it.
  local head = redis.call('LINDEX', queue_key, 0)
  while head and not redis.call('ZSCORE', waiters_key, head) do
    redis.call('LPOP', queue_key)
    head = redis.call('LINDEX', queue_key, 0)
  end
end

-- Wakes the head of the queue (its own channel) when the lock is free: the head is next, and
-- only it can take the lock, so nobody else is woken.
local function wake_head(lock_key, queue_key, channel_prefix)
  if redis.call('EXISTS', lock_key) == 1 then return end
  local head = redis.call('LINDEX', queue_key, 0)
  if head then redis.call('PUBLISH', channel_prefix .. head, 'released') end
end
