-- What L1 needs to know of the push (hmdp.edge.push), shared by the workers in hmdp_edge_marks:
-- whether the announcement path worked a moment ago (the subscriber saw its own heartbeat), and a
-- generation counted up by every drop, so that a read that fetched a record before a drop does not
-- store it after.
local marks = ngx.shared.hmdp_edge_marks

local M = {}

local ALIVE, GENERATION = "push:alive", "push:generation"

function M.alive() return marks:get(ALIVE) == true end

--- The subscriber saw its heartbeat: the path is trusted for `seconds` more.
function M.confirm(seconds) marks:set(ALIVE, true, seconds) end

function M.lost() marks:delete(ALIVE) end

function M.generation() return marks:get(GENERATION) or 0 end

function M.bump() marks:incr(GENERATION, 1, 0) end

return M
