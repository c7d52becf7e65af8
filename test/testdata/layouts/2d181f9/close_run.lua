-- close_run: mark a run closed so that it accepts no new begin. Idempotent.
--
-- A closed run stays closed for the retention, whatever its records' TTLs:
-- the run's state is kept at least that long, and never shortened.
--
-- KEYS[1] run  <prefix>:{<run_id>}:run  HASH
--
-- ARGV[1] retention_ms  int  > 0: how long the run stays closed at least
--
-- RETRY safe    closing is idempotent
--
-- RETURNS {"OK", created int}
--   created is 1 when the run had no state before

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local created = 0
if redis.call('EXISTS', KEYS[1]) == 0 then
  created = 1
  redis.call('HSET', KEYS[1], 'calls', 0, 'bytes', 0, 'created_ms', now)
end
redis.call('HSET', KEYS[1], 'state', 'closed', 'closed_ms', now)
local retention = tonumber(ARGV[1])
if redis.call('PTTL', KEYS[1]) < retention then
  redis.call('PEXPIRE', KEYS[1], retention)
end
return {'OK', created}
