-- redis-token-bucket: one shared bucket per identity, refilled at rate per
-- ms up to capacity, spending cost per request. ts is the time of the last
-- update as the caller's clock said: with gateway clocks a gateway whose
-- clock runs ahead refills tokens the others have not earned yet (elapsed is
-- clamped at 0 when a clock runs behind, so tokens never go down by time).
-- KEYS[1] hash {tokens, ts}; ARGV: capacity, rate_per_ms, cost, now_us
-- TTL: the time until the bucket is full again (a full bucket needs no key).
local key = KEYS[1]
local cap = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now, server = now_of(ARGV[4])

local b = redis.call('HMGET', key, 'tokens', 'ts')
local tokens = tonumber(b[1])
local ts = tonumber(b[2])
if tokens == nil or ts == nil then
  tokens = cap
  ts = now
end
local elapsed = now - ts
if elapsed < 0 then elapsed = 0 end
tokens = math.min(cap, tokens + elapsed * rate)

local allowed = 0
local retry = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
else
  retry = math.ceil((cost - tokens) / rate)
end
local reset = math.ceil((cap - tokens) / rate)
redis.call('HSET', key, 'tokens', string.format('%.17g', tokens), 'ts', string.format('%.17g', now))
if reset < 1 then reset = 1 end
redis.call('PEXPIRE', key, reset)
return {allowed, math.floor(tokens), retry, reset, server}
