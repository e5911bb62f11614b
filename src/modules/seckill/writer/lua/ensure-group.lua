--[[
  Creates the order stream's consumer group (and the stream) unless it exists. A script, not a
  plain XGROUP call, because client-side key prefixing does not see keys inside XGROUP subcommands.

  KEYS[1]  {seckill:N}:orders
  ARGV[1]  group name
  Returns 1 when created, 0 when it existed.
]]
local ok, err = pcall(redis.call, 'XGROUP', 'CREATE', KEYS[1], ARGV[1], '0', 'MKSTREAM')
if ok then
  return 1
end
if string.find(tostring(err.err or err), 'BUSYGROUP') then
  return 0
end
return redis.error_reply(tostring(err.err or err))
