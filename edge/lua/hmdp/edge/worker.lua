-- What each worker starts with (init_worker_by_lua): its own random sequence (L1's jitter) and
-- request ids, the visits' flush timer, its watcher of the sales, and in worker 0 the subscriber
-- of the app's announcements.
local visits = require "hmdp.edge.visits"
local request_id = require "hmdp.edge.request_id"
local push = require "hmdp.edge.push"
local sale_watch = require "hmdp.edge.sale_watch"

local M = {}

function M.start()
  math.randomseed(ngx.now() * 1000 + ngx.worker.pid())
  request_id.start()
  visits.start()
  push.start()
  sale_watch.start()
end

return M
