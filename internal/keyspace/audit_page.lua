-- One SCAN page of the audit, read on the server so the reply carries only
-- the keys worth reporting instead of every key's type, TTL and value.
-- Keys come in ARGV (a page holds keys of many slots, all on this node),
-- in runs of keys that share their checks. Each run is led by five items:
-- expected type, longest allowed PTTL in ms (0: unknown), threshold (0:
-- none; a counter value for strings, an entry count for sorted sets),
-- whether counters may be read with one MGET (1; not on a Cluster node,
-- where a script's multi-key call must stay within one slot) and how many
-- keys follow. Checks go once per run rather than once per key, which
-- keeps ARGV small. Nothing is written.
-- Returns, for each reported key, its 1-based position among the call's
-- keys, its type ("none" when it vanished since SCAN), its PTTL and the
-- counter value or entry count that crossed the threshold (nil when none
-- did).
local out = {}
local i, pos = 1, 0
while i <= #ARGV do
  local want = ARGV[i]
  local maxttl = tonumber(ARGV[i + 1])
  local thr = tonumber(ARGV[i + 2])
  local batch = ARGV[i + 3] == '1'
  local first = i + 5
  local last = i + 4 + tonumber(ARGV[i + 4])
  -- Counters are read with one MGET per run rather than one GET per key:
  -- each redis.call costs more than the read itself. MGET answers false
  -- for a key of another type (or gone), which TYPE below tells apart.
  local vals = false
  if want == 'string' and thr > 0 and batch then
    vals = redis.call('MGET', unpack(ARGV, first, last))
  end
  for j = first, last do
    pos = pos + 1
    local k = ARGV[j]
    local ttl = redis.call('PTTL', k)
    local t, v = nil, false
    local s = false -- the counter, when read
    if ttl == -2 then
      t = 'none'
    elseif vals then
      s = vals[j - first + 1]
    elseif want == 'string' and thr > 0 then
      -- Reading the counter also proves the type (one call instead of two).
      s = redis.pcall('GET', k)
      if type(s) == 'table' and s['err'] then
        s = false
      end
    end
    if s then
      t = 'string'
      local n = tonumber(s)
      if n and n >= thr then
        v = n
      end
    elseif not t then
      t = redis.call('TYPE', k)['ok']
      if t == 'zset' and want == 'zset' and thr > 0 then
        local n = redis.call('ZCARD', k)
        if n > thr then
          v = n
        end
      end
    end
    if t ~= want or ttl == -1 or (maxttl > 0 and ttl > maxttl) or v then
      out[#out + 1] = pos
      out[#out + 1] = t
      out[#out + 1] = ttl
      out[#out + 1] = v
    end
  end
  i = last + 1
end
return out
