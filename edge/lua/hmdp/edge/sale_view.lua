-- This worker's view of the sales it was asked about, one entry per Redis hash (a sale's, a
-- bucket's, a bucketed sale's layout), each what the node's watcher (hmdp.edge.sale_watch) read on
-- its tracked connection. Redis pushes the invalidation of any later write of that hash (an order,
-- a release, a raise, a pause or resume, a window moved, a refill between buckets) and the entry is
-- dropped when it arrives. An entry is used only while its node is fresh (hmdp.edge.sale_node):
-- its heartbeat, sent on the same connection as the invalidations, came back within freshMs, so
-- every write the node made before then has been seen. Entries held at once are each unchanged
-- since they were read: at the latest of those readings all of them held at the same instant.
local lrucache = require "resty.lrucache"
local settings = require "hmdp.edge.settings"
local sale_keys = require "hmdp.edge.sale_keys"
local sale_nodes = require "hmdp.edge.sale_nodes"

local M = {}

local entries           -- Redis key -> {node, epoch, part | buckets | absent}
local reading = {}      -- key -> true while read, "dirty" when invalidated meanwhile

M.ABSENT = {}

function M.init()
  entries = lrucache.new(settings.values.sales.maxViews)
  reading = {}
end

--- The entry of a key if it is held and its node fresh; else nil (and a reading is wanted).
local function entry_of(key)
  local node = sale_nodes.node_of(key)
  if not node then return nil end
  local entry = entries:get(key)
  if entry == nil or entry.epoch ~= node.epoch or entry.node ~= node then
    node:want(key)
    return nil
  end
  if not node:fresh() then return nil end
  return entry
end

--- The parts of a voucher's sale (its hash, or each bucket's), ABSENT when Redis holds no sale, or
--- nil when this worker does not know (then the readings are wanted). Each part has its `node`.
function M.sale(id)
  local entry = entry_of(sale_keys.voucher(id))
  if entry == nil then return nil end
  if entry.absent then return M.ABSENT end
  if not entry.buckets then return entry.parts end
  local parts = {}
  for b = 0, entry.buckets - 1 do
    local bucket = entry_of(sale_keys.bucket(id, b, entry.buckets))
    -- Every missing one is wanted at once, so that the next request finds them all.
    if bucket == nil then
      parts = nil
    elseif parts then
      -- A bucket without its sale (a layout being changed): the app decides.
      if not bucket.part then return nil end
      parts[b + 1] = bucket.part
    end
  end
  return parts
end

--- Before a reading of `key` is sent.
function M.reading(key) reading[key] = true end

--- A reading of `key` from `node` (nil: it failed): kept unless an invalidation of it came in while it was read.
function M.read(key, node, entry)
  local state = reading[key]
  reading[key] = nil
  if entry == nil then return end
  if state == "dirty" then return node:want(key) end
  if state == nil then return end
  entry.node, entry.epoch = node, node.epoch
  if entry.part then
    entry.part.node = node
    entry.parts = { entry.part }
  end
  entries:set(key, entry)
end

--- Redis says the key was written (or, with key nil, everything on `node`: a FLUSHDB).
function M.invalidated(key, node)
  if key == nil then return node:forget() end
  entries:delete(key)
  if reading[key] then reading[key] = "dirty" end
end

--- A pair of connections of `node` was lost or made again: nothing read before is trusted.
function M.forget(node)
  node:forget()
  for key in pairs(reading) do reading[key] = "dirty" end
end

return M
