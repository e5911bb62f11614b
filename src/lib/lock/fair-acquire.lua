--[[
  Acquires, re-enters or queues for a fair lock (next_fence comes from includes/fence.lua, the
  queue functions from includes/fair-queue.lua).

  KEYS[1]  lock:{name}          hash {owner: hold count}, PX lease (the reentrant lock's layout)
  KEYS[2]  lock:{name}:fence    string, last fencing token
  KEYS[3]  lock:{name}:queue    list of waiting owners, in arrival order
  KEYS[4]  lock:{name}:waiters  sorted set {owner: server time in ms until which it counts as alive}
  ARGV[1]  owner (instance id : async context id)
  ARGV[2]  lease in ms
  ARGV[3]  TTL of the fence key in ms
  ARGV[4]  waiter lease in ms: join the queue, or stay in it, for that long; 0: do not queue
  ARGV[5]  channel prefix: a waiter is woken on <prefix><owner> (the caller adds the key prefix)

  The lock goes to the head of the queue only; with an empty queue, to whoever asks first.
  Returns {1, token} for a new hold, {2, token} for a re-entry,
          {0, ms}    when not acquired: ms until the lock may change hands (the holder's lease,
                     or the head's waiter lease when the lock is free and the head has not taken it).
]]
--- @include "server-time"
--- @include "includes/fence"
--- @include "includes/fair-queue"

local now = server_time_ms()
-- Uncontended locks have no queue: skip its upkeep.
local has_queue = redis.call('EXISTS', KEYS[3]) == 1
if has_queue then drop_dead_waiters(KEYS[3], KEYS[4], now) end

if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
  -- A re-entry may lengthen the lease but never shortens what the outer hold asked for.
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return {2, redis.call('GET', KEYS[2]) or '0'}
end

local head = has_queue and redis.call('LINDEX', KEYS[3], 0)
if redis.call('EXISTS', KEYS[1]) == 0 and (not head or head == ARGV[1]) then
  if head then
    redis.call('LPOP', KEYS[3])
    redis.call('ZREM', KEYS[4], ARGV[1])
  end
  redis.call('HSET', KEYS[1], ARGV[1], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, next_fence(KEYS[2], ARGV[3])}
end

local waiter_lease = tonumber(ARGV[4])
if waiter_lease > 0 then
  -- ZADD answers 1 only for a new member: an owner already queued keeps its place (and one
  -- left in the sorted set by a queue that expired apart from it queues again).
  if redis.call('ZADD', KEYS[4], now + waiter_lease, ARGV[1]) == 1 or not has_queue then
    redis.call('RPUSH', KEYS[3], ARGV[1])
  end
  -- The queue keys vanish by themselves once every waiter is gone (they all refresh within their lease).
  for i = 3, 4 do
    if redis.call('PTTL', KEYS[i]) < waiter_lease then redis.call('PEXPIRE', KEYS[i], waiter_lease) end
  end
end

local pttl = redis.call('PTTL', KEYS[1])
if pttl ~= -2 then return {0, pttl} end
-- Free, but someone else is at the head: make sure it knows (it may have missed the release).
wake_head(KEYS[1], KEYS[3], ARGV[5])
head = redis.call('LINDEX', KEYS[3], 0)
if not head then return {0, 0} end
local head_until = redis.call('ZSCORE', KEYS[4], head)
return {0, math.max(1, tonumber(head_until or now) - now)}
