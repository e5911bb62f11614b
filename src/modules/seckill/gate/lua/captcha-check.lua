--[[
  Checks an answer to a user's captcha of one sale. A right answer is good once (the challenge
  is deleted); each wrong one counts, and the last allowed wrong one deletes the challenge too.

  KEYS[1]  seckill:captcha:{voucherId}:{userId}   hash {answer, wrong}
  ARGV     answer (lower case), wrong answers allowed
  Returns {0, 0} solved, {1, tries left} wrong, {2, 0} no challenge (never made, expired, used or used up).
]]
local expected = redis.call('HGET', KEYS[1], 'answer')
if not expected then
  return {2, 0}
end
if expected == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return {0, 0}
end
local wrong = redis.call('HINCRBY', KEYS[1], 'wrong', 1)
local left = tonumber(ARGV[2]) - wrong
if left <= 0 then
  redis.call('DEL', KEYS[1])
  return {1, 0}
end
return {1, left}
