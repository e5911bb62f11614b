-- The language of a request's messages, chosen as the app chooses it (src/http/language.ts:
-- negotiator's preferred language among ["zh", "en"], the default first): by Accept-Language and
-- its q-values, "zh", "zh-CN" Chinese, "en-*" English, no header or neither of them the default.
-- Only headers of the plain form browsers send (tags, optional ";q=" values) are decided here;
-- for any other the caller lets the app answer, which then decides by its own parser.
local header_count = require "hmdp.edge.header_count"

local M = {}

local gmatch, match, lower, sort = string.gmatch, string.match, string.lower, table.sort

--- The accepted ranges of a header as negotiator parses them, or nil outside the plain form.
local function parse(header)
  local ranges = {}
  for item in gmatch(header .. ",", "([^,]*),") do
    item = match(item, "^[ \t]*(.-)[ \t]*$")
    local tag, q = match(item, "^([%w%-%*]+)$"), "1"
    if not tag then
      tag, q = match(item, "^([%w%-%*]+);[ \t]*[qQ]=([%d%.]+)$")
      if not tag then return nil end
    end
    if not (tag == "*" or match(tag, "^%a%a?%a?%a?%a?%a?%a?%a?$") or match(tag, "^%a%a?%a?%a?%a?%a?%a?%a?%-[%w%-]+$")) then return nil end
    if not (q == "0" or q == "1" or match(q, "^0%.%d%d?%d?$") or match(q, "^1%.00?0?$")) then return nil end
    tag = lower(tag)
    ranges[#ranges + 1] = { full = tag, prefix = match(tag, "^([^%-]*)"), q = tonumber(q) or 0, i = #ranges }
  end
  return ranges
end

--- negotiator's getLanguagePriority for an offer ("zh", "en": its full tag is its prefix).
local function priority(offer, index, ranges)
  local best = { o = -1, q = 0, s = 0, i = index, offer = offer }
  for _, range in ipairs(ranges) do
    local s
    if range.full == offer then
      s = 4
    elseif range.prefix == offer then
      s = 2
    elseif range.full == "*" then
      s = 0
    end
    if s then
      local d = best.s - s
      if d == 0 then d = best.q - range.q end
      if d == 0 then d = best.o - range.i end
      if d < 0 then best = { o = range.i, q = range.q, s = s, i = index, offer = offer } end
    end
  end
  return best
end

local function before(a, b)
  if a.q ~= b.q then return a.q > b.q end
  if a.s ~= b.s then return a.s > b.s end
  if a.o ~= b.o then return a.o < b.o end
  return a.i < b.i
end

local OTHER = { zh = "en", en = "zh" }

local function choose(header, default)
  local ranges = parse(header)
  if not ranges then return nil end
  local candidates = {}
  for index, offer in ipairs({ default, OTHER[default] }) do
    local p = priority(offer, index, ranges)
    if p.q > 0 then candidates[#candidates + 1] = p end
  end
  if #candidates == 0 then return default end
  sort(candidates, before)
  return candidates[1].offer
end

-- Browsers send a handful of distinct headers: remember the answers (per worker, bounded).
local known, size, MAX = {}, 0, 1000

--- "zh" | "en", or nil when the app must decide (a header outside the plain form, or given twice).
function M.of_request(default)
  local header = ngx.var.http_accept_language
  if header == nil then return default end
  -- Node joins a header given twice with ", "; nginx's variable holds the first: let the app answer.
  if header_count.repeated("accept-language") then return nil end
  local key = default .. "|" .. header
  local language = known[key]
  if language == nil then
    language = choose(header, default) or false
    if #header <= 200 then
      if size >= MAX then known, size = {}, 0 end
      known[key], size = language, size + 1
    end
  end
  return language or nil
end

M.choose = choose

return M
