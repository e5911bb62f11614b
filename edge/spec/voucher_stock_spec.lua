-- voucher_stock: a list's JSON merged with the views given ({id -> {absent} or {parts, bucketed}}),
-- all fresh; false when one of the list's sales has no view.
local sale_view = require "hmdp.edge.sale_view"
local voucher_stock = require "hmdp.edge.voucher_stock"
local clock = require "hmdp.edge.sale_clock"

local M = {}

function M.run(input)
  sale_view.init()
  for id, view in pairs(input.views) do
    sale_view.reading(id)
    sale_view.read(id, view)
  end
  sale_view.confirm(clock.local_ms())
  return voucher_stock.merge(input.json) or false
end

return M
