--[[
  A user's orders accepted on this shard and not yet written to MySQL: the user's members of the
  shard's queued-by-user set (one range of the set, ordered by member: never a scan) whose order
  is still in the queued hash. Members whose order left it (written, or given back) are dropped
  here, so a cleanup that missed one costs nothing but this read.

  KEYS[1]  {seckill:N}:queued-by-user  sorted set, all scores 0, members "userId:orderId"
  KEYS[2]  {seckill:N}:queued          hash orderId -> "userId:voucherId:slot:acceptedMs"
  ARGV[1]  userId
  Returns a flat list: orderId, "voucherId:acceptedMs:slot", ... of the orders still queued.
]]
local user = ARGV[1]
-- ";" follows ":" in byte order: the range is exactly the members that start with "userId:".
local members = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. user .. ':', '(' .. user .. ';')
local queued = {}
for _, member in ipairs(members) do
  local order_id = string.sub(member, #user + 2)
  local value = redis.call('HGET', KEYS[2], order_id)
  if value then
    local _, voucher_id, slot, accepted_ms = string.match(value, '^([^:]+):([^:]+):?([^:]*):?([^:]*)$')
    queued[#queued + 1] = order_id
    queued[#queued + 1] = voucher_id .. ':' .. accepted_ms .. ':' .. slot
  else
    redis.call('ZREM', KEYS[1], member)
  end
end
return queued
