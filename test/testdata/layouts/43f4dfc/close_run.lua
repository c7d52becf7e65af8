-- close_run: mark a run closed so that it accepts no new begin. Idempotent.
--
-- A closed run stays closed for the retention, whatever its records' TTLs:
-- the run's state (and its live marker) is kept at least that long, and
-- never shortened.
--
-- KEYS[1] run   <prefix>:{<run_id>}:run   HASH
-- KEYS[2] live    <prefix>:{<run_id>}:live    STRING  when the run has one, kept as long as the run's state
-- KEYS[3] index   <prefix>:{<run_id>}:done    LIST    read only: tells a lost run from a new one
-- KEYS[4] leases  <prefix>:{<run_id>}:leases  ZSET    read only: likewise
--
-- ARGV[1] retention_ms  int     > 0: how long the run stays closed at least
-- ARGV[2] principal     string  the caller's principal tag (64 hex): only the run's owner closes it
--
-- RETRY safe    closing is idempotent
--
-- RETURNS
--   {"OK", created int}
--     created is 1 when the run had no state before
--   {"RUN_FORBIDDEN"}
--     the run belongs to another principal; nothing is written

local principal = redis.call('HGET', KEYS[1], 'principal')
if principal and principal ~= ARGV[2] then
  return {'RUN_FORBIDDEN'}
end
-- A lost run (no limits while a key only a begun run has lives) has no
-- owner any more, and closing it makes nobody its owner.
local lost = not principal and not redis.call('HGET', KEYS[1], 'lim_calls_run')
  and redis.call('EXISTS', KEYS[2], KEYS[3], KEYS[4]) > 0
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local created = 0
if redis.call('EXISTS', KEYS[1]) == 0 then
  created = 1
  redis.call('HSET', KEYS[1], 'calls', 0, 'bytes', 0, 'created_ms', now)
end
redis.call('HSET', KEYS[1], 'state', 'closed', 'closed_ms', now)
if not lost then
  redis.call('HSETNX', KEYS[1], 'principal', ARGV[2])
end
local retention = tonumber(ARGV[1])
if redis.call('PTTL', KEYS[1]) < retention then
  redis.call('PEXPIRE', KEYS[1], retention)
end
-- A begun run's live marker expires with its state, so that a closed run
-- whose state is lost is still refused (as lost) for the retention. A run
-- never begun gets none: its state alone says it is closed.
local expires = redis.call('PEXPIRETIME', KEYS[1])
if redis.call('PEXPIRETIME', KEYS[2]) ~= -2 and redis.call('PEXPIRETIME', KEYS[2]) < expires then
  redis.call('PEXPIREAT', KEYS[2], expires)
end
return {'OK', created}
