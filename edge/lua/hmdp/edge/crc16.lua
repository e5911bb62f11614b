-- The Redis Cluster slot of a key, as Redis computes it: CRC16 (XMODEM: polynomial 0x1021, initial
-- value 0, not reflected) of the key, or of its hash tag when it has one (the text between the
-- first "{" and the first "}" after it, when that text is not empty), modulo 16384.
local bit = require "bit"

local band, bxor, lshift, rshift = bit.band, bit.bxor, bit.lshift, bit.rshift
local byte, find, sub = string.byte, string.find, string.sub

local M = {}

M.SLOTS = 16384

-- One entry per byte value: the CRC of that byte alone, so that each byte of a key costs one lookup.
local TABLE = {}
for value = 0, 255 do
  local crc = lshift(value, 8)
  for _ = 1, 8 do
    if band(crc, 0x8000) ~= 0 then crc = bxor(lshift(crc, 1), 0x1021) else crc = lshift(crc, 1) end
  end
  TABLE[value] = band(crc, 0xffff)
end

function M.crc16(text)
  local crc = 0
  for i = 1, #text do
    crc = bxor(band(lshift(crc, 8), 0xffff), TABLE[bxor(rshift(crc, 8), byte(text, i))])
  end
  return crc
end

--- The part of a key that is hashed: its hash tag when it has a non-empty one, else the whole key.
local function hashed(key)
  local open = find(key, "{", 1, true)
  if not open then return key end
  local close = find(key, "}", open + 1, true)
  if not close or close == open + 1 then return key end
  return sub(key, open + 1, close - 1)
end

function M.slot(key)
  return band(M.crc16(hashed(key)), M.SLOTS - 1)
end

return M
