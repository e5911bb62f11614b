-- Compare-and-set of a cache entry: writes only if the key still holds what the rebuild saw
-- before it called the loader. An invalidation (tombstone) or another writer in between wins,
-- so a load that read the database before an update can never put the old row back.
-- KEYS[1] cache key
-- ARGV[1] SHA-1 hex of the value seen, or '' when the key did not exist
-- ARGV[2] new value
-- ARGV[3] TTL in ms, 0 for none (logical expiry)
-- Returns 1 written, 0 skipped.
local current = redis.call('GET', KEYS[1])
if current then
  if redis.sha1hex(current) ~= ARGV[1] then return 0 end
elseif ARGV[1] ~= '' then
  return 0
end
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
else
  redis.call('SET', KEYS[1], ARGV[2])
end
return 1
