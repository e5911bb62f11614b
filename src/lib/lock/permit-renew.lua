--[[
  Watchdog renewal of permits, only while every one of them is still held (its lease not ended).

  KEYS[1]  psemaphore:{name}         string, permits available (unused: one slot for both keys)
  KEYS[2]  psemaphore:{name}:leases  sorted set, permit id -> end of lease
  ARGV[1]  lease in ms
  ARGV[2...]  permit ids

  Returns 1 when renewed, 0 when a permit is no longer held.
]]
--- @include "server-time"

local now = server_time_ms()
for i = 2, #ARGV do
  local lease_end = redis.call('ZSCORE', KEYS[2], ARGV[i])
  if not lease_end or tonumber(lease_end) <= now then
    return 0
  end
end
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[1]), ARGV[i])
end
return 1
