--[[
  Included by the acquire scripts (`--- @include "includes/fence"`).

  next_fence(fence_key, ttl_ms) returns the fencing token of a new hold as a decimal string:
  max(last token + 1, Redis server time in microseconds). The counter part makes tokens strictly
  increasing; the time part keeps them increasing even after the fence key expired (it carries a
  long TTL so that one key per lock name does not accumulate forever) or was lost in a failover,
  as long as the server clock does not step back by more than that.
]]
--- @include "server-time"

local function next_fence(fence_key, ttl_ms)
  local last = tonumber(redis.call('GET', fence_key) or '0')
  local token = string.format('%.0f', math.max(last + 1, server_time_us()))
  redis.call('SET', fence_key, token, 'PX', ttl_ms)
  return token
end
