-- redis-sliding-log: the exact sliding log. One sorted-set member per
-- admitted request, scored by its time in ms; members older than W are
-- trimmed first, so the count is exactly the admitted requests in
-- (now - W, now]. Memory grows with traffic: up to limit members per id.
-- KEYS[1] sorted set; ARGV: limit, window_ms, cost, now_us, member
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now, server = now_of(ARGV[4])
local member = ARGV[5]

redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
if count + cost > limit then
  -- the request fits once enough of the oldest entries have aged out
  local need = count + cost - limit
  local retry = window
  if need <= count then
    local e = redis.call('ZRANGE', key, need - 1, need - 1, 'WITHSCORES')
    retry = tonumber(e[2]) + window - now
  end
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  local reset = 0
  if newest[2] then reset = tonumber(newest[2]) + window - now end
  local left = limit - count
  if left < 0 then left = 0 end
  return {0, left, math.ceil(retry), math.ceil(reset), server}
end
for i = 1, cost do
  redis.call('ZADD', key, now, member .. ':' .. i)
end
redis.call('PEXPIRE', key, window)
return {1, limit - count - cost, 0, window, server}
