-- await_input: keep the owner's PROJECTING record open for the agent's input
-- (a multi round-trip call): the tool asked the agent for input instead of
-- answering. The record stays PROJECTING; it keeps the token the continuing
-- call must present (continue_call.lua) and the tool's state for it, and
-- its lease becomes the wait for the input, after which a reaper may
-- abandon the call. The TTL is kept (the header keeps the record's
-- expiry); of the run, only its place in its slot's due set may move
-- earlier, to the new lease (begin.lua), and, with audit on, its event's
-- sequence number (the state is made as abandon.lua makes it when it is
-- gone while its call lives). A resent await appends no event.
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH  a header, the request when short, and the payloads' parts (format.lib)
-- KEYS[2] calls   <prefix>:{<run_id>}:calls                ZSET  calls in flight by lease (ms), completed by completion (us)
-- KEYS[3] run     <prefix>:{<run_id>}:run                  HASH  its field "due": the run's score in KEYS[4]; with audit on: the event's sequence number
-- KEYS[4] due     <prefix>:{<slot tag>}:due                ZSET  the slot's runs with calls in flight, by earliest lease
-- KEYS[5] events  <prefix>:{<run_id>}:audit                LIST  the run's audit chain head and pending events (audit.lib)
-- KEYS[6] pending <prefix>:{<slot tag>}:audit              ZSET  the slot's runs with pending events
-- KEYS[7] count   <prefix>:{<slot tag>}:audit-n            STRING  the slot's pending events
--
-- ARGV[1] tool_call_id  string  the id in KEYS[1], for the run's calls
-- ARGV[2] owner         string  the owner as the header keeps it, and a space: must be the header's at H_OWNER
-- ARGV[3] token         string  what the continuing call must present
-- ARGV[4] state         bytes   the tool's state, for the continuing call (may be empty)
-- ARGV[5] wait_ms       int     > 0: the new lease, from now; no later than the record's expiry
-- ARGV[6] run_id        string  the run's id, its member in KEYS[4] and KEYS[6]
-- ARGV[7] audit         string  the await_input event's body but its last word (internal/auditrec), or empty: audit is off
--                               (the script appends the end of the lease it sets)
-- ARGV[8] generation    string  11 bytes: the stream of a run state this script makes (its state was lost)
--
-- RETRY safe    a resent await (same owner, same token) finds the record waiting under its token
--
-- RETURNS
--   {"OK", header string, pttl int}
--     the record waits for the input under the token
--   {"NOT_FOUND"}
--     no record (never begun, or expired)
--   {"INVALID_TRANSITION", header string}
--     another owner, a terminal record, or one waiting under another token: nothing changed
--   {"LAYOUT_MISMATCH"}
--     the record is of another layout (an earlier release's): nothing changed
--   a header in a reply is the header's whole field (the request may follow it)

-- #include format.lib
local AUDIT_EVENTS = KEYS[5]
local AUDIT_RUNS = KEYS[6]
local AUDIT_COUNT = KEYS[7]
local AUDIT_RUN = KEYS[3]
-- #include audit.lib

local r = redis.call('HMGET', KEYS[1], HEADER, INPUT_TOKEN)
local m, w = r[1], r[2]
if not m then
  -- A hash without a header under the record's key is another layout's.
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return {'LAYOUT_MISMATCH'}
  end
  return {'NOT_FOUND'}
end
if sub(m, H_VERSION, H_VERSION) ~= LAYOUT then
  return {'LAYOUT_MISMATCH'}
end
if sub(m, H_OWNER, H_OWNER + len(ARGV[2]) - 1) ~= ARGV[2] or sub(m, H_STATUS, H_STATUS) ~= PROJECTING then
  return {'INVALID_TRANSITION', m}
end
if w and w ~= ARGV[3] and sub(w, 1, 1) ~= CONSUMED then
  return {'INVALID_TRANSITION', m}
end

local t = redis.call('TIME')
local snow = t[1] .. sub(string.rep('0', 6 - len(t[2])) .. t[2], 1, 3)
local now = tonumber(snow)
local pttl = tonumber(sub(m, H_EXPIRES, H_EXPIRES_END)) - now
local lease = now + math.min(tonumber(ARGV[5]), pttl)
local h = sub(m, 1, H_UPDATED - 1) .. snow .. sub(m, H_CREATED, H_CREATED_END) .. format('%013d', lease) ..
  sub(m, H_EXPIRES)
redis.call('HSET', KEYS[1], HEADER, h, INPUT_TOKEN, ARGV[3], INPUT_STATE, ARGV[4])
-- XX: the call's entry is there while it is PROJECTING; the key is never
-- made here, and so never without its expiry.
redis.call('ZADD', KEYS[2], 'XX', lease, ARGV[1])
local at
if ARGV[7] == '' then
  at = redis.call('HGET', KEYS[3], 'due')
else
  local run = redis.call('HMGET', KEYS[3], 'due', 'aseq', 'ag', RUN_IDENT_FIELD, 'state')
  at = run[1]
  -- A resent await finds the call waiting under its token: no transition.
  if w ~= ARGV[3] then
    local seq, stream = audit_number(run[2], run[3], run[4], run[5], ARGV[8], snow,
      sub(m, H_EXPIRES, H_EXPIRES_END))
    audit_append(ARGV[6], seq, stream, snow, ARGV[7] .. ' ' .. format('%d', lease), 1)
  end
end
-- The run's place in its slot's due set moves earlier, to this lease, when
-- it is later (begin.lua); XX: a run not in the set is left out of it, and
-- the set never made.
if at and lease < tonumber(at) and redis.call('ZADD', KEYS[4], 'XX', 'CH', lease, ARGV[6]) == 1 then
  redis.call('HSET', KEYS[3], 'due', format('%013d', lease))
end
return {'OK', h, pttl}
