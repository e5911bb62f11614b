-- Unique visitors, counted for the answers given at the edge as the app counts its own
-- (src/modules/social/uv-service.ts, UV_TRACKING): a successful GET is a visit of the site, a
-- shop's page also of the shop; the visitor is ip:<client address> (the edge answers no request
-- with a login token). Buffered per worker, written every flushMs as one PFADD per key (and
-- EXPIRE when it changed), to the app's keys uv:site:{yyyyMMdd} and uv:shop:{id}:{yyyyMMdd}, the
-- day in Asia/Shanghai.
local settings = require "hmdp.edge.settings"
local l2 = require "hmdp.edge.l2"
local log_once = require "hmdp.edge.log_once"

local M = {}

local UV_TTL_SECONDS = 400 * 24 * 3600
local SHANGHAI_OFFSET = 8 * 3600
local MAX_BUFFERED = 10000
local CHUNK = 1000

local pending, buffered = {}, 0
local stamp_second, stamp = -1, nil
local flushing_soon = false

local function today()
  local now = ngx.time()
  if now ~= stamp_second then
    stamp_second, stamp = now, os.date("!%Y%m%d", now + SHANGHAI_OFFSET)
  end
  return stamp
end

local function add(key, visitor)
  local visitors = pending[key]
  if not visitors then
    visitors = {}
    pending[key] = visitors
  end
  if not visitors[visitor] then
    visitors[visitor] = true
    buffered = buffered + 1
  end
end

--- On a Redis Cluster each key is on the node of its slot: its commands go there one by one.
local function write_each(batch)
  for key, visitors in pairs(batch) do
    local members = {}
    for visitor in pairs(visitors) do members[#members + 1] = visitor end
    local changed = false
    for i = 1, #members, CHUNK do
      local answer, err = l2.command(key, "pfadd", key, unpack(members, i, math.min(i + CHUNK - 1, #members)))
      if not answer then return nil, err end
      changed = changed or answer == 1
    end
    if changed then
      local ok, err = l2.command(key, "expire", key, UV_TTL_SECONDS)
      if not ok then return nil, err end
    end
  end
  return true
end

local function write(batch)
  if settings.values.redis.cluster then return write_each(batch) end
  local client, err = l2.connect()
  if not client then return nil, err end
  local keys = {}
  client:init_pipeline()
  for key, visitors in pairs(batch) do
    local members = {}
    for visitor in pairs(visitors) do members[#members + 1] = visitor end
    for i = 1, #members, CHUNK do
      keys[#keys + 1] = key
      client:pfadd(key, unpack(members, i, math.min(i + CHUNK - 1, #members)))
    end
  end
  local answers
  answers, err = client:commit_pipeline()
  if not answers then return l2.failed(client, err) end
  local changed = {}
  for i, answer in ipairs(answers) do
    if answer == 1 then changed[keys[i]] = true end
  end
  if next(changed) then
    client:init_pipeline()
    for key in pairs(changed) do client:expire(key, UV_TTL_SECONDS) end
    answers, err = client:commit_pipeline()
    if not answers then return l2.failed(client, err) end
  end
  l2.release(client)
  return true
end

local function flush()
  flushing_soon = false
  if buffered == 0 then return end
  local batch = pending
  pending, buffered = {}, 0
  local ok, err = write(batch)
  -- As the app: a visit not written is an estimate a little low, never an error for a client.
  if not ok then log_once.warn("visits", "could not record visits: " .. tostring(err)) end
end

--- Records a visit of the site and, with an id, of that shop.
function M.record(shop_id)
  local values = settings.values
  if not values.visits.enabled then return end
  local day = today()
  local visitor = "ip:" .. ngx.var.remote_addr
  add(values.keyPrefix .. "uv:site:" .. day, visitor)
  if shop_id then add(values.keyPrefix .. "uv:shop:" .. shop_id .. ":" .. day, visitor) end
  if buffered >= MAX_BUFFERED and not flushing_soon then
    flushing_soon = true
    ngx.timer.at(0, flush)
  end
end

--- In each worker (init_worker): the flush every flushMs, and a last one when the worker exits.
function M.start()
  local values = settings.values
  if not (values.reads and values.visits.enabled) then return end
  ngx.timer.every(values.visits.flushMs / 1000, flush)
end

return M
