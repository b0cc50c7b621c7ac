-- Which of the given keys hold what a limiter layout writes (fits, from
-- fit.lua). Keys come in ARGV (a page spans many slots, all on this node):
-- per key, its name, how many specs follow, and the specs of the layouts
-- that claim it; it fits when it fits one. Returns 1 or 0 per key, in
-- order. Nothing is written.
local out, i = {}, 1
while i <= #ARGV do
  local k, n = ARGV[i], tonumber(ARGV[i + 1])
  local ok = 0
  for j = i + 2, i + 1 + n do
    if fits(k, ARGV[j]) then
      ok = 1
      break
    end
  end
  out[#out + 1] = ok
  i = i + 2 + n
end
return out
