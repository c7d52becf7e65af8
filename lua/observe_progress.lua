-- observe_progress: count one progress report of a run against the progress
-- protocol, atomically for every worker of the run.
--
-- An invalid report is a repairable observation: it raises "pending" (invalid
-- reports since the last valid one) and "violations". A valid report repairs:
-- it resets "pending" only. "violations" is never reset and saturates at the
-- threshold, where the run is marked violated for good. Only a begin claims
-- a run: a run with no state is not created here.
--
-- KEYS[1] run     <prefix>:{<run_id>}:run     HASH
--
-- ARGV[1] valid      int     1 for a valid report, 0 for an invalid one
-- ARGV[2] threshold  int     > 0: violations at which the protocol is violated
-- ARGV[3] principal  string  the caller's principal tag (64 hex): only the run's owner reports on it
--
-- RETRY unsafe  each run counts one more report: a resent report would be counted twice
--
-- RETURNS
--   {"OK", reports int, pending int, violations int, violated int}
--   {"RUN_FORBIDDEN"}
--     the run belongs to another principal; nothing is counted
--   {"LAYOUT_MISMATCH"}
--     the run's state is of another layout (an earlier release's); nothing is counted
--   {"NOT_FOUND"}
--     the run has no state: nobody began it (or its state is lost); nothing
--     is written, so that a report claims no run
--   {"RUN_INACTIVE", reason string}
--     reason "lost": the state has no owner, as a complete leaves it after the run's state was lost; nothing is
--     counted, so that no counter outlives the loss into the next run of the id

-- #include format.lib

local run = redis.call('HMGET', KEYS[1], RUN_IDENT_FIELD, 'state', RUN_LAYOUT_FIELD)
if run[2] and (not run[3] or sub(run[3], 1, RUN_LAYOUT_LEN) ~= RUN_LAYOUT) then
  return {'LAYOUT_MISMATCH'}
end
if run[1] and sub(run[1], 1, PRINCIPAL_LEN) ~= ARGV[3] then
  return {'RUN_FORBIDDEN'}
end
if not run[2] then
  return {'NOT_FOUND'}
end
if not run[1] then
  return {'RUN_INACTIVE', 'lost'}
end
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
return {'OK', reports, pending, violations, violated}
