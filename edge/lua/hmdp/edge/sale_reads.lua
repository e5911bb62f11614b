-- Reads the wanted hashes of one node (hmdp.edge.sale_view) on its watcher's tracked connection,
-- in one round trip with TIME: each a sale's (or a bucket's) part, a bucketed sale's layout record
-- {buckets, begin, end}, or nothing. Each hash read is tracked by Redis from then on, so its next
-- write reaches the watcher.
local sale_view = require "hmdp.edge.sale_view"
local sale_node = require "hmdp.edge.sale_node"
local settings = require "hmdp.edge.settings"
local log_once = require "hmdp.edge.log_once"

local M = {}

local null = ngx.null
local FIELDS = { "stock", "begin", "end", "frozen_until", "suspended", "pending", "buckets" }
local MAX_BUCKETS = 64

local function number(value, default)
  if value == null or value == nil then return default end
  return tonumber(value)
end

--- A hash's fields as an entry of the view.
local function entry_of(fields)
  local stock, begin, finish = number(fields[1]), number(fields[2]), number(fields[3])
  if stock and begin and finish then
    return {
      part = {
        stock = stock,
        begin = begin,
        finish = finish,
        -- A field the edge cannot read is taken at its most cautious: frozen, units pending.
        frozen_until = number(fields[4], 0) or math.huge,
        suspended = fields[5] ~= null,
        pending = number(fields[6], 0) or math.huge,
      },
    }
  end
  local buckets = number(fields[7])
  if stock == nil and buckets and buckets > 1 and buckets <= MAX_BUCKETS and buckets % 1 == 0 then return { buckets = buckets } end
  return { absent = true }
end

--- Reads `keys` of `node` on `reader`; nil, err when Redis failed (the watcher then starts over).
function M.read(reader, node, keys)
  for i = 1, #keys do sale_view.reading(keys[i]) end
  reader:init_pipeline(#keys + 1)
  for i = 1, #keys do reader:hmget(keys[i], unpack(FIELDS)) end
  reader:time()
  local sent = sale_node.local_ms()
  local replies, err = reader:commit_pipeline()
  if not replies then return nil, err end
  local time = replies[#replies]
  if type(time) ~= "table" or time[1] == false then return nil, "TIME: " .. tostring(time and time[2]) end
  node:observe(time, sent, sale_node.local_ms())
  for i = 1, #keys do
    local reply = replies[i]
    if type(reply) == "table" and reply[1] ~= false then
      sale_view.read(keys[i], node, entry_of(reply))
    else
      -- Not this node's key any more (MOVED, ASK: a Cluster's slot moved), or an error: not held.
      sale_view.read(keys[i], node, nil)
      if settings.values.redis.cluster then require("hmdp.edge.cluster").stale() end
      log_once.warn("sale-read:" .. node.name, "reading " .. keys[i] .. " on " .. node.name .. " failed (" .. tostring(reply and reply[2]) .. "): its orders go to the app")
    end
  end
  return true
end

return M
