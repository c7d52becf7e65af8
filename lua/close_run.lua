-- close_run: mark a run closed so that it accepts no new begin. Idempotent.
--
-- KEYS[1] run  <prefix>:{<run_id>}:run  HASH
--
-- ARGV[1] ttl_ms  int  lifetime of the run's state if it does not exist yet; an existing TTL is kept
--
-- RETRY safe    closing is idempotent
--
-- RETURNS array {"OK", created}  created is 1 when the run had no state before

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local created = 0
if redis.call('EXISTS', KEYS[1]) == 0 then
  created = 1
  redis.call('HSET', KEYS[1], 'calls', 0, 'bytes', 0, 'created_ms', now)
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
end
redis.call('HSET', KEYS[1], 'state', 'closed', 'closed_ms', now)
return {'OK', created}
