--[[
  Monitoring figures of one shard's order stream, in one call (a script because client-side key
  prefixing does not see the key inside XINFO GROUPS).

  KEYS[1]  {seckill:N}:orders          KEYS[2]  {seckill:N}:orders:dead
  ARGV[1]  group name
  Returns {stream length, pending, lag, dead letters}; lag is -1 when Redis cannot tell (after an
  XDEL or trim past undelivered entries); without the group pending is 0 and lag the length.
]]
local length = redis.call('XLEN', KEYS[1])
local dead = redis.call('XLEN', KEYS[2])
if length == 0 and redis.call('EXISTS', KEYS[1]) == 0 then
  return { 0, 0, 0, dead }
end
for _, group in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  local info = {}
  for i = 1, #group, 2 do info[group[i]] = group[i + 1] end
  if info['name'] == ARGV[1] then
    local lag = info['lag']
    if type(lag) ~= 'number' then lag = -1 end
    return { length, info['pending'], lag, dead }
  end
end
return { length, 0, length, dead }
