--[[
  Included by repair.lua and repair-bucket.lua: rewrites a sale's buyer slots from MySQL's record.
  Cancelled orders whose unit the canceller has not yet given back are decided here, atomically
  with the write, by their release marker: present → released (nothing held); absent → still
  held (its slot kept, one unit counted), and the canceller's later release.lua frees it once.

  rewrite_buyers(buyers_key, count_at, first_marker, expire_at):
    ARGV[count_at]   holder count H, followed by H pairs (user id, slot bitmask of its live orders),
                     then a pair (user id, slot) for each release marker KEYS[first_marker..]
  Returns the units still held by those cancelled orders (markers absent).
]]
local function rewrite_buyers(buyers_key, count_at, first_marker, expire_at)
  local holder_count = tonumber(ARGV[count_at])
  local masks = {}
  local users = {}
  local function hold(user, bits)
    if not masks[user] then
      masks[user] = 0
      users[#users + 1] = user
    end
    masks[user] = bit.bor(masks[user], bits)
  end
  for i = 1, holder_count do
    hold(ARGV[count_at - 1 + 2 * i], tonumber(ARGV[count_at + 2 * i]))
  end
  local unreleased_base = count_at + 2 * holder_count
  local held = 0
  for k = first_marker, #KEYS do
    if redis.call('EXISTS', KEYS[k]) == 0 then
      held = held + 1
      local at = unreleased_base + 2 * (k - first_marker + 1)
      hold(ARGV[at - 1], bit.lshift(1, tonumber(ARGV[at]) - 1))
    end
  end
  redis.call('DEL', buyers_key)
  for i = 1, #users, 500 do
    local fields = {}
    for j = i, math.min(i + 499, #users) do
      fields[#fields + 1] = users[j]
      fields[#fields + 1] = masks[users[j]]
    end
    redis.call('HSET', buyers_key, unpack(fields))
  end
  if #users > 0 then
    redis.call('PEXPIREAT', buyers_key, expire_at)
  end
  return held
end
