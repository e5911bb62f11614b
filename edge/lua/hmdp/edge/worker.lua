-- What each worker starts with (init_worker_by_lua): its own random sequence (L1's jitter) and the
-- visits' flush timer.
local visits = require "hmdp.edge.visits"

local M = {}

function M.start()
  math.randomseed(ngx.now() * 1000 + ngx.worker.pid())
  visits.start()
end

return M
