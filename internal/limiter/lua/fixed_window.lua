-- redis-fixed-window: check and increment in one step. The TTL is set only
-- when the window opens (the key did not exist) and re-asserted when the key
-- somehow has none (TTL -1), so a window always ends W after it opened.
-- KEYS[1] counter; ARGV: limit, window_ms, cost
-- returns {allowed, remaining, retry_ms, reset_ms, server_us}
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])

local n = tonumber(redis.call('GET', key) or '0')
local ttl = redis.call('PTTL', key)
if n + cost > limit then
  if ttl == -1 then
    redis.call('PEXPIRE', key, window)
    ttl = window
  elseif ttl == -2 then
    ttl = window
  end
  local left = limit - n
  if left < 0 then left = 0 end
  -- Redis expires a key once its millisecond clock passes the expiry, so
  -- the key lives up to 1 ms longer than PTTL says: Retry-After adds it,
  -- never early (as the other designs round up), at most 1 ms late.
  return {0, left, ttl + 1, ttl, -1}
end
n = redis.call('INCRBY', key, cost)
if ttl < 0 then
  redis.call('PEXPIRE', key, window)
  ttl = window
end
return {1, limit - n, 0, ttl, -1}
