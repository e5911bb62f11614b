-- One Redis node as a worker's sale watcher sees it (hmdp.edge.sale_watch runs one pair of
-- connections per node: the standalone Redis, or each master of a Cluster): whether its push is
-- fresh (its heartbeat came back within freshMs), its clock's bounds, the keys wanted from it, and
-- an epoch that a lost connection counts up, so that every entry read from the node before is void.
local semaphore = require "ngx.semaphore"
local settings = require "hmdp.edge.settings"

local M = {}

local Node = {}
Node.__index = Node

local MAX_WANTED = 256

--- Local milliseconds now (the cached ngx.now() may be a loop iteration old).
function M.local_ms()
  ngx.update_time()
  return ngx.now() * 1000
end

function M.new(name)
  return setmetatable({ name = name, epoch = 1, confirmed_ms = 0, wanted = {}, wanted_count = 0, wake = semaphore.new(0) }, Node)
end

--- A heartbeat sent at local time sent_ms came back: every write made before it was pushed.
function Node:confirm(sent_ms)
  if sent_ms > self.confirmed_ms then self.confirmed_ms = sent_ms end
end

function Node:fresh()
  return M.local_ms() - self.confirmed_ms <= settings.values.sales.freshMs
end

--- A TIME reply {seconds, microseconds} read between local times sent_ms and received_ms bounds
--- the offset of the node's clock (Redis' scripts floor to whole ms: one ms each side for that).
function Node:observe(reply, sent_ms, received_ms)
  local redis_ms = tonumber(reply[1]) * 1000 + tonumber(reply[2]) / 1000
  self.low, self.high = redis_ms - received_ms - 1, redis_ms - sent_ms + 1
end

--- The earliest and latest time the node's clock may show now, or nil before any reading.
function Node:now()
  if not self.low then return nil end
  local now = M.local_ms()
  return now + self.low, now + self.high
end

--- Asks for a reading of the key (bounded: beyond it, a later request asks again).
function Node:want(key)
  if self.wanted[key] or self.wanted_count >= MAX_WANTED then return end
  self.wanted[key] = true
  self.wanted_count = self.wanted_count + 1
  if self.wanted_count == 1 then self.wake:post(1) end
end

--- The keys wanted since the last call, at most `max`.
function Node:take_wanted(max)
  local keys = {}
  for key in pairs(self.wanted) do
    if #keys >= max then break end
    keys[#keys + 1] = key
    self.wanted[key] = nil
    self.wanted_count = self.wanted_count - 1
  end
  return keys
end

--- Waits until a key is wanted, or `seconds`.
function Node:wait(seconds)
  if self.wanted_count > 0 then return end
  self.wake:wait(seconds)
end

--- The node's connections were lost: what was read from it is void, it is not fresh.
function Node:forget()
  self.epoch = self.epoch + 1
  self.confirmed_ms = 0
  self.low, self.high = nil, nil
end

return M
