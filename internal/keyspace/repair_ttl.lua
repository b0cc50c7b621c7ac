-- Set an expiry on KEYS[1] only if it still has none. A gateway may have
-- opened a new window (and set its own TTL) since the key was scanned;
-- that TTL must win, so the check and the PEXPIRE happen atomically here.
-- The value is never read or changed.
-- ARGV[1]: TTL in milliseconds. Returns 1 when set, 0 when the key has a
-- TTL already or is gone.
if redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return 1
end
return 0
