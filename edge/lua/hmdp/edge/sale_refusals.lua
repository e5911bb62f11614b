-- POST /api/voucher-order/seckill/{id}: the sale's refusal answered here when the sale's fresh
-- view already decides it for every buyer (hmdp.edge.sale_rules), with the app's own body in the
-- request's language (HTTP 200, success false, as hmdp answers a refused order). Everything else
-- goes to the app (the location's proxy_pass): an order that may be accepted, a voucher not known
-- here, a view not fresh, a request with an Idempotency-Key (a retry must reach reserve.lua,
-- which replays its order even once sold out), without a login token (the app's 401), with a body
-- or a query, with an Origin the app may answer with CORS, or a language header the app's parser
-- decides. The edge never accepts an order.
--
-- It runs in the location's set_by_lua (a plain call, no coroutine as the access phase's Lua costs)
-- and returns the body; nginx sends it with `return 200` and the headers rendered into the
-- location (src/cli/edge-render.ts), before the order limits: a refusal costs the edge what a 429
-- would, and the app nothing.
local settings = require "hmdp.edge.settings"
local sale_view = require "hmdp.edge.sale_view"
local sale_rules = require "hmdp.edge.sale_rules"
local language = require "hmdp.edge.language"
local request_id = require "hmdp.edge.request_id"
local log_once = require "hmdp.edge.log_once"

local M = {}

local match, re_find = string.match, ngx.re.find

-- As src/modules/users/auth-hooks.ts reads a token: the raw token or "Bearer <token>", base64url,
-- around whitespace (Lua's %s). One compiled regex: Lua patterns cost a microsecond a request here.
local TOKEN = [[^[ \t\n\x0b\f\r]*(?:Bearer [ \t\n\x0b\f\r]*)?[A-Za-z0-9_-]{16,128}[ \t\n\x0b\f\r]*$]]

local function has_token(header)
  return type(header) == "string" and re_find(header, TOKEN, "jo") ~= nil
end

--- Whether the app would decide this request by the sale alone: see the header of this file.
--- nginx's variables, not a table of all the headers: every order request pays this. A header
--- given twice is seen once: the app, too, reads the first authorization (Node drops the others),
--- and any Idempotency-Key or Origin at all sends the request on.
local function decided_by_sale(var)
  if var.request_method ~= "POST" then return false end
  if var.http_idempotency_key ~= nil then return false end
  if var.http_transfer_encoding ~= nil or (var.content_length ~= nil and var.content_length ~= "0") then return false end
  if settings.values.passOrigin and var.http_origin ~= nil then return false end
  return has_token(var.http_authorization)
end

local function now_of(part) return part.node:now() end

--- The refusal of a voucher by its fresh view, or nil.
local function refusal_of(id)
  local parts = sale_view.sale(id)
  if parts == nil or parts == sale_view.ABSENT then return nil end
  return sale_rules.refusal(parts, now_of)
end

local function order(compat)
  local var = ngx.var
  local id = match(var.request_uri, compat and "^/voucher%-order/seckill/([1-9]%d*)$" or "^/api/voucher%-order/seckill/([1-9]%d*)$")
  if not id or #id > 19 then return nil end
  -- The view first: an open sale's orders, most of those that come here, stop at it.
  local refusal = refusal_of(id)
  if not refusal or not decided_by_sale(var) then return nil end
  local chosen = language.of_request(settings.values.defaultLanguage)
  if not chosen then return nil end
  return settings.values.messages.saleRefusals[refusal][chosen]
end

--- The refusal's body for this request, with $hmdp_request_id and $hmdp_edge set; "" when the
--- request goes on to the app.
function M.order(compat)
  if not settings.values.sales then return "" end
  local ok, body = pcall(order, compat)
  if not ok then
    log_once.warn("lua:" .. tostring(body), "error, answered by the app: " .. tostring(body))
    return ""
  end
  if not body then return "" end
  local var = ngx.var
  var.hmdp_edge = "sale"
  var.hmdp_request_id = request_id.of_request()
  return body
end

return M
