--[[
  Reads a session and renews its TTL (sliding expiry) in one command, so that the lookup every
  authenticated request makes joins the client's auto-pipeline instead of a MULTI of its own.
  The TTL never reaches past the session's absolute deadline (SESSION_MAX_AGE_SECONDS after the
  login): a session used all day still ends then.

  KEYS[1]  login:token:{sha256(token)}  hash {id, nickName, icon, role, deadline}
  ARGV[1]  the session TTL in seconds (idle timeout)
  ARGV[2]  the maximum age in seconds, for a session opened before deadlines existed: it gets
           deadline = now + ARGV[2] at its first touch

  Returns the hash as a flat list of fields and values; empty if there is no such session (which
  is then not created by the EXPIRE) or if its deadline has passed (it is then deleted).
]]
--- @include "server-time"

local fields = redis.call('HGETALL', KEYS[1])
if #fields == 0 then
  return fields
end
local deadline
for i = 1, #fields, 2 do
  if fields[i] == 'deadline' then
    deadline = tonumber(fields[i + 1])
  end
end
local now = server_time_ms()
if deadline == nil then
  deadline = now + tonumber(ARGV[2]) * 1000
  redis.call('HSET', KEYS[1], 'deadline', deadline)
end
local left = deadline - now
if left <= 0 then
  redis.call('DEL', KEYS[1])
  return {}
end
redis.call('PEXPIRE', KEYS[1], math.min(tonumber(ARGV[1]) * 1000, left))
return fields
