-- Starts a rebuild: an empty bitmap with the header, allocated to its full size, expiring in case
-- the rebuilder dies (a finished rebuild RENAMEs it to the live key and removes the TTL).
-- KEYS[1] bitmap being built
-- ARGV[1] header (16 bytes); ARGV[2] last bit offset; ARGV[3] TTL in ms
redis.call('DEL', KEYS[1])
redis.call('SETRANGE', KEYS[1], 0, ARGV[1])
redis.call('SETBIT', KEYS[1], ARGV[2], 0)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
