-- observe_progress: count one progress report of a run against the progress
-- protocol, atomically for every worker of the run.
--
-- An invalid report is a repairable observation: it raises "pending" (invalid
-- reports since the last valid one) and "violations". A valid report repairs:
-- it resets "pending" only. "violations" is never reset and saturates at the
-- threshold, where the run is marked violated for good.
--
-- KEYS[1] run     <prefix>:{<run_id>}:run     HASH
-- KEYS[2] live    <prefix>:{<run_id>}:live    STRING  read only: tells a lost run from a new one
-- KEYS[3] index   <prefix>:{<run_id>}:done    LIST    read only: likewise
-- KEYS[4] leases  <prefix>:{<run_id>}:leases  ZSET    read only: likewise
--
-- ARGV[1] valid      int  1 for a valid report, 0 for an invalid one
-- ARGV[2] threshold  int  > 0: violations at which the protocol is violated
-- ARGV[3] ttl_ms     int     lifetime of the run's state if it has none yet; an existing TTL is kept
-- ARGV[4] principal  string  the caller's principal tag (64 hex): only the run's owner reports on it
--
-- RETRY unsafe  each run counts one more report: a resent report would be counted twice
--
-- RETURNS
--   {"OK", reports int, pending int, violations int, violated int}
--   {"RUN_FORBIDDEN"}
--     the run belongs to another principal; nothing is counted

local principal = redis.call('HGET', KEYS[1], 'principal')
if principal and principal ~= ARGV[4] then
  return {'RUN_FORBIDDEN'}
end
-- A lost run (no limits while a key only a begun run has lives) has no
-- owner any more, and a report makes nobody its owner.
local lost = not principal and not redis.call('HGET', KEYS[1], 'lim_calls_run')
  and redis.call('EXISTS', KEYS[2], KEYS[3], KEYS[4]) > 0
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
if not lost then
  redis.call('HSETNX', KEYS[1], 'principal', ARGV[4])
end
-- A new state, or one some other writer left without a TTL, gets one.
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
end
return {'OK', reports, pending, violations, violated}
