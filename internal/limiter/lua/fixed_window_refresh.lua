-- redis-fixed-window-refresh: the TTL bug, on purpose. Same check and
-- increment as redis-fixed-window, but the expiry is pushed back by W on
-- every request, allowed or denied. While traffic keeps arriving faster than
-- once per W the key never expires, the window never rolls, and a client at
-- its limit stays denied for as long as it keeps trying.
-- KEYS[1] counter; ARGV: limit, window_ms, cost
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])

local n = tonumber(redis.call('GET', key) or '0')
local allowed = 0
if n + cost <= limit then
  n = redis.call('INCRBY', key, cost)
  allowed = 1
end
if n > 0 then
  redis.call('PEXPIRE', key, window)
end
local left = limit - n
if left < 0 then left = 0 end
if allowed == 1 then
  return {1, left, 0, window, -1}
end
-- The key outlives its PTTL by up to 1 ms (see fixed_window.lua).
return {0, left, window + 1, window, -1}
