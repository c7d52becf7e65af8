-- complete: move a PROJECTING record to READY or ERROR and append it to the
-- run's completion index, in one step. The record's TTL is kept exactly (HSET
-- does not touch it); the index is extended only to cover the record. The
-- completion is checked against the run's limits. When the run's state is gone
-- (evicted, deleted), or is another generation than the record's (it was lost
-- and a later begin made a new one), the outcome is still recorded, and the
-- run is marked lost and closed, with a TTL no longer than the record's. The
-- index is set to expire with the record (PEXPIRETIME, PEXPIREAT: one
-- absolute time, no second clock read), unless it expires later already.
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
--     OK: the transition asked for was made; EXISTS: the same owner already made this completion (the stored outcome),
--     its meta line written back unchanged, so that the reply follows a write of this script's own: WAIT
--     (Redis 7.2+, Valkey) counts only what its connection propagated;
--     RESULT_TOO_LARGE: over a byte limit, the record is now ERROR/RESULT_TOO_LARGE with no raw or result;
--     overflow is 1 when the completion was refused for its size, else 0; raw_len is the raw response stored
--   {"NOT_FOUND"}
--     no record (never begun, or expired)
--   {"INVALID_TRANSITION", status string}
--     wrong owner, terminal record (abandoned included), or a malformed completion: nothing changed

-- #include layout.lib

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
    redis.call('HSET', KEYS[1], 'meta', m)
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
local expires = redis.call('PEXPIRETIME', KEYS[1])
local req_len = cur.size[1]
local run = redis.call('HMGET', KEYS[2], 'bytes', 'lim_run_bytes', 'lim_record_bytes', 'lim_result_bytes', 'gen')
local outcome, overflow = 'OK', 0
if not run[2] or (cur.gen and run[5] and cur.gen ~= run[5]) then
  -- The run's state is gone while its record lives, or the state is a new
  -- one a begin made after it was lost: record the outcome all the same
  -- (the record is the canonical one), and mark the run lost and closed, so
  -- that its budgets never silently start again from zero.
  redis.call('HSET', KEYS[2], 'state', 'closed', 'lost', 1)
  redis.call('HSETNX', KEYS[2], 'created_ms', now)
  if redis.call('PEXPIRETIME', KEYS[2]) < expires then
    redis.call('PEXPIREAT', KEYS[2], expires)
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
if redis.call('PEXPIRETIME', KEYS[3]) < expires then
  redis.call('PEXPIREAT', KEYS[3], expires)
end
return {outcome, status, evidence, code, tonumber(cur.created), now, pttl, cur.tool, cur.request_sha256, overflow,
  tonumber(cur.lease or '0'), req_len, stored_raw}
