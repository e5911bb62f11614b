--[[
  What a read-write lock holds now, for isLocked() and holdCount(). Reads only: a hold whose lease
  ended counts as gone, whether or not a script has dropped it yet.

  KEYS[1]  rwlock:{name}         hash: mode, writer, '<owner>:r' / '<owner>:w' hold counts
  KEYS[2]  rwlock:{name}:leases  sorted set {'<owner>:r' / '<owner>:w': lease end, server ms}
  ARGV[1]  'r' (the read lock) or 'w' (the write lock)
  ARGV[2]  owner whose holds to count, or '' for none

  Returns {held, holds}: held 1 when some owner holds that lock (for the read lock also the
  writer's own reads under its write lock, as Redisson's), else 0; holds: the owner's holds of
  that lock (0 without an owner).
]]
--- @include "server-time"

local now = server_time_ms()
local suffix = ':' .. ARGV[1]
local held = 0
for _, member in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf')) do
  if string.sub(member, -#suffix) == suffix then
    held = 1
    break
  end
end
local holds = 0
if ARGV[2] ~= '' then
  local member = ARGV[2] .. suffix
  local lease_end = redis.call('ZSCORE', KEYS[2], member)
  if lease_end and tonumber(lease_end) > now then holds = tonumber(redis.call('HGET', KEYS[1], member) or '0') end
end
return {held, holds}
