-- Runs one spec module of this folder inside nginx (test/system/edge/lua-specs.test.ts): the
-- request's JSON body is the spec's input, its result the answer's JSON. The edge's modules run
-- here as in the product, on the same LuaJIT and ngx API, with the settings the renderer writes.
local cjson = require "cjson.safe"

local M = {}

function M.run(name)
  ngx.req.read_body()
  local input = cjson.decode(ngx.req.get_body_data() or "null")
  local ok, result = pcall(function() return require(name .. "_spec").run(input) end)
  ngx.header["content-type"] = "application/json"
  ngx.say(cjson.encode(ok and { result = result } or { error = tostring(result) }))
end

return M
