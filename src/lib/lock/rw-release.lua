--[[
  Releases one read or write hold of a read-write lock (settle comes from includes/rw-state.lua).
  When that changes what others may take (the lock is free, or the writer left and only reads
  remain), it publishes on the lock's channel.

  KEYS[1]  rwlock:{name}         hash: mode, writer, hold counts
  KEYS[2]  rwlock:{name}:leases  sorted set of hold leases
  ARGV[1]  owner
  ARGV[2]  'read' or 'write'
  ARGV[3]  release channel (the caller adds the key prefix)

  Returns 1 when the owner's hold of that kind ended, 0 when the owner still holds it (re-entered),
         -1 when the owner does not hold it (lease expired, or never held).
]]
--- @include "server-time"
--- @include "includes/rw-state"

local now = server_time_ms()
local member = ARGV[1] .. (ARGV[2] == 'read' and ':r' or ':w')
local lease_end = redis.call('ZSCORE', KEYS[2], member)
if not lease_end or tonumber(lease_end) <= now then
  settle(KEYS[1], KEYS[2], now) -- tidy up what expired
  return -1
end
if redis.call('HINCRBY', KEYS[1], member, -1) > 0 then
  return 0
end
local before = redis.call('HGET', KEYS[1], 'mode')
redis.call('HDEL', KEYS[1], member)
redis.call('ZREM', KEYS[2], member)
local after = settle(KEYS[1], KEYS[2], now)
if after ~= before then redis.call('PUBLISH', ARGV[3], after or 'released') end
return 1
