-- voucher_stock: a list's JSON merged with the sales given ({id -> {stock[, pending]} for a sale
-- of one hash, {buckets = {{stock, pending}, ...}} for a bucketed one, "absent"}), all read and
-- fresh; false when one of the list's sales is not known.
local sale_view = require "hmdp.edge.sale_view"
local sale_keys = require "hmdp.edge.sale_keys"
local sale_nodes = require "hmdp.edge.sale_nodes"
local sale_node = require "hmdp.edge.sale_node"
local voucher_stock = require "hmdp.edge.voucher_stock"

local M = {}

local function part(stock, pending)
  return { part = { stock = stock, pending = pending or 0, begin = 0, finish = 1, frozen_until = 0, suspended = false } }
end

local function store(key, entry)
  sale_view.reading(key)
  sale_view.read(key, sale_nodes.node_of(key), entry)
end

function M.run(input)
  sale_view.init()
  for id, sale in pairs(input.sales) do
    if sale == "absent" then
      store(sale_keys.voucher(id), { absent = true })
    elseif sale.buckets then
      store(sale_keys.voucher(id), { buckets = #sale.buckets })
      for b, bucket in ipairs(sale.buckets) do store(sale_keys.bucket(id, b - 1, #sale.buckets), part(bucket.stock, bucket.pending)) end
    else
      store(sale_keys.voucher(id), part(sale.stock, sale.pending))
    end
  end
  sale_nodes.node_of("any"):confirm(sale_node.local_ms())
  return voucher_stock.merge(input.json) or false
end

return M
