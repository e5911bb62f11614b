-- The live stock of a shop's voucher list, as src/modules/seckill/vouchers/voucher-service.ts
-- answers it: the cached list holds each seckill voucher with MySQL's stock, and the app puts the
-- sale's stock in Redis in its place (the sum of stock and pending units over a bucketed sale's
-- buckets; MySQL's when Redis holds no sale). Here that stock comes from the sale's fresh view
-- (hmdp.edge.sale_view), and the list's bytes are kept but for those digits: the cached JSON is
-- the app's own serialisation (fast-json-stringify in the schema's order: "id" first, no spaces),
-- in which a raw `"` only delimits a string, so `{"id":"<digits>",` opens a voucher and
-- `"stock":` is that voucher's key.
local sale_view = require "hmdp.edge.sale_view"

local M = {}

local find, sub, format, concat = string.find, string.sub, string.format, table.concat

--- The stock the app lists for a voucher: a number, false for MySQL's, nil when not known here.
local function live_stock(id)
  local parts = sale_view.sale(id)
  if parts == nil then return nil end
  if parts == sale_view.ABSENT then return false end
  -- One part: a sale of one hash (a bucketed one has two buckets at least).
  if #parts == 1 then return parts[1].stock end
  local total = 0
  for _, part in ipairs(parts) do total = total + part.stock + part.pending end
  return total
end

--- The list's JSON with each seckill voucher's live stock, or nil when one is not known here.
function M.merge(json)
  local pieces, copied, at = {}, 1, 1
  local unknown = false
  while true do
    local start, stop, id = find(json, '{"id":"(%d+)",', at)
    if not start then break end
    local following = find(json, '{"id":"', stop, true) or #json + 1
    local key_start, digits_stop = find(json, '"stock":%-?%d+', stop)
    if key_start and key_start < following then
      local stock = live_stock(id)
      -- Every unknown one is asked for at once: the next request can then be answered here.
      if stock == nil then unknown = true end
      if stock then
        pieces[#pieces + 1] = sub(json, copied, key_start + 7)
        pieces[#pieces + 1] = format("%d", stock)
        copied = digits_stop + 1
      end
    end
    at = following
  end
  if unknown then return nil end
  pieces[#pieces + 1] = sub(json, copied)
  return concat(pieces)
end

return M
