-- Redis' clock as seen from this worker. The sale's window is decided in Redis by its own TIME
-- (reserve.lua), which may differ from nginx's clock: every TIME the watcher reads, with the local
-- times before the command went and after its answer came, bounds the offset between the two, and
-- a window is judged only when it is decided for every instant within those bounds.
local M = {}

-- offset = Redis ms - local ms, within [low, high]; unknown until the first reading.
local low, high

--- Local milliseconds now (the cached ngx.now() may be a loop iteration old).
function M.local_ms()
  ngx.update_time()
  return ngx.now() * 1000
end

--- A TIME reply {seconds, microseconds} read between local times sent_ms and received_ms.
function M.observe(reply, sent_ms, received_ms)
  local redis_ms = tonumber(reply[1]) * 1000 + tonumber(reply[2]) / 1000
  -- Redis' scripts floor to whole ms; one ms each side covers that and the local rounding.
  low, high = redis_ms - received_ms - 1, redis_ms - sent_ms + 1
end

--- The earliest and latest Redis time it may be now, or nil before any reading.
function M.now()
  if not low then return nil end
  local now = M.local_ms()
  return now + low, now + high
end

function M.forget() low, high = nil, nil end

return M
