--[[
  Compare-and-delete: only the acquisition that set the token can delete the lock, so a holder
  whose lease expired can never delete the lock of the next holder.

  KEYS[1]  lock:{name}  string token
  ARGV[1]  token of the acquisition being released
  ARGV[2]  release channel (the caller adds the key prefix)

  Returns 1 when released, -1 when the lock is not held with this token.
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], 'released')
return 1
