--[[
  Hands orders the sync strategy reserved (reserve.lua, mode "hold") over to the order stream,
  so that the worker writes them: when the request's MySQL write failed or its outcome is
  unknown, and, for orders held longer than a request can last, when the request never finished
  (its instance died). The worker's write is idempotent (the order id is the primary key), so an
  order the request did commit is found written and only acknowledged.

  KEYS[1]  {seckill:N}:in-flight   sorted set orderId -> reserve time (ms)
  KEYS[2]  {seckill:N}:queued      hash orderId -> "userId:voucherId:slot:acceptedMs" (no slot: 1)
  KEYS[3]  {seckill:N}:orders      the order stream
  ARGV     mode "one": orderId   |   mode "older": age (ms), most orders per call
  Returns the number of orders appended to the stream. An order no longer in the in-flight set
  was settled or handed off already; one no longer queued was given back (release.lua): each is
  only dropped from the set.
]]
--- @include "server-time"
local function hand_off(order_id)
  -- The in-flight score is the acceptance time: the entry carries it, as reserve.lua's do.
  local accepted_ms = redis.call('ZSCORE', KEYS[1], order_id)
  if redis.call('ZREM', KEYS[1], order_id) == 0 then
    return 0
  end
  local value = redis.call('HGET', KEYS[2], order_id)
  if not value then
    return 0
  end
  local user_id, voucher_id, slot = string.match(value, '^([^:]+):([^:]+):?([^:]*)')
  if slot == '' then
    slot = '1'
  end
  redis.call('XADD', KEYS[3], '*', 'orderId', order_id, 'userId', user_id, 'voucherId', voucher_id, 'slot', slot, 'acceptedMs', accepted_ms)
  return 1
end

if ARGV[1] == 'one' then
  return hand_off(ARGV[2])
end
local now = server_time_ms()
local handed = 0
for _, order_id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]), 'LIMIT', 0, tonumber(ARGV[3]))) do
  handed = handed + hand_off(order_id)
end
return handed
