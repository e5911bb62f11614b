--[[
  Reads a session and renews its TTL (sliding expiry) in one command, so that the lookup every
  authenticated request makes joins the client's auto-pipeline instead of a MULTI of its own.

  KEYS[1]  login:token:{sha256(token)}  hash {id, nickName, icon, role}
  ARGV[1]  the session TTL in seconds

  Returns the hash as a flat list of fields and values; empty if there is no such session (which
  is then not created by the EXPIRE).
]]
local fields = redis.call('HGETALL', KEYS[1])
if #fields > 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
return fields
