-- A warning about one thing (a malformed record of one key, Redis unreachable) written once an hour
-- at most across the workers, so that a hot key with a bad record does not flood the error log.
local marks = ngx.shared.hmdp_edge_marks

local M = {}

local HOUR = 3600

function M.warn(what, message)
  -- add() succeeds for the first caller only while the mark lives.
  if marks:add(what, true, HOUR) then
    ngx.log(ngx.WARN, "hmdp edge: ", message)
  end
end

return M
