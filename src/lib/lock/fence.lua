--[[
  Shared by the acquire scripts (prepended to them when they are loaded).

  next_fence(fence_key, ttl_ms) returns the fencing token of a new hold as a decimal string:
  max(last token + 1, Redis server time in microseconds). The counter part makes tokens strictly
  increasing; the time part keeps them increasing even after the fence key expired (it carries a
  long TTL so that one key per lock name does not accumulate forever) or was lost in a failover,
  as long as the server clock does not step back by more than that.
]]
local function next_fence(fence_key, ttl_ms)
  local last = tonumber(redis.call('GET', fence_key) or '0')
  local time = redis.call('TIME')
  local now_us = tonumber(time[1]) * 1000000 + tonumber(time[2])
  local token = string.format('%.0f', math.max(last + 1, now_us))
  redis.call('SET', fence_key, token, 'PX', ttl_ms)
  return token
end
