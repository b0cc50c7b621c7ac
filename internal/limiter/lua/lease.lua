-- leasing: grant a slice of this window's global budget (limit per W).
-- The counter holds what was already granted this window; a grant never
-- exceeds what is left, so grants in one window sum to at most limit.
-- KEYS[1] base key (rl:lease:{id}); the window key shares its hash tag.
-- ARGV: limit, window_ms, want, now_us ('' = Redis TIME)
-- returns {granted, left_after, window_left_ms, 0, server_us}
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local now, server = now_of(ARGV[4])

local idx = math.floor(now / window)
local key = KEYS[1] .. ':' .. string.format('%d', idx)
local left_ms = math.ceil((idx + 1) * window - now)
local used = tonumber(redis.call('GET', key) or '0')
local grant = limit - used
if grant > want then grant = want end
if grant <= 0 then
  return {0, 0, left_ms, 0, server}
end
redis.call('INCRBY', key, grant)
if used == 0 then
  redis.call('PEXPIRE', key, window)
end
return {grant, limit - used - grant, left_ms, 0, server}
