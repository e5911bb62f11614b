-- x-request-id as the app sets it (src/app.ts genReqId): a caller's id kept when it looks sane
-- (1 to 64 of [A-Za-z0-9_.:-]), else a new random UUID (v4, lowercase, as crypto.randomUUID).
local M = {}

local re_find, sub, tonumber, format = ngx.re.find, string.sub, tonumber, string.format
local VARIANT = { [0] = "8", "9", "a", "b" }

--- A version 4 UUID from nginx's $request_id (16 random bytes in hex).
local function uuid()
  local hex = ngx.var.request_id
  local variant = VARIANT[tonumber(sub(hex, 17, 17), 16) % 4]
  return format("%s-%s-4%s-%s%s-%s", sub(hex, 1, 8), sub(hex, 9, 12), sub(hex, 14, 16), variant, sub(hex, 18, 20), sub(hex, 21, 32))
end

function M.of_request()
  local incoming = ngx.var.http_x_request_id
  if incoming == nil or not re_find(incoming, [[^[A-Za-z0-9_.:-]{1,64}$]], "jo") then return uuid() end
  -- Node joins a header given twice with ", ", which the app's rule refuses.
  if type(ngx.req.get_headers()["x-request-id"]) == "table" then return uuid() end
  return incoming
end

return M
