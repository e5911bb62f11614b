-- A cache record as src/lib/cache/codec.ts writes it, read as the app reads it:
--   {"data":<json>}                      a value (its Redis TTL ends it)
--   {"data":<json>,"expireAt":<ms>}      a value logically expired after expireAt
--   ""                                   the null marker: the id is known not to exist
--   ~inv:<hex>                           an invalidation tombstone: a miss
-- The value's JSON is returned as the bytes stored, never decoded and encoded again: the app
-- answers JSON.stringify(JSON.parse(those bytes)), which are those bytes for what JSON.stringify
-- wrote (codec.ts' encodeValue), while cjson would write numbers and escapes its own way.
local cjson = require("cjson.safe").new()
-- JSON.parse refuses NaN, Infinity and hex numbers: so must the check here.
cjson.decode_invalid_numbers(false)

local M = {}

local PREFIX = '{"data":'
local TOMBSTONE = "~inv:"
local EXPIRE_AT = ',"expireAt":(%d+)}$'
local sub, find, match, byte = string.sub, string.find, string.match, string.byte

--- "absent" | "null" | "value", json, expire_at (ms or nil) | "malformed", reason
function M.decode(raw, max_bytes)
  if raw == nil or raw == ngx.null then return "absent" end
  if raw == "" then return "null" end
  if find(raw, TOMBSTONE, 1, true) == 1 then return "absent" end
  if #raw > max_bytes then return "malformed", "larger than " .. max_bytes .. " bytes" end
  if find(raw, PREFIX, 1, true) ~= 1 then return "malformed", "not a {\"data\":...} record" end
  -- The record is PREFIX .. json .. suffix exactly when json alone is valid JSON: then no other
  -- field, no second "data" and nothing after can hide in it.
  local digits = match(raw, EXPIRE_AT)
  local last
  if digits then
    if (#digits > 1 and byte(digits, 1) == 48) or #digits > 16 then return "malformed", "expireAt is not a whole number of ms" end
    last = #raw - 13 - #digits
  elseif byte(raw, -1) == 125 then
    last = #raw - 1
  else
    return "malformed", "not a {\"data\":...} record"
  end
  local json = sub(raw, #PREFIX + 1, last)
  if cjson.decode(json) == nil then return "malformed", "data is not JSON" end
  return "value", json, digits and tonumber(digits)
end

return M
