--[[
  Withdraws a login code that could not be sent, unless a newer one replaced it meanwhile.

  KEYS[1]  login:code:{phone}  hash {code, attempts}
  ARGV[1]  the code that was not delivered

  Returns 1 when the code was deleted, 0 when the key holds another code or none.
]]
if redis.call('HGET', KEYS[1], 'code') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
