--[[
  A waiter gives up (timeout, abort, client closed): it leaves the queue at once instead of
  blocking it until its waiter lease runs out, and the next head is woken if the lock is free.
  The queue functions come from includes/fair-queue.lua.

  KEYS[1]  lock:{name}          hash {owner: hold count}
  KEYS[2]  lock:{name}:queue    list of waiting owners
  KEYS[3]  lock:{name}:waiters  sorted set {owner: alive until, server ms}
  ARGV[1]  owner
  ARGV[2]  channel prefix (the caller adds the key prefix)

  Returns the number of queue entries removed (0 or 1).
]]
--- @include "includes/fair-queue"

local was_head = redis.call('LINDEX', KEYS[2], 0) == ARGV[1]
redis.call('ZREM', KEYS[3], ARGV[1])
local removed = redis.call('LREM', KEYS[2], 0, ARGV[1])
if was_head then wake_head(KEYS[1], KEYS[2], ARGV[2]) end
return removed
