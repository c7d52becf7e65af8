-- begin: create one call's record in PROJECTING, with a lease, and count it against its run.
--
-- The run's first begin fixes the run's limits in the run's state; every later
-- begin is checked against those. Every key written gets a TTL that covers the
-- record; a key found without one gets it too.
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH  a meta line and the payloads' parts
-- KEYS[2] run     <prefix>:{<run_id>}:run                  HASH
-- KEYS[3] index   <prefix>:{<run_id>}:done                 LIST  read only: tells a lost run state from a new run
-- KEYS[4] leases  <prefix>:{<run_id>}:leases               ZSET  PROJECTING calls by lease deadline
--
-- ARGV[1]  tool_call_id      string  the id in KEYS[1], for the run's leases
-- ARGV[2]  tool              string
-- ARGV[3]  owner             string  no spaces (stored in the record's meta line)
-- ARGV[4]  request           bytes   complete canonical request (a JSON object)
-- ARGV[5]  request_sha256    string  no spaces
-- ARGV[6]  ttl_ms            int     > 0; set once here, never extended
-- ARGV[7]  lease_ms          int     1..ttl_ms: time until abandon may close the call
-- ARGV[8]  calls_run         int     the caller's limits; 0 means the run's
-- ARGV[9]  calls_tool        int
-- ARGV[10] run_bytes         int
-- ARGV[11] record_bytes      int
-- ARGV[12] result_bytes      int
-- ARGV[13] new_calls_run     int     the limits a run without any takes (the caller's, defaulted)
-- ARGV[14] new_calls_tool    int
-- ARGV[15] new_run_bytes     int
-- ARGV[16] new_record_bytes  int
-- ARGV[17] new_result_bytes  int
-- ARGV[18] id_tag            string  no spaces: binds the record to its run_id and tool_call_id (stored in the meta line)
--
-- RETRY safe    a resent begin by the same owner with the same request finds its own record
--
-- RETURNS
--   {"OK", created_ms int, ttl_ms int, lease_ms int, calls_run int, calls_tool int, run_bytes int, record_bytes int, result_bytes int}
--     created; the limits are the run's
--   {"EXISTS", status string, evidence string, error string, created_ms int, updated_ms int, pttl int, lease_ms int, raw_len int, result bytes, calls_run int, calls_tool int, run_bytes int, record_bytes int, result_bytes int}
--     the same owner retried the same request (same tool and request digest): the record as it is, nothing counted again;
--     limits are 0 when the run's state is gone
--   {"TOOL_CALL_IN_PROGRESS"} | {"DUPLICATE_TOOL_CALL"} | {"BUDGET_EXHAUSTED"} | {"RESULT_TOO_LARGE"}
--     another call has the id (still PROJECTING, or finished), or the run's limits refuse it
--   {"RUN_INACTIVE", reason string}
--     reason "closed": the run was closed; "lost": its state is gone while its index or leases live
--   {"INVALID_ARGUMENT", field string}
--     a non-zero limit differs from the run's
--   refusals write nothing

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

-- get returns the payload name: its parts, read in one HMGET, up to the
-- first absent one.
local function get(name)
  local fields = {}
  for i = 1, PARTS do
    fields[i] = part(name, i)
  end
  local v, out = redis.call('HMGET', KEYS[1], unpack(fields)), {}
  for i = 1, PARTS do
    if not v[i] then break end
    out[i] = v[i]
  end
  return table.concat(out)
end

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)

-- A new call finds no key: one EXISTS, and the record is read only when
-- there is one.
if redis.call('EXISTS', KEYS[1]) == 1 then
  local m = redis.call('HGET', KEYS[1], 'meta')
  if not m then
    -- A hash under the record's key without a meta line is no record this
    -- layout wrote: never write over it.
    return {'DUPLICATE_TOOL_CALL'}
  end
  local cur = decode(m)
  if cur.owner == ARGV[3] and cur.tool == ARGV[2] and cur.request_sha256 == ARGV[5] then
    local lim = redis.call('HMGET', KEYS[2], 'lim_calls_run', 'lim_calls_tool', 'lim_run_bytes', 'lim_record_bytes',
      'lim_result_bytes')
    return {'EXISTS', cur.status, cur.evidence, cur.error or '', tonumber(cur.created), tonumber(cur.updated),
      redis.call('PTTL', KEYS[1]), tonumber(cur.lease or '0'), cur.size[2], get('result'),
      tonumber(lim[1] or '0'), tonumber(lim[2] or '0'), tonumber(lim[3] or '0'), tonumber(lim[4] or '0'),
      tonumber(lim[5] or '0')}
  end
  if cur.status == 'PROJECTING' then
    return {'TOOL_CALL_IN_PROGRESS'}
  end
  return {'DUPLICATE_TOOL_CALL'}
end

local tool_field = 'tool:' .. ARGV[2]
local run = redis.call('HMGET', KEYS[2], 'state', 'calls', tool_field, 'bytes',
  'lim_calls_run', 'lim_calls_tool', 'lim_run_bytes', 'lim_record_bytes', 'lim_result_bytes', 'lost')
if run[10] then
  return {'RUN_INACTIVE', 'lost'}
end
if run[1] == 'closed' then
  return {'RUN_INACTIVE', 'closed'}
end
local names = {'calls_run', 'calls_tool', 'run_bytes', 'record_bytes', 'result_bytes'}
local lim = {}
if run[5] then
  for i = 1, 5 do
    lim[i] = tonumber(run[4 + i])
    local given = tonumber(ARGV[7 + i])
    if given ~= 0 and given ~= lim[i] then
      return {'INVALID_ARGUMENT', names[i]}
    end
  end
else
  -- No limits: a new run, unless the run already has completed or running
  -- calls, in which case its state was lost and its budgets cannot restart.
  if redis.call('EXISTS', KEYS[3]) == 1 or redis.call('EXISTS', KEYS[4]) == 1 then
    return {'RUN_INACTIVE', 'lost'}
  end
  for i = 1, 5 do
    lim[i] = tonumber(ARGV[12 + i])
  end
end
if tonumber(run[2] or '0') >= lim[1] or tonumber(run[3] or '0') >= lim[2] then
  return {'BUDGET_EXHAUSTED'}
end
local size = string.len(ARGV[4])
if size > lim[4] or tonumber(run[4] or '0') + size > lim[3] then
  return {'RESULT_TOO_LARGE'}
end

local ttl = tonumber(ARGV[6])
local lease = now + tonumber(ARGV[7])
local args = {'meta', encode({status = 'PROJECTING', evidence = 'UNKNOWN', id = ARGV[18], tool = ARGV[2], owner = ARGV[3],
  created = now, updated = now, lease = lease, size = {size, 0, 0}, request_sha256 = ARGV[5]})}
put(args, 'request', ARGV[4])
redis.call('HSET', KEYS[1], unpack(args))
redis.call('PEXPIRE', KEYS[1], ttl)

redis.call('HINCRBY', KEYS[2], 'calls', 1)
redis.call('HINCRBY', KEYS[2], tool_field, 1)
redis.call('HINCRBY', KEYS[2], 'bytes', size)
if not run[5] then
  redis.call('HSET', KEYS[2], 'lim_calls_run', lim[1], 'lim_calls_tool', lim[2], 'lim_run_bytes', lim[3],
    'lim_record_bytes', lim[4], 'lim_result_bytes', lim[5])
end
redis.call('HSETNX', KEYS[2], 'state', 'open')
redis.call('HSETNX', KEYS[2], 'created_ms', now)
-- The run's state and leases must outlive every record they count.
if redis.call('PTTL', KEYS[2]) < ttl then
  redis.call('PEXPIRE', KEYS[2], ttl)
end
redis.call('ZADD', KEYS[4], lease, ARGV[1])
if redis.call('PTTL', KEYS[4]) < ttl then
  redis.call('PEXPIRE', KEYS[4], ttl)
end
return {'OK', now, ttl, lease, lim[1], lim[2], lim[3], lim[4], lim[5]}
