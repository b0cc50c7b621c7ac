-- redis-sliding-window: the sliding-window counter. Two fixed-window
-- counters (current and previous window) and an estimate that weights the
-- previous one by how much of it still overlaps the sliding window:
--   estimate = prev * (1 - elapsed_fraction) + cur
-- KEYS[1] base key (rl:sw:{id}); window keys share its hash tag.
-- ARGV: limit, window_ms, cost, now_us ('' = Redis TIME)
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now, server = now_of(ARGV[4])

local idx = math.floor(now / window)
local cur_key = KEYS[1] .. ':' .. string.format('%d', idx)
local prev_key = KEYS[1] .. ':' .. string.format('%d', idx - 1)
local cur = tonumber(redis.call('GET', cur_key) or '0')
local prev = tonumber(redis.call('GET', prev_key) or '0')
local start = idx * window
local frac = (now - start) / window
local estimate = prev * (1 - frac) + cur

if estimate + cost > limit then
  -- When does estimate + cost fit? Within this window, once the previous
  -- window's weight has shrunk enough; otherwise in the next one, where
  -- today's counter becomes the weighted one.
  local retry
  local room = limit - cur - cost
  if room >= 0 and prev > 0 then
    retry = (1 - room / prev) * window + start - now
  else
    local f = 0
    if cur > 0 then f = 1 - (limit - cost) / cur end
    if f < 0 then f = 0 end
    retry = start + window - now + f * window
  end
  local reset = start + window - now
  if cur > 0 then reset = reset + window end
  local left = math.floor(limit - estimate)
  if left < 0 then left = 0 end
  return {0, left, math.ceil(retry), math.ceil(reset), server}
end
local n = redis.call('INCRBY', cur_key, cost)
if n == cost then
  redis.call('PEXPIRE', cur_key, 2 * window)
end
local left = math.floor(limit - estimate - cost)
if left < 0 then left = 0 end
return {1, left, 0, math.ceil(start + 2 * window - now), server}
