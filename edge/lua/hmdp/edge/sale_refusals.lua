-- POST /api/voucher-order/seckill/{id}: the sale's refusal answered here when the sale's fresh
-- view already decides it for every buyer (hmdp.edge.sale_rules), with the app's own body in the
-- request's language (HTTP 200, success false, as hmdp answers a refused order). Everything else
-- goes to the app (the location's proxy_pass): an order that may be accepted, a voucher not known
-- here, a view not fresh, a request with an Idempotency-Key (a retry must reach reserve.lua,
-- which replays its order even once sold out), without a login token (the app's 401), with a body
-- or a query, with an Origin the app may answer with CORS, or a language header the app's parser
-- decides. The edge never accepts an order.
local settings = require "hmdp.edge.settings"
local sale_view = require "hmdp.edge.sale_view"
local sale_rules = require "hmdp.edge.sale_rules"
local language = require "hmdp.edge.language"
local answer = require "hmdp.edge.answer"
local log_once = require "hmdp.edge.log_once"

local M = {}

local match, find, sub = string.match, string.find, string.sub

-- As src/modules/users/auth-hooks.ts reads a token: the raw token or "Bearer <token>", base64url.
local function has_token(header)
  if type(header) ~= "string" then return false end
  local token = match(header, "^%s*(.-)%s*$")
  if find(token, "Bearer ", 1, true) == 1 then token = match(sub(token, 8), "^%s*(.-)$") end
  return #token >= 16 and #token <= 128 and not find(token, "[^%w_-]")
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
  if not decided_by_sale(var) then return nil end
  local refusal = refusal_of(id)
  if not refusal then return nil end
  local chosen = language.of_request(settings.values.defaultLanguage)
  if not chosen then return nil end
  return settings.values.messages.saleRefusals[refusal][chosen]
end

--- The order route's access phase: the refusal sent, or nothing (the request goes on to the app).
function M.order(compat)
  if not settings.values.sales then return end
  local ok, body = pcall(order, compat)
  if not ok then
    log_once.warn("lua:" .. tostring(body), "error, answered by the app: " .. tostring(body))
    return
  end
  if body then
    ngx.var.hmdp_edge = "sale"
    return answer.send(200, body)
  end
end

return M
