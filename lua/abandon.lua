-- abandon: close a PROJECTING record whose lease has passed, because the
-- worker that began it died or gave up. The record becomes
-- ERROR/EXECUTION_ABANDONED with its remaining TTL kept exactly, leaves the
-- run's leases and enters the completion index, in one step; the owner's late
-- complete is then refused. Nothing of the run's counters changes: the call
-- was begun and stays counted.
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH
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

local cur = redis.call('HMGET', KEYS[1], 'status', 'evidence', 'error', 'created_ms', 'updated_ms', 'lease_ms',
  'owner', 'tool', 'request_sha256', 'cdigest')
if not cur[1] then
  redis.call('ZREM', KEYS[3], ARGV[1])
  return {'NOT_FOUND'}
end
local function reply(outcome, pttl)
  return {outcome, cur[1], cur[2], cur[3] or '', tonumber(cur[4]), tonumber(cur[5]), pttl, tonumber(cur[6] or '0'),
    cur[7], cur[8], cur[9], redis.call('HSTRLEN', KEYS[1], 'request'), redis.call('HSTRLEN', KEYS[1], 'raw')}
end
if cur[1] ~= 'PROJECTING' then
  if cur[10] == 'abandoned' then
    return reply('EXISTS', redis.call('PTTL', KEYS[1]))
  end
  return {'INVALID_TRANSITION', cur[1]}
end

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
if not cur[6] then
  -- Begun without a lease (by an older begin): it runs until the record expires.
  return {'LEASE_ACTIVE', redis.call('PTTL', KEYS[1])}
end
local lease = tonumber(cur[6])
if now < lease then
  return {'LEASE_ACTIVE', lease - now}
end

redis.call('HSET', KEYS[1], 'status', 'ERROR', 'evidence', 'ERROR', 'error', 'EXECUTION_ABANDONED',
  'updated_ms', now, 'cdigest', 'abandoned')
cur[1], cur[2], cur[3], cur[5] = 'ERROR', 'ERROR', 'EXECUTION_ABANDONED', now
local pttl = redis.call('PTTL', KEYS[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[1])
if redis.call('PTTL', KEYS[2]) < pttl then
  redis.call('PEXPIRE', KEYS[2], pttl)
end
return reply('OK', pttl)
