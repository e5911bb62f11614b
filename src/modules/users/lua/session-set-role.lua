--[[
  Changes the role of one live session, without creating it if it has expired or was deleted
  (an HSET on a missing key would make a session without a TTL or a user).

  KEYS[1]  login:token:{sha256(token)}  hash {id, nickName, icon, role}
  ARGV[1]  the new role ('user' or 'admin')

  Returns 1 if the session exists (and was updated), 0 if it does not.
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'role', ARGV[1])
return 1
