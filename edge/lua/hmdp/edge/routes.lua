-- The reads the edge answers when it already knows the answer, level by level: L1 (answers built,
-- hmdp.edge.l1), L2 (the app's Redis record, hmdp.edge.l2 + hmdp.edge.record), else the app (L3:
-- the location's proxy_pass, reached when these functions return). Whatever the edge cannot answer
-- exactly as the app would goes to the app: a request with a login token, another method or a
-- query, an Origin the app may answer with CORS, a record missing, expired, tombstoned or
-- malformed, Redis failing, an Accept-Language outside the plain form, an error in this code.
--
-- An L1 hit is decided in the location's set_by_lua (M.from_l1: a plain call, no coroutine) and
-- sent by nginx (`return` with the app's headers, answer-headers.conf); the rest goes on to the
-- access phase (M.shop, M.shop_types, M.voucher_list), which may read Redis.
local settings = require "hmdp.edge.settings"
local header_count = require "hmdp.edge.header_count"
local l1 = require "hmdp.edge.l1"
local l2 = require "hmdp.edge.l2"
local record = require "hmdp.edge.record"
local language = require "hmdp.edge.language"
local answer = require "hmdp.edge.answer"
local request_id = require "hmdp.edge.request_id"
local visits = require "hmdp.edge.visits"
local log_once = require "hmdp.edge.log_once"
local voucher_stock = require "hmdp.edge.voucher_stock"

local M = {}

local FOUND, MISSING = l1.FOUND, l1.MISSING
local find, match, byte = string.find, string.match, string.byte

--- Whether the app would answer this request the same for anyone: see the header of this file.
local function answerable(compat)
  local var = ngx.var
  if var.request_method ~= "GET" then return false end
  -- The app touches the session of a token (its sliding lifetime) and counts the user's visit.
  if var.http_authorization ~= nil then return false end
  if settings.values.passOrigin and var.http_origin ~= nil then return false end
  if compat then
    -- A browser's page load of an API path gets the web app's page from the app (hmdp-compat.ts).
    local accept = var.http_accept
    if accept ~= nil and (find(accept, "text/html", 1, true) or header_count.repeated("accept")) then return false end
  end
  return true
end

--- A route's entry: (flags, body) from L1, else (unless l1_only) from its Redis record (then kept
--- in L1), else nil. `build` makes the answer's body from the record's JSON, nil for a value the
--- app would not send.
local function lookup(l1_key, redis_key, build, l1_only)
  local body, flags = l1.get(l1_key)
  if body ~= nil then
    ngx.var.hmdp_edge = "L1"
    return flags, body
  end
  if l1_only then return nil end
  local generation = l1.generation()
  local raw, err = l2.get(redis_key)
  if err then return nil end
  local kind, json, expire_at = record.decode(raw, settings.values.maxRecordBytes)
  if kind == "value" then
    -- Logically expired: the app answers (the stale value under SHOP_CACHE_STRATEGY=logical, while
    -- one instance rebuilds; a reload under mutex), so the rebuild starts where it always does.
    if expire_at and expire_at <= ngx.now() * 1000 then return nil end
    body = build(json)
    if body == nil then
      log_once.warn("record:" .. redis_key, redis_key .. " holds a value of another shape; answered by the app")
      return nil
    end
    flags = FOUND
    l1.set(l1_key, body, FOUND, expire_at, generation)
  elseif kind == "null" then
    flags, body = MISSING, ""
    l1.set(l1_key, body, MISSING, nil, generation)
  else
    if kind == "malformed" then log_once.warn("record:" .. redis_key, redis_key .. " is malformed (" .. json .. "); answered by the app") end
    return nil
  end
  ngx.var.hmdp_edge = "L2"
  return flags, body
end

local function wrapped(json) return '{"success":true,"data":' .. json .. "}" end

-- A shop is an object (the app answers 404 for a null data); the type list an array.
local function shop_body(json) return byte(json, 1) == 123 and wrapped(json) or nil end
local function list_body(json) return byte(json, 1) == 91 and wrapped(json) or nil end

--- GET /api/shop/{id}: the shop, or for a null marker the app's 404 in the client's language.
local function shop(compat, l1_only)
  local id = match(ngx.var.request_uri, compat and "^/shop/([1-9]%d*)$" or "^/api/shop/([1-9]%d*)$")
  if not id or #id > 19 then return nil end
  local values = settings.values
  local flags, body = lookup("shop:" .. id, values.keyPrefix .. "cache:shop:" .. id, shop_body, l1_only)
  if flags == FOUND then
    visits.record(id)
    return 200, body
  elseif flags == MISSING then
    local chosen = language.of_request(values.defaultLanguage)
    if not chosen then return nil end
    local around = values.messages.shopNotFound[chosen]
    body = around[1] .. id .. around[2]
    -- On the compat surface a 404 goes out as 200 (and is then counted as a visit, as the app does).
    if compat then
      visits.record(id)
      return 200, body, "x-hmdp-status", "404"
    end
    return 404, body
  end
  return nil
end

local EMPTY_LIST = wrapped("[]")

--- GET /api/shop-type/list: the cached list (the app answers [] for a null marker).
local function shop_types(compat, l1_only)
  if ngx.var.request_uri ~= (compat and "/shop-type/list" or "/api/shop-type/list") then return nil end
  local flags, body = lookup("shop-types", settings.values.keyPrefix .. "cache:type", list_body, l1_only)
  if not flags then return nil end
  visits.record(nil)
  return 200, flags == FOUND and body or EMPTY_LIST
end

--- GET /api/voucher/list/{shopId}: the cached list (a null marker: []), with each sale's live stock
--- when the sales' fresh views know it (hmdp.edge.voucher_stock).
local function voucher_list(compat, l1_only)
  if not settings.values.sales then return nil end
  local id = match(ngx.var.request_uri, compat and "^/voucher/list/([1-9]%d*)$" or "^/api/voucher/list/([1-9]%d*)$")
  if not id or #id > 19 then return nil end
  local flags, body = lookup("voucher-list:" .. id, settings.values.keyPrefix .. "cache:voucher-list:" .. id, list_body, l1_only)
  if not flags then return nil end
  if flags == FOUND then
    body = voucher_stock.merge(body)
    if not body then
      ngx.var.hmdp_edge = "-"
      return nil
    end
  else
    body = EMPTY_LIST
  end
  visits.record(nil)
  return 200, body
end

-- $hmdp_read of each read location (edge/nginx.conf.template): its route, and whether it is the
-- compat surface's (the paths without /api).
local READS = {
  shop = { shop, false },
  shop_types = { shop_types, false },
  voucher_list = { voucher_list, false },
  ["shop-compat"] = { shop, true },
  ["shop_types-compat"] = { shop_types, true },
  ["voucher_list-compat"] = { voucher_list, true },
}

--- Runs a route in protected mode: an error is logged (once an hour) and the app answers.
local function run(route, compat, l1_only)
  if not answerable(compat) then return nil end
  local ok, status, body, extra_name, extra_value = pcall(route, compat, l1_only)
  if not ok then
    log_once.warn("lua:" .. tostring(status), "error, answered by the app: " .. tostring(status))
    return nil
  end
  return status, body, extra_name, extra_value
end

--- The read locations' set_by_lua (edge/l1-answers.conf): the body of an answer L1 holds, with
--- $hmdp_status (200 or 404), $hmdp_status_header (the compat surface's x-hmdp-status) and
--- $hmdp_request_id set for nginx to send it; "" when the request goes on (to the access phase's
--- Lua, then the app).
function M.from_l1(read)
  local route = READS[read]
  if not route then return "" end
  local status, body, extra_name, extra_value = run(route[1], route[2], true)
  if not status then return "" end
  local var = ngx.var
  var.hmdp_status = tostring(status)
  if extra_name then var.hmdp_status_header = extra_value end
  var.hmdp_request_id = request_id.of_request()
  return body
end

local function serve(route, compat)
  local status, body, extra_name, extra_value = run(route, compat, false)
  if status then return answer.send(status, body, extra_name, extra_value) end
end

function M.shop(compat) return serve(shop, compat) end
function M.shop_types(compat) return serve(shop_types, compat) end
function M.voucher_list(compat) return serve(voucher_list, compat) end

return M
