--[[
  Takes or re-enters the read or the write lock of a read-write lock (next_fence comes from
  includes/fence.lua, settle and outlive from includes/rw-state.lua).

  KEYS[1]  rwlock:{name}         hash: mode, writer, '<owner>:r' / '<owner>:w' hold counts
  KEYS[2]  rwlock:{name}:leases  sorted set {'<owner>:r' / '<owner>:w': lease end, server ms}
  KEYS[3]  rwlock:{name}:fence   string, last fencing token
  ARGV[1]  owner (instance id : async context id)
  ARGV[2]  'read' or 'write'
  ARGV[3]  lease in ms
  ARGV[4]  TTL of the fence key in ms

  Read: granted when free, in read mode, or to the writer itself (downgrade). Write: granted when
  free, or to the writer itself (re-entry).
  Returns {1, token} for a new hold, {2, token} for a re-entry,
          {0, ms, mode} when not granted: ms until the first lease ends, the mode now held,
          {-1, 0}  for a write wanted by an owner that holds a read lock and not the write lock:
                   an upgrade, refused because two upgrading readers would wait for each other forever.
]]
--- @include "server-time"
--- @include "includes/fence"
--- @include "includes/rw-state"

local owner, wanted = ARGV[1], ARGV[2]
local now = server_time_ms()
-- A free lock (the common case) has nothing to settle.
local mode = redis.call('EXISTS', KEYS[1]) == 1 and settle(KEYS[1], KEYS[2], now)

local granted
if not mode then
  granted = true
elseif mode == 'write' then
  granted = redis.call('HGET', KEYS[1], 'writer') == owner
elseif wanted == 'read' then
  granted = true
else
  if redis.call('HEXISTS', KEYS[1], owner .. ':r') == 1 then return {-1, 0} end
  granted = false
end
if not granted then
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return {0, math.max(1, tonumber(first[2]) - now), mode}
end

local member = owner .. (wanted == 'read' and ':r' or ':w')
if not mode then
  redis.call('HSET', KEYS[1], 'mode', wanted)
  if wanted == 'write' then redis.call('HSET', KEYS[1], 'writer', owner) end
end
local count = redis.call('HINCRBY', KEYS[1], member, 1)
-- GT: a re-entry may lengthen the hold's lease but never shortens what an outer hold asked for.
redis.call('ZADD', KEYS[2], 'GT', now + tonumber(ARGV[3]), member)
outlive(KEYS[1], KEYS[2], tonumber(ARGV[3]))
if count == 1 then return {1, next_fence(KEYS[3], ARGV[4])} end
redis.call('PEXPIRE', KEYS[3], ARGV[4])
return {2, redis.call('GET', KEYS[3]) or '0'}
