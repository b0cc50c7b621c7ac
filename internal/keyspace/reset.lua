-- Delete KEYS only where each still holds what its layout writes (fits,
-- from fit.lua): a key whose type or value does not fit is another
-- application's, whatever its name, and is left alone. Every key is
-- checked before any is deleted, all in this one script, so the reset is
-- atomic and nothing can change in between.
-- ARGV[1]: 'delete', or 'check' to change nothing (a dry run).
-- ARGV[1 + i]: the value spec of KEYS[i]'s layout.
-- Returns, per key: 1 deleted (or, with 'check', would be), 0 gone,
-- -3 does not fit: left alone.
local out, del = {}, {}
for i, k in ipairs(KEYS) do
  if redis.call('EXISTS', k) == 0 then
    out[i] = 0
  elseif fits(k, ARGV[i + 1]) then
    out[i] = 1
    del[#del + 1] = k
  else
    out[i] = -3
  end
end
if ARGV[1] == 'delete' then
  -- In slices: unpack is bounded by Lua's stack.
  for i = 1, #del, 1000 do
    redis.call('DEL', unpack(del, i, math.min(i + 999, #del)))
  end
end
return out
