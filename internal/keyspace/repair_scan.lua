-- One SCAN page of repair-ttl, checked on the server: returns, for each key
-- of ARGV that exists without a TTL, its 1-based position and its type.
-- Keys come in ARGV because a page spans many slots (all on this node).
-- Nothing is written; the repair itself is repair_ttl.lua, per key.
local out = {}
for i = 1, #ARGV do
  if redis.call('PTTL', ARGV[i]) == -1 then
    out[#out + 1] = i
    out[#out + 1] = redis.call('TYPE', ARGV[i])['ok']
  end
end
return out
