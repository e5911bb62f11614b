-- Push invalidation of L1: the app announces every write of a cached record (src/lib/cache
-- changeChannel: PUBLISH <prefix>cache:changes <key>), and one subscriber, in worker 0 (L1 is a
-- dict all workers share), drops the matching L1 entry. It publishes a heartbeat of its own every
-- half second and counts the path alive while the heartbeat comes back (push_state): a connection
-- lost, a Redis stalled or a subscription gone shows as silence within ALIVE_S, and L1 is then
-- trusted only for its short life. After every (re)subscription L1 is emptied: announcements may
-- have been missed meanwhile. On a Redis Cluster a PUBLISH reaches the subscribers of every node,
-- so the subscriber listens on one node, the first of the seeds that answers (taken in turn after
-- each loss), and its heartbeat goes through the node of the channel's slot.
local settings = require "hmdp.edge.settings"
local redis_connection = require "hmdp.edge.redis_connection"
local l1 = require "hmdp.edge.l1"
local l2 = require "hmdp.edge.l2"
local push_state = require "hmdp.edge.push_state"
local log_once = require "hmdp.edge.log_once"

local M = {}

local BEAT_S = 0.5
local ALIVE_S = 1.5
local RETRY_S = 1
local match, byte = string.match, string.byte

--- The L1 key of an announced record key, or nil for a key L1 does not hold.
local function l1_key(key)
  local id = match(key, "^cache:shop:(%d+)$")
  if id then return "shop:" .. id end
  if key == "cache:type" then return "shop-types" end
  id = match(key, "^cache:voucher%-list:(%d+)$")
  if id then return "voucher-list:" .. id end
  return nil
end

local function beat(channel, token)
  l2.command(channel, "publish", channel, token)
end

--- A subscription on host:port, or nil, err.
local function subscribe_at(cfg, host, port, channel)
  local client, err = redis_connection.dedicated(host, port, BEAT_S * 1000, "hmdp-edge-push:" .. settings.values.keyPrefix)
  local ok = client ~= nil
  if ok then ok, err = client:subscribe(channel) end
  if not ok then
    if client then client:close() end
    return nil, host .. ":" .. port .. ": " .. tostring(err)
  end
  return client
end

-- The seed of a Cluster the last subscription was on: the next one begins with the seed after it.
local last_seed = 0

--- A subscription on the standalone Redis, or on the first seed of the Cluster that answers.
local function subscribe(cfg, channel)
  if not cfg.cluster then return subscribe_at(cfg, cfg.host, cfg.port, channel) end
  local client, err
  for _ = 1, #cfg.cluster do
    last_seed = last_seed % #cfg.cluster + 1
    local seed = cfg.cluster[last_seed]
    client, err = subscribe_at(cfg, seed.host, seed.port, channel)
    if client then return client end
  end
  return nil, err
end

local listen

--- One subscription's life: drop what is announced until the connection fails, then retry.
listen = function(premature)
  if premature then return end
  local values = settings.values
  local channel = values.keyPrefix .. "cache:changes"
  local token = "~beat:" .. ngx.worker.pid() .. ":" .. math.random(1e9)
  local client, err = subscribe(values.redis, channel)
  if client then
    l1.flush()
    local last_beat = 0
    while not ngx.worker.exiting() do
      local now = ngx.now()
      if now - last_beat >= BEAT_S then
        last_beat = now
        beat(channel, token)
      end
      local reply
      reply, err = client:read_reply()
      if reply then
        local key = reply[1] == "message" and reply[3]
        if key == token then
          push_state.confirm(ALIVE_S)
        elseif key and byte(key, 1) ~= 126 then -- "~": another edge's heartbeat
          local entry = l1_key(key)
          if entry then l1.drop(entry) end
        end
      elseif err ~= "timeout" then
        break
      end
    end
    client:close()
  end
  -- A worker leaving (reload, stop) leaves the flag to its successor's subscriber, or to its expiry.
  if ngx.worker.exiting() then return end
  push_state.lost()
  log_once.warn("push:" .. tostring(err), "the push of changes stopped (" .. tostring(err) .. "): L1 is trusted for " .. values.l1.unpushedTtlMs .. " ms until it is back")
  ngx.timer.at(RETRY_S, listen)
end

--- In worker 0 (init_worker): the subscriber, when reads are on and the push is wanted.
function M.start()
  local values = settings.values
  if not (values.reads and values.push) or ngx.worker.id() ~= 0 then return end
  ngx.timer.at(0, listen)
end

return M
