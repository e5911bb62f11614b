-- Ends a rebuild: the built bitmap replaces the live one atomically (RENAME), so there is never
-- a moment without a filter; RENAME carries the build TTL over, hence PERSIST.
-- KEYS[1] bitmap being built; KEYS[2] live bitmap (same hash tag)
-- ARGV[1] expected header
-- Returns 1 published, 0 the built bitmap is gone or not ours (expired, or another rebuild began).
if redis.call('GETRANGE', KEYS[1], 0, 15) ~= ARGV[1] then return 0 end
redis.call('RENAME', KEYS[1], KEYS[2])
redis.call('PERSIST', KEYS[2])
return 1
