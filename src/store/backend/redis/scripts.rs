//! The Lua scripts of the Redis store (see the store's module docs), each
//! one round trip, run by `EVALSHA`. An announcement is published with
//! the command the script is given (`PUBLISH`, or `SPUBLISH` on a
//! cluster's sharded channel in the key's slot).

pub(super) const LOAD: &str = r"
local t = redis.call('TIME')
local n = redis.call('STRLEN', KEYS[1])
if n > tonumber(ARGV[1]) then return {t[1], t[2], false, n} end
return {t[1], t[2], redis.call('GET', KEYS[1])}
";

pub(super) const SWAP: &str = r"
local n = redis.call('STRLEN', KEYS[1])
if n > tonumber(ARGV[6]) then
  local t = redis.call('TIME')
  return {0, t[1], t[2], false, n}
end
local v = redis.call('GET', KEYS[1])
local same
if ARGV[1] == '0' then
  same = (v == false)
elseif ARGV[1] == '2' then
  same = (v ~= false and string.sub(v, 1, #ARGV[2]) == ARGV[2])
else
  same = (v == ARGV[2])
end
if same then
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
  if ARGV[5] ~= '' then
    local t = redis.call('TIME')
    redis.call(ARGV[7], ARGV[5], t[1] .. ' ' .. t[2] .. ' ' .. #KEYS[1] .. ' ' .. KEYS[1] .. ARGV[3])
  end
  return {1}
end
local t = redis.call('TIME')
return {0, t[1], t[2], v}
";

/// An [`Increment`] (see [`Increment::apply`], which this is the Lua of):
/// `KEYS[1]`; `ARGV`: the prefix, the width in microseconds, the window's
/// buckets, the calls, the time-to-live in milliseconds, the largest
/// payload read, the failed calls, the slow calls, the reporter (empty:
/// none, and what follows the buckets is kept as it is) and how many
/// reporters the window keeps. 0 when the key holds nothing it applies to
/// (left as it is; with a reporter, but for a payload above the largest
/// read: 0, the server's `TIME` and what the key holds); else 1 (with a
/// reporter: 1, the server's `TIME` and the payload written). Lua's numbers are doubles: every number read or
/// written is at most 15 digits (`Increment::MAX`) or, a reporter's time,
/// below 2^53, every product and sum below 2^53, so each is exact.
pub(super) const INCREMENT: &str = r#"
local n = redis.call('STRLEN', KEYS[1])
if n > tonumber(ARGV[6]) then return 0 end
local id = ARGV[9]
local function held()
  if id == '' then return 0 end
  local t = redis.call('TIME')
  return {0, t[1], t[2], redis.call('GET', KEYS[1])}
end
local v = redis.call('GET', KEYS[1])
if not v then return held() end
local p = ARGV[1]
if #v < #p + 5 or string.sub(v, 1, #p) ~= p then return held() end
local cut = string.find(v, '}', #p + 1, true)
if not cut then return held() end
local body, tail = string.sub(v, #p + 1, cut - 1), string.sub(v, cut)
if tail ~= '}}}' and not string.find(tail, '^},"reporters":%[[%d,%[%]]*%]}}$') then return held() end
local max, latest = 999999999999999, 9007199254740991
local function number(d)
  if #d > 15 or (#d > 1 and string.sub(d, 1, 1) == '0') then return nil end
  return tonumber(d)
end
local function time(d)
  if #d > 16 or (#d > 1 and string.sub(d, 1, 1) == '0') then return nil end
  local x = tonumber(d)
  if x > latest then return nil end
  return x
end
local entries, seen = {}, {}
for b, c, f, s in string.gmatch(body, '%[(%d+),(%d+),(%d+),(%d+)%]') do
  local e = {number(b), number(c), number(f), number(s)}
  if not (e[1] and e[2] and e[3] and e[4]) then return held() end
  entries[#entries + 1] = e
  seen[#seen + 1] = '[' .. b .. ',' .. c .. ',' .. f .. ',' .. s .. ']'
end
if body ~= '[' .. table.concat(seen, ',') .. ']' then return held() end
local t = redis.call('TIME')
local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local w = tonumber(ARGV[2])
local function of(x)
  local q = math.floor(x / w)
  if q * w > x then q = q - 1 end
  if (q + 1) * w <= x then q = q + 1 end
  return q
end
local bucket = of(us)
if bucket > max then return held() end
local newest = 0
for _, e in ipairs(entries) do
  if e[1] > newest then newest = e[1] end
end
local current = math.max(bucket, newest)
local keep = tonumber(ARGV[3])
local function live(b)
  return b <= current and current - b < keep
end
local sums, order = {}, {}
local function add(b, c, f, s)
  local x = sums[b]
  if not x then
    x = {0, 0, 0}
    sums[b] = x
    order[#order + 1] = b
  end
  x[1] = x[1] + c
  x[2] = x[2] + f
  x[3] = x[3] + s
  return x[1] <= max and x[2] <= max and x[3] <= max
end
for _, e in ipairs(entries) do
  if live(e[1]) then
    if not add(e[1], e[2], e[3], e[4]) then return held() end
  end
end
if live(bucket) and not add(bucket, tonumber(ARGV[4]), tonumber(ARGV[7]), tonumber(ARGV[8])) then
  return held()
end
if id ~= '' then
  local reports = {}
  if tail == '}}}' then
    for _, e in ipairs(entries) do
      if e[3] > 0 or e[4] > 0 then return held() end
    end
  else
    local list, listed = string.sub(tail, 16, -4), {}
    for i, a in string.gmatch(list, '%[(%d+),(%d+)%]') do
      local r = {time(a), number(i)}
      if not (r[1] and r[2]) then return held() end
      for _, o in ipairs(reports) do
        if o[2] == r[2] then return held() end
      end
      reports[#reports + 1] = r
      listed[#listed + 1] = '[' .. i .. ',' .. a .. ']'
    end
    if list ~= table.concat(listed, ',') then return held() end
  end
  local me, at = tonumber(id), us
  if at > latest then return held() end
  local others = {}
  for _, r in ipairs(reports) do
    if r[2] == me then
      if r[1] > at then at = r[1] end
    else
      others[#others + 1] = r
    end
  end
  others[#others + 1] = {at, me}
  local covered = {}
  for _, r in ipairs(others) do
    if live(of(r[1])) then covered[#covered + 1] = r end
  end
  table.sort(covered, function(a, b)
    if a[1] ~= b[1] then return a[1] < b[1] end
    return a[2] < b[2]
  end)
  local named = {}
  for i = math.max(1, #covered - tonumber(ARGV[10]) + 1), #covered do
    named[#named + 1] = string.format('[%.0f,%.0f]', covered[i][2], covered[i][1])
  end
  if #named == 0 then
    tail = '}}}'
  else
    tail = '},"reporters":[' .. table.concat(named, ',') .. ']}}'
  end
end
table.sort(order)
local out = {}
for i, b in ipairs(order) do
  local x = sums[b]
  out[i] = string.format('[%.0f,%.0f,%.0f,%.0f]', b, x[1], x[2], x[3])
end
local written = p .. '[' .. table.concat(out, ',') .. ']' .. tail
redis.call('SET', KEYS[1], written, 'PX', ARGV[5])
if id ~= '' then return {1, t[1], t[2], written} end
return 1
"#;

pub(super) const DELETE: &str = r"
redis.call('DEL', KEYS[1])
if ARGV[1] ~= '' then
  local t = redis.call('TIME')
  redis.call(ARGV[2], ARGV[1], t[1] .. ' ' .. t[2] .. ' ' .. #KEYS[1] .. ' ' .. KEYS[1])
end
return 1
";
