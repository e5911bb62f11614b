-- L1: answers already built, in a shared dict all workers read. An entry lives ttlMs with jitter
-- (entries made together do not end together), never past its record's logical expiry, and is
-- dropped when the app announces a write of its record (hmdp.edge.push). Beyond unpushedTtlMs an
-- entry is trusted only while that announcement path is known to work: without it, a change made
-- through the app is seen here after unpushedTtlMs at most.
local settings = require "hmdp.edge.settings"
local push_state = require "hmdp.edge.push_state"

local M = {}

local dict = ngx.shared.hmdp_edge_l1
local random, min, floor = math.random, math.min, math.floor

M.FOUND = 1
M.MISSING = 2

-- An entry's flags: its kind (2 bits) and when it was stored, in 10 ms units modulo 2^30 (124 days).
local KINDS = 4
local WRAP = 2 ^ 30

local function now10() return floor(ngx.now() * 100) % WRAP end

--- body, kind (FOUND or MISSING), or nil
function M.get(key)
  local body, flags = dict:get(key)
  if body == nil then return nil end
  local kind = flags % KINDS
  if not push_state.alive() then
    local age_ms = ((now10() - (flags - kind) / KINDS) % WRAP) * 10
    if age_ms > settings.values.l1.unpushedTtlMs then return nil end
  end
  return body, kind
end

--- What a read must hand back to set(): a store is skipped when an announcement came in between.
function M.generation()
  return push_state.generation()
end

function M.set(key, body, kind, expire_at_ms, generation)
  if generation ~= push_state.generation() then return end
  local l1 = settings.values.l1
  local ms = l1.ttlMs * (1 + random() * l1.jitterPercent / 100)
  if expire_at_ms then ms = min(ms, expire_at_ms - ngx.now() * 1000) end
  if ms < 1 then return end
  -- When the dict is full, set() drops the least recently used entries: a cache, not a store.
  dict:set(key, body, ms / 1000, kind + KINDS * now10())
end

--- An announced write of the entry's record (a read in flight cannot store what it read before).
function M.drop(key)
  push_state.bump()
  dict:delete(key)
end

--- Everything, when announcements may have been missed (the push path was down).
function M.flush()
  push_state.bump()
  dict:flush_all()
end

return M
