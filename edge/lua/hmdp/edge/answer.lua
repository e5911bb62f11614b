-- Sends an answer built at the edge with the headers the app sends with its own (src/app.ts):
-- helmet's security headers (and CORS' vary and exposed headers when CORS_ORIGINS is set),
-- x-request-id, the JSON content type and the length, then ends the request (from the access
-- phase: proxy_pass is not reached).
local settings = require "hmdp.edge.settings"
local request_id = require "hmdp.edge.request_id"

local M = {}

local headers

function M.send(status, body, extra_name, extra_value)
  headers = headers or settings.values.headers
  local header = ngx.header
  for name, value in pairs(headers) do header[name] = value end
  header["x-request-id"] = request_id.of_request()
  if extra_name then header[extra_name] = extra_value end
  header["content-type"] = "application/json; charset=utf-8"
  header["content-length"] = #body
  ngx.status = status
  ngx.print(body)
  return ngx.exit(status)
end

return M
