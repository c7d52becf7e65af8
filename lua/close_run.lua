-- close_run: mark a run closed so that it accepts no new begin. Idempotent.
--
-- A closed run stays closed for the retention, whatever its records' TTLs:
-- the run's state (and its live marker) is kept at least that long, and
-- never shortened; the state keeps the expiry in its field "exp".
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
--   {"LAYOUT_MISMATCH"}
--     the run's state is of another layout (an earlier release's); nothing is written

-- #include format.lib

local run = redis.call('HMGET', KEYS[1], 'principal', 'lim_calls_run', 'state', RUN_LAYOUT_FIELD, 'exp')
if other_layout(run, 3, 4) then
  return {'LAYOUT_MISMATCH'}
end
local principal = run[1]
if principal and principal ~= ARGV[2] then
  return {'RUN_FORBIDDEN'}
end
-- A lost run (no limits while a key only a begun run has lives) has no
-- owner any more, and closing it makes nobody its owner.
local lost = not principal and not run[2] and redis.call('EXISTS', KEYS[2], KEYS[3], KEYS[4]) > 0
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local created = 0
if redis.call('EXISTS', KEYS[1]) == 0 then
  created = 1
  redis.call('HSET', KEYS[1], 'calls', 0, 'bytes', 0, 'created_ms', now, RUN_LAYOUT_FIELD, RUN_LAYOUT)
end
redis.call('HSET', KEYS[1], 'state', 'closed', 'closed_ms', now)
if not lost then
  redis.call('HSETNX', KEYS[1], 'principal', ARGV[2])
end
-- The state keeps its absolute expiry in "exp" (0: a state made above).
-- A begun run's live marker expires with its state, so that a closed run
-- whose state is lost is still refused (as lost) for the retention. A run
-- never begun has none, and PEXPIREAT makes none: its state alone says it
-- is closed.
local keep = now + tonumber(ARGV[1])
if tonumber(run[5] or '0') < keep then
  redis.call('HSET', KEYS[1], 'exp', keep)
  redis.call('PEXPIREAT', KEYS[1], keep)
  redis.call('PEXPIREAT', KEYS[2], keep)
end
return {'OK', created}
