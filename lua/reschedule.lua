-- reschedule: move a run in its slot's due set to its earliest lease, or
-- drop it when it has no call in flight. The reaper sends it for each run
-- it found due, after abandoning the run's passed leases: a begin adds a
-- run only when its lease is earlier than the run's score, so a score
-- stays at a lease that may since have ended, until the reaper comes.
--
-- A run whose state is gone keeps its place while it has calls in flight
-- (a lost run's calls are still abandoned once their leases pass); a run
-- of another layout, or without calls in flight, leaves the set.
--
-- KEYS[1] run     <prefix>:{<run_id>}:run     HASH
-- KEYS[2] calls   <prefix>:{<run_id>}:calls   ZSET  calls in flight by lease (ms), completed by completion (us), and "~" (+inf)
-- KEYS[3] due     <prefix>:{<slot tag>}:due   ZSET  the slot's runs with calls in flight, by earliest lease
--
-- ARGV[1] run_id  string  the run's id, its member in KEYS[3]
--
-- RETRY safe    it sets the run's place from what it reads
--
-- RETURNS
--   {"OK", due int}
--     the run's score now, ms since the epoch; 0: the run left the set

-- #include format.lib

local run = redis.call('HMGET', KEYS[1], 'state', RUN_LAYOUT_FIELD, 'exp')
local mine = not run[1] or run[2] and sub(run[2], 1, RUN_LAYOUT_LEN) == RUN_LAYOUT
-- The earliest call in flight: leases are milliseconds, completions
-- microseconds (from 1e15 on).
local first = redis.call('ZRANGE', KEYS[2], '-inf', '(1000000000000000', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
-- The set lives as long as the run's keys: the state keeps their expiry
-- (the calls keep their own when the state is gone).
local until_ms = 0
if mine and first[1] then
  until_ms = tonumber(run[3] or '0')
  if not run[1] then
    until_ms = redis.call('PEXPIRETIME', KEYS[2])
  end
end
if until_ms <= 0 then
  redis.call('ZREM', KEYS[3], ARGV[1])
  if run[1] and mine then
    redis.call('HDEL', KEYS[1], 'due')
  end
  return {'OK', 0}
end
local due = first[2]
redis.call('ZADD', KEYS[3], due, ARGV[1])
if run[1] then
  redis.call('HSET', KEYS[1], 'due', format('%013d', tonumber(due)))
end
local until_s = format('%d', until_ms)
if redis.call('PEXPIREAT', KEYS[3], until_s, 'GT') == 0 then
  redis.call('PEXPIREAT', KEYS[3], until_s, 'NX')
end
return {'OK', tonumber(due)}
