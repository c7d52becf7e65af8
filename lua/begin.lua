-- begin: create one call's record in PROJECTING, with a lease, and count it against its run.
--
-- The run's first begin fixes the run's limits and its generation in the
-- run's state; every later begin is checked against those, and each record
-- keeps the generation it was counted in. Every key written gets the
-- record's expiry as an absolute time (PEXPIREAT), unless it already expires
-- later; a key found without one gets it too. So the run's state, leases and
-- live marker expire at the same moment, the latest of their records'
-- (a close extends state and marker alike).
--
-- A run whose state is gone (evicted, deleted) while its live marker, index
-- or leases live is lost: it is refused, never restarted with fresh budgets.
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH  a meta line and the payloads' parts
-- KEYS[2] run     <prefix>:{<run_id>}:run                  HASH
-- KEYS[3] index   <prefix>:{<run_id>}:done                 LIST  read only: tells a lost run state from a new run
-- KEYS[4] leases  <prefix>:{<run_id>}:leases               ZSET  PROJECTING calls by lease deadline
-- KEYS[5] live    <prefix>:{<run_id>}:live                 STRING  the run has begun calls; expires with the run's state
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
-- ARGV[19] principal         string  the caller's principal tag (64 hex): the run's owner once the run has one
-- ARGV[20] generation        string  no spaces: the generation a run without one takes (random per Begin)
--
-- RETRY safe    a resent begin by the same owner with the same request finds its own record
--
-- RETURNS
--   {"OK", created_ms int, ttl_ms int, lease_ms int, calls_run int, calls_tool int, run_bytes int, record_bytes int, result_bytes int}
--     created; the limits are the run's
--   {"EXISTS", status string, evidence string, error string, created_ms int, updated_ms int, pttl int, lease_ms int, raw_len int, result bytes, calls_run int, calls_tool int, run_bytes int, record_bytes int, result_bytes int}
--     the same owner retried the same request (same tool and request digest): the record as it is, nothing counted again;
--     limits are 0 when the run's state is gone. The meta line is written back unchanged, so that the reply
--     follows a write of this script's own: WAIT (Redis 7.2+, Valkey) counts only what its connection propagated
--   {"RUN_FORBIDDEN"}
--     the run belongs to another principal; checked before anything else, so it tells nothing of the run
--   {"TOOL_CALL_IN_PROGRESS"} | {"DUPLICATE_TOOL_CALL"} | {"BUDGET_EXHAUSTED"} | {"RESULT_TOO_LARGE"}
--     another call has the id (still PROJECTING, or finished), or the run's limits refuse it
--   {"RUN_INACTIVE", reason string}
--     reason "closed": the run was closed; "lost": its state is gone while its live marker, index or leases live
--   {"INVALID_ARGUMENT", field string}
--     a non-zero limit differs from the run's
--   refusals write nothing

-- #include layout.lib

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

-- The run's owner first: another principal learns nothing, not even
-- whether the call id is taken. A run whose state is lost has no owner any
-- more, and is refused below (RUN_INACTIVE "lost") to every principal.
local principal = redis.call('HGET', KEYS[2], 'principal')
if principal and principal ~= ARGV[19] then
  return {'RUN_FORBIDDEN'}
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
    redis.call('HSET', KEYS[1], 'meta', m)
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
  'lim_calls_run', 'lim_calls_tool', 'lim_run_bytes', 'lim_record_bytes', 'lim_result_bytes', 'lost', 'gen')
if run[10] then
  return {'RUN_INACTIVE', 'lost'}
end
if run[1] == 'closed' then
  return {'RUN_INACTIVE', 'closed'}
end
local names = {'calls_run', 'calls_tool', 'run_bytes', 'record_bytes', 'result_bytes'}
local lim = {}
local gen = run[11]
if run[5] then
  for i = 1, 5 do
    lim[i] = tonumber(run[4 + i])
    local given = tonumber(ARGV[7 + i])
    if given ~= 0 and given ~= lim[i] then
      return {'INVALID_ARGUMENT', names[i]}
    end
  end
else
  -- No limits: a new run, unless the run already began calls (its live
  -- marker, index or leases live: none outlives the state it belongs to),
  -- in which case its state was lost and its budgets cannot restart.
  if redis.call('EXISTS', KEYS[5], KEYS[3], KEYS[4]) > 0 then
    return {'RUN_INACTIVE', 'lost'}
  end
  for i = 1, 5 do
    lim[i] = tonumber(ARGV[12 + i])
  end
  gen = ARGV[20]
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
  created = now, updated = now, lease = lease, size = {size, 0, 0}, request_sha256 = ARGV[5], gen = gen})}
put(args, 'request', ARGV[4])
redis.call('HSET', KEYS[1], unpack(args))
redis.call('PEXPIRE', KEYS[1], ttl)
local expires = redis.call('PEXPIRETIME', KEYS[1])

redis.call('HINCRBY', KEYS[2], 'calls', 1)
redis.call('HINCRBY', KEYS[2], tool_field, 1)
redis.call('HINCRBY', KEYS[2], 'bytes', size)
if not run[5] then
  redis.call('HSET', KEYS[2], 'lim_calls_run', lim[1], 'lim_calls_tool', lim[2], 'lim_run_bytes', lim[3],
    'lim_record_bytes', lim[4], 'lim_result_bytes', lim[5], 'gen', gen)
end
redis.call('HSETNX', KEYS[2], 'state', 'open')
redis.call('HSETNX', KEYS[2], 'principal', ARGV[19])
redis.call('HSETNX', KEYS[2], 'created_ms', now)
-- The run's state, leases and live marker must outlive every record they
-- count, and expire together: each is set to the record's expiry as an
-- absolute time unless it expires later already, so that none expires a
-- millisecond before another from a second clock read.
if redis.call('PEXPIRETIME', KEYS[2]) < expires then
  redis.call('PEXPIREAT', KEYS[2], expires)
end
redis.call('ZADD', KEYS[4], lease, ARGV[1])
if redis.call('PEXPIRETIME', KEYS[4]) < expires then
  redis.call('PEXPIREAT', KEYS[4], expires)
end
redis.call('SET', KEYS[5], gen, 'NX')
if redis.call('PEXPIRETIME', KEYS[5]) < expires then
  redis.call('PEXPIREAT', KEYS[5], expires)
end
return {'OK', now, ttl, lease, lim[1], lim[2], lim[3], lim[4], lim[5]}
