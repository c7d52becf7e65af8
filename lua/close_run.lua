-- close_run: mark a run closed so that it accepts no new begin. Idempotent.
--
-- A closed run stays closed for the retention, whatever its records' TTLs:
-- the run's state (and its live marker) is kept at least that long, and
-- never shortened.
--
-- KEYS[1] run   <prefix>:{<run_id>}:run   HASH
-- KEYS[2] live  <prefix>:{<run_id>}:live  STRING  when the run has one, kept as long as the run's state
--
-- ARGV[1] retention_ms  int     > 0: how long the run stays closed at least
-- ARGV[2] principal     string  the caller's principal tag (64 hex): only the run's owner closes it
--
-- RETRY safe    closing is idempotent
--
-- RETURNS
--   {"OK"}
--   {"RUN_FORBIDDEN"}
--     the run belongs to another principal; nothing is written
--   {"NOT_FOUND"}
--     the run has no state: nobody began it (or its state is lost); nothing
--     is written, so that a close claims no run

local principal = redis.call('HGET', KEYS[1], 'principal')
if principal and principal ~= ARGV[2] then
  return {'RUN_FORBIDDEN'}
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'NOT_FOUND'}
end
-- A state without an owner is one a complete left after a loss: closing it
-- makes nobody its owner.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('HSET', KEYS[1], 'state', 'closed', 'closed_ms', now)
local retention = tonumber(ARGV[1])
if redis.call('PTTL', KEYS[1]) < retention then
  redis.call('PEXPIRE', KEYS[1], retention)
end
-- A begun run's live marker expires with its state, so that a closed run
-- whose state is lost is still refused (as lost) for the retention.
local expires = redis.call('PEXPIRETIME', KEYS[1])
if redis.call('PEXPIRETIME', KEYS[2]) ~= -2 and redis.call('PEXPIRETIME', KEYS[2]) < expires then
  redis.call('PEXPIREAT', KEYS[2], expires)
end
return {'OK'}
