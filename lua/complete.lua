-- complete: move a PROJECTING record to READY or ERROR and append it to the
-- run's completion index, in one step. The record's TTL is kept exactly (HSET
-- does not touch it); the index is extended only to cover the record.
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH
-- KEYS[2] run     <prefix>:{<run_id>}:run                  HASH
-- KEYS[3] index   <prefix>:{<run_id>}:done                 LIST
--
-- ARGV[1] owner      string  must equal the record's owner
-- ARGV[2] status     string  READY | ERROR
-- ARGV[3] evidence   string  READY: EVIDENCE_FOUND | NO_EVIDENCE; ERROR: ERROR
-- ARGV[4] code       string  ERROR: stable error code; READY: empty
-- ARGV[5] raw        bytes   complete raw tool response (may be empty for ERROR)
-- ARGV[6] result     bytes   READY: agent-facing result; ERROR: empty
-- ARGV[7] digest     string  digest of ARGV[2..6], to recognise a retry
--
-- RETRY safe    a resent completion by the same owner is recognised by its digest
--
-- RETURNS array {outcome, status, evidence, error, created_ms, updated_ms, pttl, tool, request_sha256, overflow}
--   outcome "OK"                  the transition asked for was made
--   outcome "EXISTS"              the same owner already made this completion: stored outcome
--   outcome "RESULT_TOO_LARGE"    over a byte limit: the record is now ERROR/RESULT_TOO_LARGE, no raw or result stored
--   overflow                      1 when the completion was refused for its size (no raw or result stored), else 0
--   {"NOT_FOUND"}                 no record (never begun, or expired)
--   {"INVALID_TRANSITION", status} wrong owner, terminal record, or a malformed completion: nothing changed

local cur = redis.call('HMGET', KEYS[1], 'owner', 'status', 'evidence', 'error', 'created_ms', 'updated_ms',
  'cdigest', 'lim_run_bytes', 'lim_record_bytes', 'lim_result_bytes', 'tool_call_id', 'tool', 'request_sha256', 'overflow')
if not cur[2] then
  return {'NOT_FOUND'}
end
if cur[1] ~= ARGV[1] then
  return {'INVALID_TRANSITION', cur[2]}
end
if cur[2] ~= 'PROJECTING' then
  if cur[7] == ARGV[7] then
    return {'EXISTS', cur[2], cur[3], cur[4] or '', cur[5], cur[6], redis.call('PTTL', KEYS[1]), cur[12], cur[13],
      tonumber(cur[14] or '0')}
  end
  return {'INVALID_TRANSITION', cur[2]}
end

local status, evidence, code = ARGV[2], ARGV[3], ARGV[4]
local raw_len, result_len = string.len(ARGV[5]), string.len(ARGV[6])
if status == 'READY' then
  if (evidence ~= 'EVIDENCE_FOUND' and evidence ~= 'NO_EVIDENCE') or code ~= '' or result_len == 0 then
    return {'INVALID_TRANSITION', cur[2]}
  end
elseif status == 'ERROR' then
  if evidence ~= 'ERROR' or code == '' or result_len ~= 0 then
    return {'INVALID_TRANSITION', cur[2]}
  end
else
  return {'INVALID_TRANSITION', cur[2]}
end

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local req_len = redis.call('HSTRLEN', KEYS[1], 'request')
local run_bytes = tonumber(redis.call('HGET', KEYS[2], 'bytes') or '0')
local outcome, overflow = 'OK', 0
if result_len > tonumber(cur[10]) or req_len + raw_len + result_len > tonumber(cur[9])
    or run_bytes + raw_len + result_len > tonumber(cur[8]) then
  -- Never truncate: refuse the payload and record why.
  outcome, overflow, status, evidence, code = 'RESULT_TOO_LARGE', 1, 'ERROR', 'ERROR', 'RESULT_TOO_LARGE'
  redis.call('HSET', KEYS[1], 'status', status, 'evidence', evidence, 'error', code,
    'updated_ms', now, 'cdigest', ARGV[7], 'overflow', 1)
elseif status == 'READY' then
  redis.call('HSET', KEYS[1], 'status', status, 'evidence', evidence, 'raw', ARGV[5], 'result', ARGV[6],
    'updated_ms', now, 'cdigest', ARGV[7])
  redis.call('HINCRBY', KEYS[2], 'bytes', raw_len + result_len)
else
  redis.call('HSET', KEYS[1], 'status', status, 'evidence', evidence, 'error', code, 'raw', ARGV[5],
    'updated_ms', now, 'cdigest', ARGV[7])
  redis.call('HINCRBY', KEYS[2], 'bytes', raw_len)
end

redis.call('RPUSH', KEYS[3], cur[11])
local pttl = redis.call('PTTL', KEYS[1])
if redis.call('PTTL', KEYS[3]) < pttl then
  redis.call('PEXPIRE', KEYS[3], pttl)
end
return {outcome, status, evidence, code, cur[5], now, pttl, cur[12], cur[13], overflow}
