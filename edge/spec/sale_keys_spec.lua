-- sale_keys: for each {id, bucket, of}, the voucher's hash, the bucket's hash, and the voucher id
-- read back from each key; the test compares them with src/modules/seckill/keys.ts (SaleKeys).
local sale_keys = require "hmdp.edge.sale_keys"

local M = {}

function M.run(cases)
  local out = {}
  for i, case in ipairs(cases) do
    local voucher = sale_keys.voucher(case.id)
    local bucket = sale_keys.bucket(case.id, case.bucket, case.of)
    out[i] = { voucher = voucher, bucket = bucket, fromVoucher = sale_keys.voucher_of(voucher), fromBucket = sale_keys.voucher_of(bucket) }
  end
  out[#out + 1] = { other = sale_keys.voucher_of("not-the-prefix:{seckill:0}:voucher:1") or false }
  return out
end

return M
