--[[
  Releases one hold of a fair lock; the last one deletes the lock and wakes the head of the queue
  (and nobody else). The queue functions come from includes/fair-queue.lua.

  KEYS[1]  lock:{name}          hash {owner: hold count}
  KEYS[2]  lock:{name}:queue    list of waiting owners
  KEYS[3]  lock:{name}:waiters  sorted set {owner: alive until, server ms}
  ARGV[1]  owner
  ARGV[2]  channel prefix (the caller adds the key prefix)

  Returns 1 when the lock is now free, 0 when the owner still holds it (re-entered),
         -1 when the owner does not hold it (lease expired, or never held).
]]
--- @include "server-time"
--- @include "includes/fair-queue"

if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return -1
end
if redis.call('HINCRBY', KEYS[1], ARGV[1], -1) > 0 then
  return 0
end
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 1 then
  drop_dead_waiters(KEYS[2], KEYS[3], server_time_ms())
  wake_head(KEYS[1], KEYS[2], ARGV[2])
end
return 1
