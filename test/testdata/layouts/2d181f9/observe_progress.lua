-- observe_progress: count one progress report of a run against the progress
-- protocol, atomically for every worker of the run.
--
-- An invalid report is a repairable observation: it raises "pending" (invalid
-- reports since the last valid one) and "violations". A valid report repairs:
-- it resets "pending" only. "violations" is never reset and saturates at the
-- threshold, where the run is marked violated for good.
--
-- KEYS[1] run  <prefix>:{<run_id>}:run  HASH
--
-- ARGV[1] valid      int  1 for a valid report, 0 for an invalid one
-- ARGV[2] threshold  int  > 0: violations at which the protocol is violated
-- ARGV[3] ttl_ms     int  lifetime of the run's state if it has none yet; an existing TTL is kept
--
-- RETRY unsafe  each run counts one more report: a resent report would be counted twice
--
-- RETURNS {"OK", reports int, pending int, violations int, violated int}

local created = redis.call('EXISTS', KEYS[1]) == 0
local reports = redis.call('HINCRBY', KEYS[1], 'pp_reports', 1)
local threshold = tonumber(ARGV[2])
local pending, violations
if ARGV[1] == '1' then
  redis.call('HSET', KEYS[1], 'pp_pending', 0)
  pending = 0
  violations = tonumber(redis.call('HGET', KEYS[1], 'pp_violations') or '0')
else
  pending = redis.call('HINCRBY', KEYS[1], 'pp_pending', 1)
  violations = tonumber(redis.call('HGET', KEYS[1], 'pp_violations') or '0')
  if violations < threshold then
    violations = violations + 1
    redis.call('HSET', KEYS[1], 'pp_violations', violations)
  end
end
local violated = 0
if violations >= threshold or redis.call('HGET', KEYS[1], 'pp_violated') == '1' then
  violated = 1
  redis.call('HSET', KEYS[1], 'pp_violated', 1)
end
if created then
  local t = redis.call('TIME')
  redis.call('HSET', KEYS[1], 'calls', 0, 'bytes', 0, 'state', 'open', 'created_ms', t[1] * 1000 + math.floor(t[2] / 1000))
end
-- A new state, or one some other writer left without a TTL, gets one.
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
end
return {'OK', reports, pending, violations, violated}
