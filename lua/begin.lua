-- begin: create one call's record in PROJECTING and count it against its run.
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH
-- KEYS[2] run     <prefix>:{<run_id>}:run                  HASH
--
-- ARGV[1]  run_id            string
-- ARGV[2]  tool_call_id      string
-- ARGV[3]  tool              string
-- ARGV[4]  owner             string
-- ARGV[5]  request           bytes   complete canonical request (a JSON object)
-- ARGV[6]  request_sha256    string
-- ARGV[7]  ttl_ms            int     > 0; set once here, never extended
-- ARGV[8]  max_calls_run     int
-- ARGV[9]  max_calls_tool    int
-- ARGV[10] max_run_bytes     int
-- ARGV[11] max_record_bytes  int
-- ARGV[12] max_result_bytes  int
--
-- RETRY safe    a resent begin by the same owner with the same request finds its own record
--
-- RETURNS array
--   {"OK", created_ms, ttl_ms}                                       created
--   {"EXISTS", status, evidence, error, created_ms, updated_ms, pttl} the same owner retried the same request
--                                                                   (same tool and request digest): nothing counted again
--   {"DUPLICATE_TOOL_CALL"} | {"RUN_INACTIVE"} | {"BUDGET_EXHAUSTED"} | {"RESULT_TOO_LARGE"}
--   refusals write nothing

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)

local cur = redis.call('HMGET', KEYS[1], 'owner', 'status', 'evidence', 'error', 'created_ms', 'updated_ms',
  'tool', 'request_sha256')
if cur[1] then
  if cur[1] == ARGV[4] and cur[7] == ARGV[3] and cur[8] == ARGV[6] then
    return {'EXISTS', cur[2], cur[3], cur[4] or '', cur[5], cur[6], redis.call('PTTL', KEYS[1])}
  end
  return {'DUPLICATE_TOOL_CALL'}
end

local tool_field = 'tool:' .. ARGV[3]
local run = redis.call('HMGET', KEYS[2], 'state', 'calls', tool_field, 'bytes')
if run[1] == 'closed' then
  return {'RUN_INACTIVE'}
end
if tonumber(run[2] or '0') >= tonumber(ARGV[8]) then
  return {'BUDGET_EXHAUSTED'}
end
if tonumber(run[3] or '0') >= tonumber(ARGV[9]) then
  return {'BUDGET_EXHAUSTED'}
end
local size = string.len(ARGV[5])
if size > tonumber(ARGV[11]) or tonumber(run[4] or '0') + size > tonumber(ARGV[10]) then
  return {'RESULT_TOO_LARGE'}
end

local ttl = tonumber(ARGV[7])
redis.call('HSET', KEYS[1],
  'run_id', ARGV[1], 'tool_call_id', ARGV[2], 'tool', ARGV[3], 'owner', ARGV[4],
  'status', 'PROJECTING', 'evidence', 'UNKNOWN',
  'request', ARGV[5], 'request_sha256', ARGV[6],
  'lim_run_bytes', ARGV[10], 'lim_record_bytes', ARGV[11], 'lim_result_bytes', ARGV[12],
  'created_ms', now, 'updated_ms', now)
redis.call('PEXPIRE', KEYS[1], ttl)

redis.call('HINCRBY', KEYS[2], 'calls', 1)
redis.call('HINCRBY', KEYS[2], tool_field, 1)
redis.call('HINCRBY', KEYS[2], 'bytes', size)
redis.call('HSETNX', KEYS[2], 'state', 'open')
redis.call('HSETNX', KEYS[2], 'created_ms', now)
-- The run's state must outlive every record it counts.
if redis.call('PTTL', KEYS[2]) < ttl then
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return {'OK', now, ttl}
