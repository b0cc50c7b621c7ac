-- One SCAN page of the audit, read on the server so the reply carries only
-- the keys worth reporting instead of every key's type, TTL and value.
-- Keys come in ARGV (a page holds keys of many slots, all on this node),
-- in groups of four: key, expected type, longest allowed PTTL in ms (0:
-- unknown), threshold (0: none; a counter value for strings, an entry count
-- for sorted sets). Nothing is written.
-- Returns, for each reported key, its group number, its type ("none" when
-- it vanished since SCAN), its PTTL and the counter value or entry count
-- that crossed the threshold (nil when none did).
local out = {}
for i = 1, #ARGV, 4 do
  local k = ARGV[i]
  local want = ARGV[i + 1]
  local maxttl = tonumber(ARGV[i + 2])
  local thr = tonumber(ARGV[i + 3])
  local ttl = redis.call('PTTL', k)
  local t, v = nil, false
  if ttl == -2 then
    t = 'none'
  elseif want == 'string' and thr > 0 then
    -- Reading the counter also proves the type (one call instead of two).
    local s = redis.pcall('GET', k)
    if type(s) == 'table' and s['err'] then
      t = redis.call('TYPE', k)['ok']
    else
      t = 'string'
      local n = tonumber(s)
      if n and n >= thr then
        v = n
      end
    end
  else
    t = redis.call('TYPE', k)['ok']
    if t == 'zset' and want == 'zset' and thr > 0 then
      local n = redis.call('ZCARD', k)
      if n > thr then
        v = n
      end
    end
  end
  if t ~= want or ttl == -1 or (maxttl > 0 and ttl > maxttl) or v then
    out[#out + 1] = (i + 3) / 4
    out[#out + 1] = t
    out[#out + 1] = ttl
    out[#out + 1] = v
  end
end
return out
