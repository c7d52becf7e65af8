-- complete: move a PROJECTING record to READY or ERROR and append it to the
-- run's completion index, in one step. The record's TTL is kept exactly (HSET
-- does not touch it); the index is extended only to cover the record. The
-- completion is checked against the run's limits. When the run's state is gone
-- (evicted, deleted) the outcome is still recorded, and the run is marked lost
-- and closed, with a TTL no longer than the record's.
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH  a meta line and the payloads' parts
-- KEYS[2] run     <prefix>:{<run_id>}:run                  HASH
-- KEYS[3] index   <prefix>:{<run_id>}:done                 LIST
-- KEYS[4] leases  <prefix>:{<run_id>}:leases               ZSET
--
-- ARGV[1] owner      string  must equal the record's owner
-- ARGV[2] status     string  READY | ERROR
-- ARGV[3] evidence   string  READY: EVIDENCE_FOUND | NO_EVIDENCE; ERROR: ERROR
-- ARGV[4] code       string  ERROR: stable error code; READY: empty
-- ARGV[5] raw        bytes   complete raw tool response (may be empty for ERROR)
-- ARGV[6] result     bytes   READY: agent-facing result; ERROR: empty
-- ARGV[7] digest     string  digest of ARGV[2..6], to recognise a retry; no spaces
--
-- RETRY safe    a resent completion by the same owner is recognised by its digest
--
-- RETURNS
--   {"OK"|"EXISTS"|"RESULT_TOO_LARGE", status string, evidence string, error string, created_ms int, updated_ms int, pttl int, tool string, request_sha256 string, overflow int, lease_ms int, request_len int, raw_len int}
--     OK: the transition asked for was made; EXISTS: the same owner already made this completion (the stored outcome);
--     RESULT_TOO_LARGE: over a byte limit, the record is now ERROR/RESULT_TOO_LARGE with no raw or result;
--     overflow is 1 when the completion was refused for its size, else 0; raw_len is the raw response stored
--   {"NOT_FOUND"}
--     no record (never begun, or expired)
--   {"INVALID_TRANSITION", status string}
--     wrong owner, terminal record (abandoned included), or a malformed completion: nothing changed

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

-- The tool_call_id is the key's: after the run's hash tag and "call:".
local id = string.match(KEYS[1], '}:call:(.+)$')

local m = redis.call('HGET', KEYS[1], 'meta')
if not m then
  return {'NOT_FOUND'}
end
local cur = decode(m)
if cur.owner ~= ARGV[1] then
  return {'INVALID_TRANSITION', cur.status}
end
if cur.status ~= 'PROJECTING' then
  if cur.completion == ARGV[7] then
    return {'EXISTS', cur.status, cur.evidence, cur.error or '', tonumber(cur.created), tonumber(cur.updated),
      redis.call('PTTL', KEYS[1]), cur.tool, cur.request_sha256, tonumber(cur.overflow or '0'),
      tonumber(cur.lease or '0'), cur.size[1], cur.size[2]}
  end
  return {'INVALID_TRANSITION', cur.status}
end

local status, evidence, code = ARGV[2], ARGV[3], ARGV[4]
local raw_len, result_len = string.len(ARGV[5]), string.len(ARGV[6])
if status == 'READY' then
  if (evidence ~= 'EVIDENCE_FOUND' and evidence ~= 'NO_EVIDENCE') or code ~= '' or result_len == 0 then
    return {'INVALID_TRANSITION', cur.status}
  end
elseif status == 'ERROR' then
  if evidence ~= 'ERROR' or code == '' or result_len ~= 0 then
    return {'INVALID_TRANSITION', cur.status}
  end
else
  return {'INVALID_TRANSITION', cur.status}
end

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local pttl = redis.call('PTTL', KEYS[1])
local req_len = cur.size[1]
local run = redis.call('HMGET', KEYS[2], 'bytes', 'lim_run_bytes', 'lim_record_bytes', 'lim_result_bytes')
local outcome, overflow = 'OK', 0
if not run[2] then
  -- The run's state is gone while its record lives: record the outcome all
  -- the same (the record is the canonical one), and mark the run lost and
  -- closed, so that its budgets never silently start again from zero.
  redis.call('HSET', KEYS[2], 'state', 'closed', 'lost', 1)
  redis.call('HSETNX', KEYS[2], 'created_ms', now)
  if redis.call('PTTL', KEYS[2]) < pttl then
    redis.call('PEXPIRE', KEYS[2], pttl)
  end
elseif result_len > tonumber(run[4]) or req_len + raw_len + result_len > tonumber(run[3])
    or tonumber(run[1] or '0') + raw_len + result_len > tonumber(run[2]) then
  -- Never truncate: refuse the payload and record why.
  outcome, overflow, status, evidence, code = 'RESULT_TOO_LARGE', 1, 'ERROR', 'ERROR', 'RESULT_TOO_LARGE'
end

cur.status, cur.evidence, cur.updated, cur.completion = status, evidence, now, ARGV[7]
if code ~= '' then
  cur.error = code
end
local stored_raw = 0
local args = {'meta', ''}
if overflow == 1 then
  cur.overflow = 1
elseif status == 'READY' then
  cur.size[2], cur.size[3] = raw_len, result_len
  put(args, 'raw', ARGV[5])
  put(args, 'result', ARGV[6])
  redis.call('HINCRBY', KEYS[2], 'bytes', raw_len + result_len)
  stored_raw = raw_len
else
  cur.size[2] = raw_len
  put(args, 'raw', ARGV[5])
  redis.call('HINCRBY', KEYS[2], 'bytes', raw_len)
  stored_raw = raw_len
end
args[2] = encode(cur)
redis.call('HSET', KEYS[1], unpack(args))

redis.call('ZREM', KEYS[4], id)
redis.call('RPUSH', KEYS[3], id)
if redis.call('PTTL', KEYS[3]) < pttl then
  redis.call('PEXPIRE', KEYS[3], pttl)
end
return {outcome, status, evidence, code, tonumber(cur.created), now, pttl, cur.tool, cur.request_sha256, overflow,
  tonumber(cur.lease or '0'), req_len, stored_raw}
