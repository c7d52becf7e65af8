-- audit_ack: remove a run's first pending audit events once a sink has
-- confirmed them, and keep the chain head they reach, in one step. Only the
-- exporter that read the head still there acknowledges: another that got
-- there first leaves nothing for it (MOVED), so a batch delivered twice is
-- acknowledged once.
--
-- The slot's count loses the events acknowledged. With nothing left
-- pending, the run leaves its slot's set, and the head is
-- kept only while its stream may go on: as long as the run's state of that
-- stream lives (the state's field "exp"); otherwise the list is deleted.
--
-- KEYS[1] events   <prefix>:{<run_id>}:audit        LIST    the run's chain head, then its pending events
-- KEYS[2] run      <prefix>:{<run_id>}:run          HASH    its expiry and stream (its generation, or the one it kept
--                                                          when found lost), for a head left alone
-- KEYS[3] pending  <prefix>:{<slot tag>}:audit      ZSET    the slot's runs with pending events
-- KEYS[4] count    <prefix>:{<slot tag>}:audit-n    STRING  the slot's pending events
--
-- ARGV[1] run_id  string  the run's id, its member in KEYS[3]
-- ARGV[2] from    string  the head element the exporter read
-- ARGV[3] n       int     how many events it exported: 1..
-- ARGV[4] to      string  the head element of the last of them
-- ARGV[5] last    string  the sequence number of the last of them, as the event starts with it
-- ARGV[6] stream  string  the generation of the last of them
--
-- RETRY safe    a resent acknowledgement finds its head moved on (MOVED)
--
-- RETURNS
--   {"OK", pending int}
--     acknowledged; pending: the run's events still pending
--   {"MOVED"}
--     the head is not the one read, or the events are not the ones exported: nothing changed

-- #include format.lib

local h = redis.call('LINDEX', KEYS[1], 0)
if h ~= ARGV[2] then
  return {'MOVED'}
end
local n = tonumber(ARGV[3])
local last = redis.call('LINDEX', KEYS[1], n)
if n < 1 or not last or string.sub(last, 1, string.len(ARGV[5]) + 1) ~= ARGV[5] .. ' ' then
  return {'MOVED'}
end
redis.call('LTRIM', KEYS[1], n, -1)
redis.call('LSET', KEYS[1], 0, ARGV[4])
if redis.call('DECRBY', KEYS[4], n) <= 0 then
  redis.call('DEL', KEYS[4])
end
local left = redis.call('LLEN', KEYS[1]) - 1
if left > 0 then
  -- The run stays in its slot's set, at its next event's time.
  local next = redis.call('LINDEX', KEYS[1], 1)
  local a = string.find(next, ' ', 1, true)
  local b = string.find(next, ' ', a + 1, true)
  redis.call('ZADD', KEYS[3], 'XX', string.sub(next, a + 1, b - 1), ARGV[1])
  return {'OK', left}
end
redis.call('ZREM', KEYS[3], ARGV[1])
-- A slot with nothing pending has its count started again: the
-- completions a begin counted ahead and that never came (a record that
-- expired unfinished) do not outlive it.
if redis.call('ZCARD', KEYS[3]) == 0 then
  redis.call('DEL', KEYS[4])
end
local run = redis.call('HMGET', KEYS[2], 'exp', 'ag', RUN_IDENT_FIELD)
local stream = run[2] or run[3] and sub(run[3], PRINCIPAL_LEN + 1, PRINCIPAL_LEN + GEN_LEN)
if run[1] and stream == ARGV[6] then
  redis.call('PEXPIREAT', KEYS[1], run[1])
else
  redis.call('DEL', KEYS[1])
end
return {'OK', 0}
