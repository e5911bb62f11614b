--[[
  Watchdog renewal of one read or write hold, only while the owner still holds it (settle and
  outlive come from includes/rw-state.lua).

  KEYS[1]  rwlock:{name}         hash: mode, writer, hold counts
  KEYS[2]  rwlock:{name}:leases  sorted set of hold leases
  KEYS[3]  rwlock:{name}:fence   string, last fencing token
  ARGV[1]  owner
  ARGV[2]  'read' or 'write'
  ARGV[3]  lease in ms
  ARGV[4]  TTL of the fence key in ms

  Returns 1 when renewed, 0 when the owner no longer holds it.
]]
--- @include "server-time"
--- @include "includes/rw-state"

local now = server_time_ms()
settle(KEYS[1], KEYS[2], now)
local member = ARGV[1] .. (ARGV[2] == 'read' and ':r' or ':w')
if not redis.call('ZSCORE', KEYS[2], member) then
  return 0
end
redis.call('ZADD', KEYS[2], 'GT', now + tonumber(ARGV[3]), member)
outlive(KEYS[1], KEYS[2], tonumber(ARGV[3]))
redis.call('PEXPIRE', KEYS[3], ARGV[4])
return 1
