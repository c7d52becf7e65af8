-- close_run: mark a run closed so that it accepts no new begin. Idempotent.
--
-- A closed run stays closed for the retention, whatever its records' TTLs:
-- the run's state (and its live marker) is kept at least that long, and
-- never shortened; the state keeps the expiry in its field "exp". Only a
-- begin claims a run: a run with no state is not created here.
--
-- KEYS[1] run   <prefix>:{<run_id>}:run   HASH
-- KEYS[2] live  <prefix>:{<run_id>}:live  STRING  when the run has one, kept as long as the run's state
-- KEYS[3] events  <prefix>:{<run_id>}:audit      LIST  the run's audit chain head and pending events (audit.lib)
-- KEYS[4] pending <prefix>:{<slot tag>}:audit    ZSET  the slot's runs with pending events
-- KEYS[5] count   <prefix>:{<slot tag>}:audit-n  STRING  the slot's pending events
--
-- ARGV[1] retention_ms  int     > 0: how long the run stays closed at least
-- ARGV[2] principal     string  the caller's principal tag (64 hex): only the run's owner closes it
-- ARGV[3] audit         string  the close event's body (internal/auditrec), or empty: audit is off; an event
--                               is appended when the run was open
-- ARGV[4] run_id        string  the run's id, its member in KEYS[4]
--
-- RETRY safe    closing is idempotent
--
-- RETURNS
--   {"OK"}
--   {"RUN_FORBIDDEN"}
--     the run belongs to another principal; nothing is written
--   {"LAYOUT_MISMATCH"}
--     the run's state is of another layout (an earlier release's); nothing is written
--   {"NOT_FOUND"}
--     the run has no state: nobody began it (or its state is lost); nothing
--     is written, so that a close claims no run

-- #include format.lib
local AUDIT_EVENTS = KEYS[3]
local AUDIT_RUNS = KEYS[4]
local AUDIT_COUNT = KEYS[5]
local AUDIT_RUN = KEYS[1]
-- #include audit.lib

local run = redis.call('HMGET', KEYS[1], RUN_IDENT_FIELD, 'state', RUN_LAYOUT_FIELD, 'exp', 'aseq', 'ag')
if run[2] and (not run[3] or sub(run[3], 1, RUN_LAYOUT_LEN) ~= RUN_LAYOUT) then
  return {'LAYOUT_MISMATCH'}
end
if run[1] and sub(run[1], 1, PRINCIPAL_LEN) ~= ARGV[2] then
  return {'RUN_FORBIDDEN'}
end
if not run[2] then
  return {'NOT_FOUND'}
end
-- A state without an owner is one a complete left after a loss: closing it
-- makes nobody its owner, and it stays lost. A begun run's live marker
-- expires with its state, so that a closed run whose state is lost is
-- still refused (as lost) for the retention.
local state = 'closed'
if run[2] == RUN_LOST then
  state = RUN_LOST
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local keep = now + tonumber(ARGV[1])
local fields = {'state', state, 'closed_ms', format('%d', now)}
-- A close of an open run is an event, numbered in the state's stream.
local seq = tonumber(run[5] or '0') + 1
local event = ARGV[3] ~= '' and run[2] == 'open'
if event then
  fields[5], fields[6] = 'aseq', format('%d', seq)
end
if tonumber(run[4] or '0') < keep then
  local skeep = format('%d', keep)
  fields[#fields + 1], fields[#fields + 2] = 'exp', skeep
  redis.call('HSET', KEYS[1], unpack(fields))
  redis.call('PEXPIREAT', KEYS[1], skeep)
  redis.call('PEXPIREAT', KEYS[2], skeep)
  if ARGV[3] ~= '' then
    redis.call('PEXPIREAT', AUDIT_EVENTS, skeep, 'GT')
  end
else
  redis.call('HSET', KEYS[1], unpack(fields))
end
if event then
  audit_append(ARGV[4], seq, run[6] or sub(run[1], PRINCIPAL_LEN + 1, PRINCIPAL_LEN + GEN_LEN), now, ARGV[3], 1)
end
return {'OK'}
