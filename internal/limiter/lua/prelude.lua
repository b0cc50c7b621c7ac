-- Shared by every rlctl script (prepended in Go before the script body).
-- now_of reads the clock: the gateway's time in microseconds when the caller
-- passed one, else Redis TIME. Calling TIME before writes needs effects
-- replication, the default since Redis 5 (and the only mode since 7).
if redis.replicate_commands then redis.replicate_commands() end

-- now_of returns the time in milliseconds (float) and the server time in
-- microseconds, or -1 when the time came from the gateway.
local function now_of(arg)
  if arg == nil or arg == '' then
    local t = redis.call('TIME')
    local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
    return us / 1000, us
  end
  return tonumber(arg) / 1000, -1
end
