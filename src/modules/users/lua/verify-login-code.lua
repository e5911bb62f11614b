--[[
  Checks a login code and uses it up, atomically.

  KEYS[1]  login:code:{phone}  hash {code, attempts}
  ARGV[1]  the code the user typed
  ARGV[2]  wrong tries allowed before the code is burnt

  Returns 1 when the code matches (the key is deleted: one use only),
          0 when it does not (the attempt is counted; the last allowed one deletes the key),
         -1 when there is no code (never sent, expired, used or burnt).
]]
local stored = redis.call('HGET', KEYS[1], 'code')
if not stored then
  return -1
end
if stored == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
local attempts = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
if attempts >= tonumber(ARGV[2]) then
  redis.call('DEL', KEYS[1])
end
return 0
