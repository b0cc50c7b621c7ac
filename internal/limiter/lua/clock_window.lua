-- redis-clock-window: the window id comes from a clock, so the key is
-- base:<floor(now_ms / W)>. With a gateway clock every gateway computes its
-- own window id, and skewed gateways count into different keys.
-- KEYS[1] base key (rl:cw:{id}); the window key shares its hash tag.
-- ARGV: limit, window_ms, cost, now_us ('' = Redis TIME)
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now, server = now_of(ARGV[4])

local idx = math.floor(now / window)
local key = KEYS[1] .. ':' .. string.format('%d', idx)
local reset = math.ceil((idx + 1) * window - now)
local n = tonumber(redis.call('GET', key) or '0')
if n + cost > limit then
  local left = limit - n
  if left < 0 then left = 0 end
  return {0, left, reset, reset, server}
end
n = redis.call('INCRBY', key, cost)
if n == cost then
  redis.call('PEXPIRE', key, window)
end
return {1, limit - n, 0, reset, server}
