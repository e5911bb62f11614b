--[[
  Redis server time, the one clock every script of a deployment shares (a client's clock may
  differ from the server's and from another client's).

  server_time_ms() milliseconds since the epoch.
  server_time_us() microseconds since the epoch (exact in a Lua number until the year 2255).
]]
local function server_time_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

local function server_time_us()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end
