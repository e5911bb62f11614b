-- hmdp.edge.header_count on the spec request's own headers: the input names the headers to count.
local header_count = require "hmdp.edge.header_count"

local M = {}

function M.run(names)
  local counts = {}
  for _, name in ipairs(names) do counts[name] = { count = header_count.of(name), repeated = header_count.repeated(name) } end
  return counts
end

return M
