--[[
  Shared by the permit-expirable semaphore scripts (prepended to them when they are loaded).

  Its keys: KEYS[1] psemaphore:{name} (string, permits available), KEYS[2]
  psemaphore:{name}:leases (sorted set, permit id -> end of its lease, server time in ms).

  now_ms() is Redis server time in ms: every lease is measured on the one clock of the server.
  reclaim() gives the permits of ended leases back (a holder that died without releasing); at
  most 1000 per call, the next call takes the rest.
]]
local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

local function reclaim(permits_key, leases_key, now)
  local ended = redis.call('ZRANGEBYSCORE', leases_key, '-inf', now, 'LIMIT', 0, 1000)
  if #ended > 0 then
    redis.call('ZREM', leases_key, unpack(ended))
    redis.call('INCRBY', permits_key, #ended)
  end
  return #ended
end
