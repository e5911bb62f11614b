-- Adds ids to every given bitmap that exists with the expected header: the live filter and,
-- while a rebuild runs, the one being built (so an id created during a rebuild is not lost by
-- the RENAME). A missing filter is left missing: creating it with one id would reject all others.
-- KEYS[1..] bitmaps (one hash tag: one Cluster slot)
-- ARGV[1] expected header; ARGV[2..] bit offsets of the ids (k per id)
-- Returns how many bitmaps were written.
local written = 0
for k = 1, #KEYS do
  if redis.call('GETRANGE', KEYS[k], 0, 15) == ARGV[1] then
    for i = 2, #ARGV do
      redis.call('SETBIT', KEYS[k], ARGV[i], 1)
    end
    written = written + 1
  end
end
return written
