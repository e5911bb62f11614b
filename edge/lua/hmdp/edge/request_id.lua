-- x-request-id as the app sets it (src/app.ts genReqId): a caller's id kept when it looks sane
-- (1 to 64 of [A-Za-z0-9_.:-]), else a new UUID in the version 4 form (lowercase, as
-- crypto.randomUUID writes it). Its bits are 72 random ones drawn once per worker from
-- /dev/urandom and a 48-bit counter: unique across workers and restarts, and no OpenSSL
-- RAND_bytes per request as nginx's $request_id costs (a measured share of an edge's answer).
local header_count = require "hmdp.edge.header_count"

local M = {}

local re_find, format, byte, sub = ngx.re.find, string.format, string.byte, string.sub
local VARIANT = { [0] = "8", "9", "a", "b" }

local prefix, counter = nil, 0

--- The worker's random part, "xxxxxxxx-xxxx-4xxx-Vxxx-" (init_worker).
function M.start()
  local file = assert(io.open("/dev/urandom", "rb"))
  local bytes = file:read(10)
  file:close()
  local hex = format(string.rep("%02x", 10), byte(bytes, 1, 10))
  prefix = format("%s-%s-4%s-%s%s-", sub(hex, 1, 8), sub(hex, 9, 12), sub(hex, 13, 15), VARIANT[byte(bytes, 9) % 4], sub(hex, 17, 19))
end

local function uuid()
  counter = counter + 1
  return prefix .. format("%012x", counter % 281474976710656)
end

function M.of_request()
  local incoming = ngx.var.http_x_request_id
  if incoming == nil or not re_find(incoming, [[^[A-Za-z0-9_.:-]{1,64}$]], "jo") then return uuid() end
  -- Node joins a header given twice with ", ", which the app's rule refuses.
  if header_count.repeated("x-request-id") then return uuid() end
  return incoming
end

return M
