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
--   {"LAYOUT_MISMATCH"}
--     the run's state is of another layout (an earlier release's); nothing is counted
--   {"RUN_INACTIVE", reason string}
--     reason "lost": the run's state is lost while a key only a begun run has lives; nothing is counted, so that
--     no counter outlives the loss into the next run of the id

-- #include format.lib

local run = redis.call('HMGET', KEYS[1], 'principal', 'lim_calls_run', 'state', RUN_LAYOUT_FIELD)
if other_layout(run, 3, 4) then
  return {'LAYOUT_MISMATCH'}
end
local principal = run[1]
if principal and principal ~= ARGV[4] then
  return {'RUN_FORBIDDEN'}
end
-- A lost run (no limits while a key only a begun run has lives) has no
-- owner any more: its reports are refused, counting nothing.
if not principal and not run[2] and redis.call('EXISTS', KEYS[2], KEYS[3], KEYS[4]) > 0 then
  return {'RUN_INACTIVE', 'lost'}
end
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
redis.call('HSETNX', KEYS[1], 'principal', ARGV[4])
if created then
  -- A new state gets its expiry, kept in "exp" as every state keeps it.
  local t = redis.call('TIME')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  redis.call('HSET', KEYS[1], 'calls', 0, 'bytes', 0, 'state', 'open', 'created_ms', now,
    RUN_LAYOUT_FIELD, RUN_LAYOUT, 'exp', now + tonumber(ARGV[3]))
  redis.call('PEXPIREAT', KEYS[1], now + tonumber(ARGV[3]))
elseif redis.call('PTTL', KEYS[1]) < 0 then
  -- One some other writer left without a TTL gets one.
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
end
return {'OK', reports, pending, violations, violated}
