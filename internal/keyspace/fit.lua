-- fits(key, spec): whether key holds what a limiter layout writes, so a
-- script never changes another application's key that merely has a
-- limiter-like name. spec is "<type> <kind> [args...]" (fitSpec in
-- fit.go):
--   string int          an integer counter
--   string num          a number (a TAT, tokens, a time)
--   hash num F1 F2 ...  exactly the fields F1, F2 ..., each a number
--   hash int            any fields, every value an integer
--   hash any            any hash (a user's own layout)
--   zset any            any sorted set (scores are always numbers)
--   list num MAX        at most MAX entries (0: any), each a number
-- Scripts that change keys define it first (fit.lua is prepended to
-- them), so the check and the change are one atomic step.
local function isint(s)
  return #s <= 20 and string.find(s, '^%-?%d+$') ~= nil
end
local function isnum(s)
  if #s > 40 then
    return false
  end
  local m = string.match(s, '^%-?%d+%.?%d*(.*)$') or string.match(s, '^%-?%.%d+(.*)$')
  return m ~= nil and (m == '' or string.find(m, '^[eE][%+%-]?%d+$') ~= nil)
end
local function fits(key, spec)
  local w = {}
  for x in string.gmatch(spec, '%S+') do
    w[#w + 1] = x
  end
  local typ = redis.call('TYPE', key)['ok']
  if typ ~= w[1] then
    return false
  end
  local kind = w[2]
  if typ == 'string' then
    -- A counter or a number is short: a long value is something else,
    -- and is not read at all.
    if redis.call('STRLEN', key) > 40 then
      return false
    end
    local v = redis.call('GET', key)
    if kind == 'int' then
      return isint(v)
    end
    return kind == 'num' and isnum(v)
  elseif typ == 'hash' then
    if kind == 'any' then
      return true
    elseif kind == 'int' then
      local vals = redis.call('HVALS', key)
      for _, v in ipairs(vals) do
        if not isint(v) then
          return false
        end
      end
      return #vals > 0
    end
    if kind ~= 'num' or redis.call('HLEN', key) ~= #w - 2 then
      return false
    end
    for i = 3, #w do
      local v = redis.call('HGET', key, w[i])
      if not v or not isnum(v) then
        return false
      end
    end
    return true
  elseif typ == 'list' then
    local max = tonumber(w[3]) or 0
    local n = redis.call('LLEN', key)
    if kind ~= 'num' or (max > 0 and n > max) then
      return false
    end
    -- The first thousand entries tell a list of times from anything else.
    for _, v in ipairs(redis.call('LRANGE', key, 0, math.min(n, 1000) - 1)) do
      if not isnum(v) then
        return false
      end
    end
    return true
  elseif typ == 'zset' then
    return kind == 'any'
  end
  return false
end
