-- abandon: close a PROJECTING record whose lease has passed, because the
-- worker that began it died or gave up. The record becomes
-- ERROR/EXECUTION_ABANDONED with its remaining TTL kept exactly, leaves the
-- run's leases and enters the completion index, in one step; the owner's late
-- complete is then refused. Nothing of the run's counters changes: the call
-- was begun and stays counted.
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH  a meta line and the payloads' parts
-- KEYS[2] index   <prefix>:{<run_id>}:done                 LIST
-- KEYS[3] leases  <prefix>:{<run_id>}:leases               ZSET
--
-- ARGV[1] tool_call_id  string  the record's id, dropped from the leases when the record is gone
--
-- RETRY safe    a resent abandon finds the record it abandoned and returns it; the lease is checked again
--
-- RETURNS
--   {"OK"|"EXISTS", status string, evidence string, error string, created_ms int, updated_ms int, pttl int, lease_ms int, owner string, tool string, request_sha256 string, request_len int, raw_len int}
--     OK: abandoned now; EXISTS: abandoned before (the stored outcome)
--   {"LEASE_ACTIVE", remaining_ms int}
--     the lease has not passed: nothing changed
--   {"INVALID_TRANSITION", status string}
--     the record was completed by its owner: nothing changed
--   {"NOT_FOUND"}
--     no record (never begun, or expired); a leftover lease entry is dropped

-- layout.lib: the record's layout, shared by begin, complete and abandon. Each
-- of them has an include line naming this file, which package lua replaces
-- with this text before the script is loaded, hashed or checked: the scripts
-- Redis runs are whole, and this code exists once. It calls no command and
-- reads no KEYS or ARGV.
--
-- Field "meta" holds the call's state in one line of space-separated words:
--   <status> <evidence> id=<tag> [error=<code>] tool=<tool> owner=<owner> created=<ms> updated=<ms> [lease=<ms>]
--   sizes=<request>,<raw>,<result> request_sha256=<digest> [completion=<digest>] [overflow=1]
-- The record's key holds its run_id and tool_call_id; id=<tag> binds the record
-- to them, so that a record copied under another key is told apart. Each payload (request,
-- raw, result) is the concatenation of the fields <name>, <name>.2, ...,
-- <name>.8: a payload is cut where an allocator size class ends, so that its
-- parts do not waste the rounding of one big allocation.
local META = {'id', 'error', 'tool', 'owner', 'created', 'updated', 'lease', 'sizes', 'request_sha256', 'completion',
  'overflow'}
local function decode(m)
  local r, i = {}, 0
  for w in string.gmatch(m, '%S+') do
    i = i + 1
    if i == 1 then
      r.status = w
    elseif i == 2 then
      r.evidence = w
    else
      local k, v = string.match(w, '^([%w_]+)=(%S*)$')
      if k then
        r[k] = v
      end
    end
  end
  local q, w, s = string.match(r.sizes or '', '^(%d+),(%d+),(%d+)$')
  r.size = {tonumber(q or '0'), tonumber(w or '0'), tonumber(s or '0')}
  return r
end
local function encode(r)
  r.sizes = string.format('%d,%d,%d', r.size[1], r.size[2], r.size[3])
  local out = {r.status, r.evidence}
  for _, k in ipairs(META) do
    if r[k] then
      out[#out + 1] = k .. '=' .. (type(r[k]) == 'number' and string.format('%d', r[k]) or r[k])
    end
  end
  return table.concat(out, ' ')
end
local PARTS = 8
-- sds: the bytes Redis allocates for a string of n bytes, before rounding.
local function sds(n)
  if n < 32 then return n + 2 elseif n < 256 then return n + 4 elseif n < 65536 then return n + 6
  elseif n < 4294967296 then return n + 10 end
  return n + 18
end
-- class: the allocation size class of n bytes (jemalloc: 8-byte steps to 64,
-- then four classes per doubling); below: the class just under class c.
local function group(n)
  local g = 64
  while g * 2 < n do g = g * 2 end
  return g
end
local function class(n)
  if n <= 64 then return math.ceil(n / 8) * 8 end
  local step = group(n) / 4
  return math.ceil(n / step) * step
end
local function below(c)
  if c <= 64 then return c - 8 end
  return c - group(c) / 4
end
-- parts: the lengths of the parts of an n-byte payload. A part fills its
-- class exactly, but the last, which wastes at most 48 bytes (or is the eighth).
local function parts(n)
  local out = {}
  while n > 0 do
    local a = sds(n)
    if class(a) - a <= 48 or #out == PARTS - 1 then
      out[#out + 1] = n
      break
    end
    local b, p = below(class(a)), 0
    for _, h in ipairs({2, 4, 6, 10, 18}) do
      if b - h > 0 and sds(b - h) == b then p = b - h break end
    end
    if p < 1 or p > n then
      out[#out + 1] = n
      break
    end
    out[#out + 1] = p
    n = n - p
  end
  return out
end
local function part(name, i)
  if i == 1 then return name end
  return name .. '.' .. i
end
-- put appends to args the fields and values that hold data as name's parts.
local function put(args, name, data)
  local off = 1
  for i, p in ipairs(parts(string.len(data))) do
    args[#args + 1] = part(name, i)
    args[#args + 1] = string.sub(data, off, off + p - 1)
    off = off + p
  end
end

local m = redis.call('HGET', KEYS[1], 'meta')
if not m then
  redis.call('ZREM', KEYS[3], ARGV[1])
  return {'NOT_FOUND'}
end
local cur = decode(m)
local function reply(outcome, pttl)
  return {outcome, cur.status, cur.evidence, cur.error or '', tonumber(cur.created), tonumber(cur.updated), pttl,
    tonumber(cur.lease or '0'), cur.owner, cur.tool, cur.request_sha256, cur.size[1], cur.size[2]}
end
if cur.status ~= 'PROJECTING' then
  if cur.completion == 'abandoned' then
    return reply('EXISTS', redis.call('PTTL', KEYS[1]))
  end
  return {'INVALID_TRANSITION', cur.status}
end

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
if not cur.lease then
  -- Begun without a lease: it runs until the record expires.
  return {'LEASE_ACTIVE', redis.call('PTTL', KEYS[1])}
end
local lease = tonumber(cur.lease)
if now < lease then
  return {'LEASE_ACTIVE', lease - now}
end

cur.status, cur.evidence, cur.error, cur.updated, cur.completion = 'ERROR', 'ERROR', 'EXECUTION_ABANDONED', now,
  'abandoned'
redis.call('HSET', KEYS[1], 'meta', encode(cur))
local pttl = redis.call('PTTL', KEYS[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[1])
if redis.call('PTTL', KEYS[2]) < pttl then
  redis.call('PEXPIRE', KEYS[2], pttl)
end
return reply('OK', pttl)
