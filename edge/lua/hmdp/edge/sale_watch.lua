-- The watcher of the sales, in each worker (each holds its own views, hmdp.edge.sale_view): per
-- Redis node (hmdp.edge.sale_nodes), two connections run by two light threads of one timer.
--   the reader   reads the sales' hashes with client tracking on (CLIENT TRACKING ON REDIRECT to
--                the subscriber: Redis remembers what it read), sends the heartbeat, reads TIME;
--   the subscriber receives __redis__:invalidate (a key the reader read was written) and the
--                heartbeats, in the order Redis made them.
-- When either fails, both are closed, everything held is forgotten (invalidations may have been
-- missed) and the pair is made again a second later: until then nothing is refused here.
local redis_connection = require "hmdp.edge.redis_connection"
local settings = require "hmdp.edge.settings"
local sale_view = require "hmdp.edge.sale_view"
local sale_reads = require "hmdp.edge.sale_reads"
local sale_nodes = require "hmdp.edge.sale_nodes"
local sale_node = require "hmdp.edge.sale_node"
local log_once = require "hmdp.edge.log_once"

local M = {}

local INVALIDATE = "__redis__:invalidate"
local RETRY_S = 1
-- Readings per round trip (rounds come at most every sales.readGapMs: a hot sale invalidates its
-- view on every order, and its readings must not grow with the orders).
local BATCH = 64
local MAP_CHECK_MS = 1000
-- Heartbeats remembered by number (far more than come back within freshMs).
local BEATS = 64

local function connect(cfg, timeout_ms, name)
  local client, err = redis_connection.dedicated(cfg.host, cfg.port, timeout_ms, name)
  if client and cfg.db and cfg.db ~= 0 then
    local ok
    ok, err = client:select(cfg.db)
    if not ok then
      client:close()
      return nil, err
    end
  end
  return client, err
end

--- The subscriber's loop: invalidations drop entries, heartbeats confirm the node's push. Ends on
--- an error, or on a silence as long as its read timeout: heartbeats come far more often.
local function listen(subscriber, pair)
  local node = pair.node
  while not ngx.worker.exiting() do
    local reply, err = subscriber:read_reply()
    if not reply then return "subscriber: " .. tostring(err) end
    if reply[1] == "message" then
      if reply[2] == INVALIDATE then
        local keys = reply[3]
        if type(keys) ~= "table" then
          sale_view.invalidated(nil, node)
        else
          for i = 1, #keys do sale_view.invalidated(keys[i], node) end
        end
      elseif reply[2] == pair.channel then
        local sent = pair.beats[tonumber(reply[3]) % BEATS]
        if sent then node:confirm(sent) end
      end
    end
  end
end

--- One heartbeat: PUBLISH its number on the subscriber's own channel, and TIME for the clock.
local function beat(reader, pair, number)
  reader:init_pipeline(2)
  reader:publish(pair.channel, number)
  reader:time()
  local sent = sale_node.local_ms()
  pair.beats[number % BEATS] = sent
  local replies, err = reader:commit_pipeline()
  if not replies then return nil, err end
  if type(replies[2]) ~= "table" then return nil, "TIME: " .. tostring(replies[2] and replies[2][2]) end
  pair.node:observe(replies[2], sent, sale_node.local_ms())
  return true
end

--- The reader's loop: a heartbeat every beatMs whatever else it does (a late one makes the node
--- stale), and the wanted keys read in rounds at most every ROUND_GAP_MS.
local function read(reader, pair)
  local node, beat_ms, read_gap_ms = pair.node, settings.values.sales.beatMs, settings.values.sales.readGapMs
  local clustered = settings.values.redis.cluster ~= nil
  local number, next_beat, next_round, next_map = 0, 0, 0, 0
  while not ngx.worker.exiting() do
    local now = sale_node.local_ms()
    if now >= next_beat then
      number = number + 1
      local ok, err = beat(reader, pair, number)
      if not ok then return "heartbeat: " .. tostring(err) end
      next_beat = now + beat_ms
    end
    -- A Cluster may fail a master over while this node still answers (a partition): the map is
    -- asked again every second, so that keys move to their new master's pair within about that.
    if clustered and now >= next_map then
      require("hmdp.edge.cluster").stale()
      next_map = now + MAP_CHECK_MS
    end
    if node.wanted_count == 0 then
      node:wait(math.max(0.001, (next_beat - sale_node.local_ms()) / 1000))
    elseif now >= next_round then
      local ok, err = sale_reads.read(reader, node, node:take_wanted(BATCH))
      if not ok then return "reading: " .. tostring(err) end
      next_round = now + read_gap_ms
    else
      ngx.sleep(math.max(0.001, (math.min(next_beat, next_round) - sale_node.local_ms()) / 1000))
    end
  end
end

--- One life of a node's pair: made, run until either thread ends, closed.
local function watch(target)
  local values = settings.values
  local cfg = setmetatable({ host = target.host, port = target.port }, { __index = values.redis })
  local name = "hmdp-edge-sale:" .. values.keyPrefix
  local pair = { node = target.node, beats = {}, channel = values.keyPrefix .. "edge:beat:" .. ngx.worker.pid() .. ":" .. math.random(1e9) }
  local subscriber, err = connect(cfg, values.sales.silenceMs, name)
  if not subscriber then return "connect: " .. tostring(err) end
  local subscriber_id, reader, ok
  subscriber_id, err = subscriber:client("id")
  if subscriber_id then reader, err = connect(cfg, cfg.timeoutMs, name) end
  if reader then ok, err = reader:client("tracking", "on", "redirect", subscriber_id) end
  -- Subscribed before the first reading: an invalidation is never sent where nobody listens.
  if ok then ok, err = subscriber:subscribe(INVALIDATE, pair.channel) end
  if not ok then
    subscriber:close()
    if reader then reader:close() end
    return "connect: " .. tostring(err)
  end
  local listening = ngx.thread.spawn(listen, subscriber, pair)
  local reading = ngx.thread.spawn(read, reader, pair)
  local _, why = ngx.thread.wait(listening, reading)
  if ngx.worker.exiting() then why = nil end
  ngx.thread.kill(listening)
  ngx.thread.kill(reading)
  subscriber:close()
  reader:close()
  return why
end

local loop

--- A node's pair, made again a second after each loss, for as long as the node is to be watched.
loop = function(premature, target)
  if premature then return end
  local why = watch(target)
  sale_view.forget(target.node)
  if ngx.worker.exiting() then return end
  -- On a Cluster a node lost may be a master failed over: the map is asked for again.
  if settings.values.redis.cluster then require("hmdp.edge.cluster").stale() end
  log_once.warn("sale-watch:" .. target.name .. ":" .. tostring(why), "the sale watcher of " .. target.name .. " stopped (" .. tostring(why) .. "): orders of its sales go to the app until it is back")
  ngx.timer.at(RETRY_S, loop, target)
end

local function started(target) ngx.timer.at(0, loop, target) end

--- In every worker (init_worker): the views and their watchers, when the sale's refusals are on.
--- A pair runs for each node there is (a Cluster's masters: its map is asked for in a timer), and
--- for each node met later; a node that stops serving keys keeps its pair, which costs a heartbeat.
function M.start()
  if not settings.values.sales then return end
  sale_view.init()
  ngx.timer.at(0, function(premature)
    if not premature then sale_nodes.watch(started) end
  end)
end

return M
