-- How many times a request gives a header. nginx's $http_* variables hold only the first of a
-- header given twice (nginx 1.22), and Node joins the repeats with ", ": where the two would
-- differ, the edge lets the app answer. ngx.req.get_headers() builds a table of every header and
-- value, a measured microsecond of each request that sends the header at all; this reads nginx's
-- list in place through the FFI functions lua-resty-core's ngx.req.get_headers is built on, and
-- makes a Lua string only of a name as long as the one asked for.
local ffi = require "ffi"
local base = require "resty.core.base"
require "resty.core.request" -- declares ngx_http_lua_ffi_req_get_headers{,_count} and its element type

local M = {}

local C = ffi.C
local get_request, get_string_buf, ffi_string, ffi_cast = base.get_request, base.get_string_buf, ffi.string, ffi.cast
local element_size = ffi.sizeof("ngx_http_lua_ffi_table_elt_t")
local element_pointer = ffi.typeof("ngx_http_lua_ffi_table_elt_t*")
local truncated = ffi.new("int[1]")

--- How many times this request gives the header `name` (lowercase), or nil when it cannot be read.
function M.of(name)
  local r = get_request()
  if not r then return nil end
  local n = C.ngx_http_lua_ffi_req_get_headers_count(r, -1, truncated)
  if n < 0 then return nil end
  if n == 0 then return 0 end
  local list = ffi_cast(element_pointer, get_string_buf(n * element_size))
  -- raw 0: the names lowercased, as nginx keeps them beside the originals.
  if C.ngx_http_lua_ffi_req_get_headers(r, list, n, 0) ~= 0 then return nil end
  local count, length = 0, #name
  for i = 0, n - 1 do
    local key = list[i].key
    if key.len == length and ffi_string(key.data, length) == name then count = count + 1 end
  end
  return count
end

--- Whether the header is given more than once (unreadable counts as more: the app decides).
function M.repeated(name)
  local count = M.of(name)
  return count == nil or count > 1
end

return M
