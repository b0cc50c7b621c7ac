-- redis-gcra: the generic cell rate algorithm (the leaky bucket as a
-- meter), with the semantics of go-redis/redis_rate: rate L per W, burst B.
-- The value is the theoretical arrival time (TAT) in ms since the Unix
-- epoch, as a float; it expires when TAT has passed.
-- KEYS[1] TAT; ARGV: burst, limit, window_ms, cost, now_us ('' = Redis TIME)
local key = KEYS[1]
local burst = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local now, server = now_of(ARGV[5])

local emission = window / limit
local increment = emission * cost
local burst_offset = emission * burst

local tat = tonumber(redis.call('GET', key) or '')
if tat == nil or tat < now then tat = now end
local new_tat = tat + increment
local diff = now - (new_tat - burst_offset)
if diff < 0 then
  return {0, 0, math.ceil(-diff), math.ceil(tat - now), server}
end
local reset = new_tat - now
if reset > 0 then
  redis.call('SET', key, string.format('%.3f', new_tat), 'PX', math.ceil(reset))
end
return {1, math.floor(diff / emission), 0, math.ceil(reset), server}
