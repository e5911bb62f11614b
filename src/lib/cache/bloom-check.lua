-- Bloom filter membership: all k bits of one id in one round trip.
-- KEYS[1] bitmap (its first 16 bytes are a header naming m and k)
-- ARGV[1] expected header; ARGV[2..] bit offsets (already past the header)
-- Returns 1 maybe present, 0 certainly absent, -1 no usable filter (missing, or built with other
-- parameters): the caller must then treat every id as possibly present.
if redis.call('GETRANGE', KEYS[1], 0, 15) ~= ARGV[1] then return -1 end
for i = 2, #ARGV do
  if redis.call('GETBIT', KEYS[1], ARGV[i]) == 0 then return 0 end
end
return 1
