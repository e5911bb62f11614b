-- This worker's view of the sales it was asked about, and whether that view is fresh. A view is
-- what the watcher (hmdp.edge.sale_watch) read of a sale's hashes on its tracked connection: Redis
-- then pushes the invalidation of any later write of those hashes (a sale, a release, a raise, a
-- pause or resume, a window moved, a refill between buckets), and the view is dropped when it
-- arrives. The view is "fresh" while the watcher's heartbeat, sent on the same path, came back
-- within freshMs: every write Redis made before that heartbeat was sent has had its invalidation
-- read (one connection delivers them in order), so a view still held was true freshMs ago at most.
-- Without that (a reconnect, a stall, a lost connection) nothing is refused here.
local lrucache = require "resty.lrucache"
local semaphore = require "ngx.semaphore"
local settings = require "hmdp.edge.settings"
local clock = require "hmdp.edge.sale_clock"

local M = {}

local views           -- voucher id -> {parts = {...}} or {absent = true}, per worker, bounded
local reading = {}    -- voucher id -> true while the watcher reads it, "dirty" if invalidated meanwhile
local wanted, wanted_count = {}, 0
local wake            -- posted when a voucher is wanted: the watcher reads it at once
local confirmed_ms = 0 -- local time the last heartbeat that came back was sent

local MAX_WANTED = 256

function M.init()
  views = lrucache.new(settings.values.sales.maxViews)
  wake = semaphore.new(0)
end

--- Asks the watcher for a reading of the voucher (bounded: beyond it, a later request asks again).
local function want(id)
  if wanted[id] or wanted_count >= MAX_WANTED then return end
  wanted[id] = true
  wanted_count = wanted_count + 1
  if wanted_count == 1 then wake:post(1) end
end

--- Whether a heartbeat sent within freshMs came back: what is held is current to within that.
function M.is_fresh()
  return clock.local_ms() - confirmed_ms <= settings.values.sales.freshMs
end

--- The view of a voucher if it is fresh, else nil (and a reading is asked for when none is held).
function M.known(id)
  local view = views:get(id)
  if view == nil then
    want(id)
    return nil
  end
  if not M.is_fresh() then return nil end
  return view
end

--- The watcher's side: the vouchers wanted since the last call, at most `max`.
function M.take_wanted(max)
  local ids = {}
  for id in pairs(wanted) do
    if #ids >= max then break end
    ids[#ids + 1] = id
    wanted[id] = nil
    wanted_count = wanted_count - 1
  end
  return ids
end

--- Waits until a voucher is wanted, or `seconds`.
function M.wait(seconds)
  if wanted_count > 0 then return end
  wake:wait(seconds)
end

--- Before a reading is sent: an invalidation that arrives before it is stored voids it.
function M.reading(id) reading[id] = true end

--- A reading's result: kept unless an invalidation of the voucher came in while it was read.
function M.read(id, view)
  local state = reading[id]
  reading[id] = nil
  if state == "dirty" then return want(id) end
  if state then views:set(id, view) end
end

--- Redis says a hash of the voucher was written (or, with id nil, everything: a FLUSHDB).
function M.invalidated(id)
  if id == nil then return M.forget() end
  views:delete(id)
  if reading[id] then reading[id] = "dirty" end
end

--- A heartbeat sent at local time sent_ms came back through the push.
function M.confirm(sent_ms)
  if sent_ms > confirmed_ms then confirmed_ms = sent_ms end
end

--- The path was lost: nothing held is trusted (invalidations may have been missed meanwhile).
function M.forget()
  views:flush_all()
  -- A reading of the lost connection that still completes is not stored.
  reading = {}
  confirmed_ms = 0
  clock.forget()
end

return M
