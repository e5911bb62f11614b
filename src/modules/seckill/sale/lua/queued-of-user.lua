--[[
  A user's orders accepted on this shard and not yet written to MySQL: the entries of the user's
  list that are still in the shard's queued hash. The others (written by the worker, or given
  back) are dropped from the list here, so the list needs no cleanup on the worker's path.

  KEYS[1]  {seckill:N}:user-orders:{userId}  hash orderId -> "voucherId:reserveMs:slot"
  KEYS[2]  {seckill:N}:queued                hash orderId -> "userId:voucherId:slot"
  Returns a flat list: orderId, "voucherId:reserveMs:slot", ... of the orders still queued.
]]
local entries = redis.call('HGETALL', KEYS[1])
local queued = {}
for i = 1, #entries, 2 do
  if redis.call('HEXISTS', KEYS[2], entries[i]) == 1 then
    queued[#queued + 1] = entries[i]
    queued[#queued + 1] = entries[i + 1]
  else
    redis.call('HDEL', KEYS[1], entries[i])
  end
end
return queued
