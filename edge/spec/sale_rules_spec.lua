-- sale_rules: for each {parts, low, high}, the refusal (false for none).
local sale_rules = require "hmdp.edge.sale_rules"

local M = {}

function M.run(cases)
  local out = {}
  for i, case in ipairs(cases) do
    for _, part in ipairs(case.parts) do
      part.suspended = part.suspended == true
      part.frozen_until = part.frozen_until or 0
      part.pending = part.pending or 0
    end
    out[i] = sale_rules.refusal(case.parts, function() return case.low, case.high end) or false
  end
  return out
end

return M
