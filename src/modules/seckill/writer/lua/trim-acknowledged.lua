--[[
  Removes the entries every consumer of the group is done with, so the order stream does not
  grow forever: everything older than the oldest pending entry or, with nothing pending, older
  than the last entry delivered to the group. Undelivered entries are never touched.

  KEYS[1]  {seckill:N}:orders
  ARGV[1]  group name
  Returns the number of entries removed.
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local last_delivered = nil
for _, group in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  local fields = {}
  for i = 1, #group, 2 do
    fields[group[i]] = group[i + 1]
  end
  if fields['name'] == ARGV[1] then
    last_delivered = fields['last-delivered-id']
  end
end
if not last_delivered then
  return 0
end
local pending = redis.call('XPENDING', KEYS[1], ARGV[1])
local keep_from = last_delivered
if pending[1] > 0 then
  keep_from = pending[2]
end
return redis.call('XTRIM', KEYS[1], 'MINID', keep_from)
