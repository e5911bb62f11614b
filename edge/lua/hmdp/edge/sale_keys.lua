-- The Redis keys of a sale as src/modules/seckill/keys.ts names them (SaleKeys), under the app's
-- key prefix: a voucher's hash in its shard, {seckill:N}:voucher:{id} with N = id mod shards, and
-- for a sale sold from B > 1 buckets each bucket's hash under its lane's tag,
-- {lane}:voucher:{id}:b{b}of{B} with lane = floor((b + 1/2) * 8 / B). The lane tags come from the
-- app (edge-settings.json), so the two can never disagree.
local settings = require "hmdp.edge.settings"

local M = {}

local byte, sub, find, match, floor = string.byte, string.sub, string.find, string.match, math.floor

--- The remainder of a decimal id of any length (ids go up to 19 digits, beyond a double's 2^53).
local function remainder(digits, divisor)
  local rest = 0
  for i = 1, #digits do rest = (rest * 10 + byte(digits, i) - 48) % divisor end
  return rest
end

--- The voucher's own hash: its sale, or the layout record {buckets, begin, end} of a bucketed one.
function M.voucher(id)
  local values = settings.values
  return values.keyPrefix .. "{seckill:" .. remainder(id, values.sales.shards) .. "}:voucher:" .. id
end

--- Bucket b (0-based) of a sale sold from `of` buckets.
function M.bucket(id, b, of)
  local values = settings.values
  local tags = values.sales.laneTags
  local lane = floor((b + 0.5) * #tags / of)
  return values.keyPrefix .. tags[lane + 1] .. ":voucher:" .. id .. ":b" .. b .. "of" .. of
end

--- The voucher id of a sale hash's key (either form), or nil for any other key.
function M.voucher_of(key)
  local prefix = settings.values.keyPrefix
  if sub(key, 1, #prefix) ~= prefix then return nil end
  local start = #prefix + 1
  if byte(key, start) ~= 123 then return nil end -- "{"
  local close = find(key, "}", start + 1, true)
  if not close then return nil end
  return match(key, "^:voucher:(%d+)", close + 1)
end

return M
