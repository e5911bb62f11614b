-- The edge's settings: edge-settings.json, written beside nginx.conf by src/cli/edge-config.ts from
-- the app's own configuration (key prefix, default language, security headers, messages...).
-- Read once by the master (init_by_lua), so every worker starts with the same table.
local cjson = require "cjson.safe"

local M = {}

function M.load(path)
  local file = assert(io.open(path, "rb"))
  local text = file:read("*a")
  file:close()
  local values, err = cjson.decode(text)
  if type(values) ~= "table" then
    error("edge settings " .. path .. ": " .. tostring(err))
  end
  M.values = values
end

return M
