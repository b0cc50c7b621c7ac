-- Set an expiry on KEYS[1] only if it still has none and still holds what
-- a limiter layout writes (fits, from fit.lua). A gateway may have opened a
-- new window (and set its own TTL) since the key was scanned, or another
-- application may own a key with a limiter-like name: the check and the
-- PEXPIRE happen atomically here, so neither can slip in between. The
-- value is never changed.
-- ARGV[1]: TTL in milliseconds, 0 to check only (a dry run). ARGV[2...]:
-- the value specs of the layouts that claim the key by name and type; it
-- must fit one of them.
-- Returns 1 when set (or, with ARGV[1] 0, when it would be), 0 when the key
-- has a TTL, -2 when it is gone, -3 when it fits no layout: left alone.
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then
  return -2
elseif ttl ~= -1 then
  return 0
end
local ok = false
for i = 2, #ARGV do
  if fits(KEYS[1], ARGV[i]) then
    ok = true
    break
  end
end
if not ok then
  return -3
end
if tonumber(ARGV[1]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return 1
