--[[
  Included by the permit-expirable semaphore scripts that give ended leases back
  (`--- @include "includes/permit-reclaim"`).

  Its keys: KEYS[1] psemaphore:{name} (string, permits available), KEYS[2]
  psemaphore:{name}:leases (sorted set, permit id -> end of its lease, server time in ms).

  Every lease is measured on the one clock of the Redis server: the scripts take now from
  server_time_ms() (the shared server-time piece). reclaim() gives the permits of ended leases
  back (a holder that died without releasing); at most 1000 per call, the next call takes the rest.
]]
local function reclaim(permits_key, leases_key, now)
  local ended = redis.call('ZRANGEBYSCORE', leases_key, '-inf', now, 'LIMIT', 0, 1000)
  if #ended > 0 then
    redis.call('ZREM', leases_key, unpack(ended))
    redis.call('INCRBY', permits_key, #ended)
  end
  return #ended
end
