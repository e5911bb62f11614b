--[[
  Monitoring figures of one shard's order stream, in one call (a script because client-side key
  prefixing does not see the key inside XINFO GROUPS).

  KEYS[1]  {seckill:N}:orders          KEYS[2]  {seckill:N}:orders:dead
  KEYS[3]  {seckill:N}:queued          hash of the orders accepted and not yet in MySQL
  ARGV[1]  group name
  Returns {stream length, pending, lag, dead letters, queued orders}; length, pending and lag
  count entries (reserve.lua writes one per batch), queued counts orders. lag is -1 when Redis
  cannot tell (after an XDEL or trim past undelivered entries); without the group pending is 0
  and lag the length.
]]
local length = redis.call('XLEN', KEYS[1])
local dead = redis.call('XLEN', KEYS[2])
local queued = redis.call('HLEN', KEYS[3])
if length == 0 and redis.call('EXISTS', KEYS[1]) == 0 then
  return { 0, 0, 0, dead, queued }
end
for _, group in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  local info = {}
  for i = 1, #group, 2 do info[group[i]] = group[i + 1] end
  if info['name'] == ARGV[1] then
    local lag = info['lag']
    if type(lag) ~= 'number' then lag = -1 end
    return { length, info['pending'], lag, dead, queued }
  end
end
return { length, 0, length, dead, queued }
