-- One SCAN page of repair-ttl, checked on the server: reports each key
-- that exists without a TTL. Keys are read here rather than named in KEYS
-- because a page spans many slots (all on this node). Two ways in:
--   'scan', cursor, pattern, count: SCAN from cursor and check the keys it
--     finds, so their names need not travel back to the server. Returns
--     the next cursor and the page's keys, then the pairs below.
--   'keys', n, key1, ..., keyn: check the keys given (the limiter keys of
--     a page the client scanned). Returns the pairs below.
-- The pairs are, for each key without a TTL, its 1-based position among
-- the page's or the given keys, and its type.
-- Nothing is written; the repair itself is repair_ttl.lua, per key.
local keys, skip, out = ARGV, 2, {}
if ARGV[1] == 'scan' then
  local page = redis.call('SCAN', ARGV[2], 'MATCH', ARGV[3], 'COUNT', ARGV[4])
  keys, skip, out = page[2], 0, {page[1], page[2]}
end
for i = 1, #keys - skip do
  local k = keys[i + skip]
  if redis.call('PTTL', k) == -1 then
    out[#out + 1] = i
    out[#out + 1] = redis.call('TYPE', k)['ok']
  end
end
return out
