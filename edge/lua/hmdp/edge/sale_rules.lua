-- The sale's refusal of an order as reserve.lua decides it (src/modules/seckill/sale/lua/reserve.lua,
-- decide_order), for what a view of the sale already decides for every buyer: the window (not
-- started, ended), a repair's freeze (the app's), the administrator's pause, the stock. Each part
-- of the view (the sale's hash, or each bucket's) is judged alone, and the edge refuses only when
-- every part refuses the same way: a buyer's order is decided in its home bucket, refilled from
-- the others when empty, and the edge does not know the buyer. nil means "ask the app": an order
-- that may be accepted, a judgement the clock's bounds leave open, a freeze.
local M = {}

-- A part: {stock, begin, finish, frozen_until, suspended, pending}; its node's time within [low, high].
local function refusal_of(part, low, high)
  if high < part.begin then return "not-started" end
  if low >= part.begin and low >= part.finish then return "ended" end
  if low < part.begin or high >= part.finish then return nil end
  -- Frozen (a reconciliation's repair): the app answers; after the freeze the rules go on.
  if low < part.frozen_until then return nil end
  if part.suspended then return "suspended" end
  if part.stock <= 0 and part.pending <= 0 then return "sold-out" end
  return nil
end

--- "not-started" | "ended" | "suspended" | "sold-out" | nil, for a sale's parts; `now_of(part)` is
--- the earliest and latest time its node's clock may show (nil: unknown, the app decides).
function M.refusal(parts, now_of)
  local first
  for i = 1, #parts do
    local low, high = now_of(parts[i])
    if not low then return nil end
    local refusal = refusal_of(parts[i], low, high)
    if refusal == nil or (first and refusal ~= first) then return nil end
    first = refusal
  end
  return first
end

return M
