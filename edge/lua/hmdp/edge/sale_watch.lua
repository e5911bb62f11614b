-- The watcher of the sales, one per worker (each worker holds its own views, hmdp.edge.sale_view):
-- two connections to Redis, run by two light threads of one timer.
--   the reader   reads the sales' hashes with client tracking on (CLIENT TRACKING ON REDIRECT to
--                the subscriber: Redis remembers what it read), sends the heartbeat, reads TIME;
--   the subscriber receives __redis__:invalidate (a key the reader read was written) and the
--                heartbeats, in the order Redis made them.
-- When either fails, both are closed, everything held is forgotten (invalidations may have been
-- missed) and the pair is made again a second later: until then nothing is refused here.
local redis = require "nginx.redis"
local settings = require "hmdp.edge.settings"
local sale_keys = require "hmdp.edge.sale_keys"
local sale_view = require "hmdp.edge.sale_view"
local sale_reads = require "hmdp.edge.sale_reads"
local clock = require "hmdp.edge.sale_clock"
local log_once = require "hmdp.edge.log_once"

local M = {}

local INVALIDATE = "__redis__:invalidate"
local RETRY_S = 1
-- Readings per round trip, and the least time between rounds: a hot sale invalidates its view on
-- every order, and its readings must not grow with the orders.
local BATCH = 64
local ROUND_GAP_S = 0.005
-- Heartbeats remembered by number (far more than come back within freshMs).
local BEATS = 64

local beat_sent = {}

local function connect(cfg, timeout_ms, name)
  local client = redis:new()
  client:set_timeout(timeout_ms)
  local ok, err = client:connect(cfg.host, cfg.port)
  if ok and cfg.password then
    if cfg.username then ok, err = client:auth(cfg.username, cfg.password) else ok, err = client:auth(cfg.password) end
  end
  if ok and cfg.db ~= 0 then ok, err = client:select(cfg.db) end
  -- Named after the deployment's prefix, so that an operator (or a test) finds it in CLIENT LIST.
  if ok then ok, err = client:client("setname", name) end
  if not ok then
    client:close()
    return nil, err
  end
  return client
end

--- The subscriber's loop: invalidations drop views, heartbeats confirm the path. Ends on an error,
--- or on a silence as long as a read timeout: heartbeats come far more often.
local function listen(subscriber, beat_channel)
  while not ngx.worker.exiting() do
    local reply, err = subscriber:read_reply()
    if not reply then return "subscriber: " .. tostring(err) end
    if reply[1] == "message" then
      if reply[2] == INVALIDATE then
        local keys = reply[3]
        if type(keys) ~= "table" then
          sale_view.invalidated(nil)
        else
          for i = 1, #keys do
            local id = sale_keys.voucher_of(keys[i])
            if id then sale_view.invalidated(id) end
          end
        end
      elseif reply[2] == beat_channel then
        local sent = beat_sent[tonumber(reply[3]) % BEATS]
        if sent then sale_view.confirm(sent) end
      end
    end
  end
end

--- One heartbeat: PUBLISH its number on the subscriber's own channel, and TIME for the clock.
local function beat(reader, beat_channel, number)
  reader:init_pipeline(2)
  reader:publish(beat_channel, number)
  reader:time()
  local sent = clock.local_ms()
  beat_sent[number % BEATS] = sent
  local replies, err = reader:commit_pipeline()
  if not replies then return nil, err end
  if type(replies[2]) ~= "table" then return nil, "TIME: " .. tostring(replies[2] and replies[2][2]) end
  clock.observe(replies[2], sent, clock.local_ms())
  return true
end

--- The reader's loop: a heartbeat every beatMs, the wanted sales read as soon as they are wanted.
local function read(reader, beat_channel)
  local cfg = settings.values.sales
  local number, next_beat = 0, 0
  while not ngx.worker.exiting() do
    local now = clock.local_ms()
    if now >= next_beat then
      number = number + 1
      local ok, err = beat(reader, beat_channel, number)
      if not ok then return "heartbeat: " .. tostring(err) end
      next_beat = now + cfg.beatMs
    end
    local ids = sale_view.take_wanted(BATCH)
    if #ids > 0 then
      local ok, err = sale_reads.read(reader, ids)
      if not ok then return "reading: " .. tostring(err) end
      ngx.sleep(ROUND_GAP_S)
    else
      sale_view.wait(math.max(0.001, (next_beat - clock.local_ms()) / 1000))
    end
  end
end

--- One life of the pair: made, run until either thread ends, closed.
local function watch()
  local values = settings.values
  local cfg = values.redis
  local name = "hmdp-edge-sale:" .. values.keyPrefix
  local beat_channel = values.keyPrefix .. "edge:beat:" .. ngx.worker.pid() .. ":" .. math.random(1e9)
  local subscriber, err = connect(cfg, values.sales.silenceMs, name)
  if not subscriber then return "connect: " .. tostring(err) end
  local subscriber_id, reader, ok
  subscriber_id, err = subscriber:client("id")
  if subscriber_id then reader, err = connect(cfg, cfg.timeoutMs, name) end
  if reader then ok, err = reader:client("tracking", "on", "redirect", subscriber_id) end
  -- Subscribed before the first reading: an invalidation is never sent where nobody listens.
  if ok then ok, err = subscriber:subscribe(INVALIDATE, beat_channel) end
  if not ok then
    subscriber:close()
    if reader then reader:close() end
    return "connect: " .. tostring(err)
  end
  local listening = ngx.thread.spawn(listen, subscriber, beat_channel)
  local reading = ngx.thread.spawn(read, reader, beat_channel)
  local _, why = ngx.thread.wait(listening, reading)
  if ngx.worker.exiting() then why = nil end
  ngx.thread.kill(listening)
  ngx.thread.kill(reading)
  subscriber:close()
  reader:close()
  return why
end

local loop

loop = function(premature)
  if premature then return end
  local why = watch()
  sale_view.forget()
  if ngx.worker.exiting() then return end
  log_once.warn("sale-watch:" .. tostring(why), "the sale watcher stopped (" .. tostring(why) .. "): orders go to the app until it is back")
  ngx.timer.at(RETRY_S, loop)
end

--- In every worker (init_worker): the views and their watcher, when the sale's refusals are on.
function M.start()
  if not settings.values.sales then return end
  sale_view.init()
  ngx.timer.at(0, loop)
end

return M
