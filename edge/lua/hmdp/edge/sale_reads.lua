-- Reads sales' hashes for their views (hmdp.edge.sale_view), on the watcher's tracked connection:
-- in one round trip each wanted voucher's own hash and TIME; then, for a sale sold from B > 1
-- buckets (its hash is a layout record {buckets, begin, end}), every bucket's hash in a second.
-- Each hash read is tracked by Redis from then on, so its next write reaches the watcher.
local sale_keys = require "hmdp.edge.sale_keys"
local sale_view = require "hmdp.edge.sale_view"
local clock = require "hmdp.edge.sale_clock"

local M = {}

local null = ngx.null
local FIELDS = { "stock", "begin", "end", "frozen_until", "suspended", "pending", "buckets" }
local MAX_BUCKETS = 64

local function number(value, default)
  if value == null or value == nil then return default end
  return tonumber(value)
end

--- A hash's fields as a part of a view, or nil when it holds no sale (or fields the edge cannot read).
local function part_of(fields)
  local stock, begin, finish = number(fields[1]), number(fields[2]), number(fields[3])
  if not (stock and begin and finish) then return nil end
  return {
    stock = stock,
    begin = begin,
    finish = finish,
    frozen_until = number(fields[4], 0) or math.huge,
    suspended = fields[5] ~= null,
    pending = number(fields[6], 0) or math.huge,
  }
end

--- Sends HMGET of the fields for each key, then TIME; returns the replies and the TIME bounds.
local function read_hashes(reader, keys)
  reader:init_pipeline(#keys + 1)
  for i = 1, #keys do reader:hmget(keys[i], unpack(FIELDS)) end
  reader:time()
  local sent = clock.local_ms()
  local replies, err = reader:commit_pipeline()
  if not replies then return nil, err end
  for i = 1, #replies do
    if type(replies[i]) ~= "table" or replies[i][1] == false then return nil, "reply " .. i .. ": " .. tostring(replies[i] and replies[i][2]) end
  end
  clock.observe(replies[#replies], sent, clock.local_ms())
  return replies
end

--- The views of the given vouchers, stored unless invalidated while they were read. nil, err
--- when Redis failed (the watcher then starts over).
function M.read(reader, ids)
  for i = 1, #ids do sale_view.reading(ids[i]) end
  local keys = {}
  for i = 1, #ids do keys[i] = sale_keys.voucher(ids[i]) end
  local replies, err = read_hashes(reader, keys)
  if not replies then return nil, err end
  local bucketed, bucket_keys = {}, {}
  for i = 1, #ids do
    local fields = replies[i]
    local buckets = number(fields[7], 1)
    if buckets and buckets > 1 and buckets <= MAX_BUCKETS and buckets % 1 == 0 then
      bucketed[#bucketed + 1] = { id = ids[i], first = #bucket_keys + 1, of = buckets }
      for b = 0, buckets - 1 do bucket_keys[#bucket_keys + 1] = sale_keys.bucket(ids[i], b, buckets) end
    else
      local part = part_of(fields)
      sale_view.read(ids[i], part and { parts = { part } } or { absent = true })
    end
  end
  if #bucketed == 0 then return true end
  replies, err = read_hashes(reader, bucket_keys)
  if not replies then return nil, err end
  for _, sale in ipairs(bucketed) do
    local parts = {}
    for b = 0, sale.of - 1 do
      local part = part_of(replies[sale.first + b])
      -- A bucket without its hash (a layout being changed): the app decides.
      if not part then parts = nil break end
      parts[b + 1] = part
    end
    sale_view.read(sale.id, parts and { parts = parts, bucketed = true } or { absent = true })
  end
  return true
end

return M
