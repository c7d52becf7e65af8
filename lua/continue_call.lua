-- continue_call: hand a record that waits for the agent's input
-- (await_input.lua) to the invocation that continues the call: the same
-- call (the request's digest is the record's), of the run's principal,
-- presenting the token the record keeps. The record stays PROJECTING under
-- the new owner with a new lease, and the tool's state is returned with the
-- run's limits and secret (as begin returns them to the invocation); the
-- token is kept as taken, so that only this owner's retry finds it again.
-- Anything else changes nothing: a call still running, one waiting under
-- another token or for another request, and a finished one are refused as
-- a begin of the id would be. The TTL is kept (the header keeps the
-- record's expiry); of the run, only its place in its slot's due set may
-- move earlier, to the new lease (begin.lua), and, with audit on, its
-- event's sequence number. A resent continue appends no event.
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH  a header, the request when short, and the payloads' parts (format.lib)
-- KEYS[2] run     <prefix>:{<run_id>}:run                  HASH  its owner is checked first; with audit on: the event's sequence number
-- KEYS[3] calls   <prefix>:{<run_id>}:calls                ZSET  calls in flight by lease (ms), completed by completion (us)
-- KEYS[4] due     <prefix>:{<slot tag>}:due                ZSET  the slot's runs with calls in flight, by earliest lease
-- KEYS[5] events  <prefix>:{<run_id>}:audit                LIST  the run's audit chain head and pending events (audit.lib)
-- KEYS[6] pending <prefix>:{<slot tag>}:audit              ZSET  the slot's runs with pending events
-- KEYS[7] count   <prefix>:{<slot tag>}:audit-n            STRING  the slot's pending events
--
-- ARGV[1] tool_call_id    string  the id in KEYS[1], for the run's calls
-- ARGV[2] owner           string  the continuing invocation's owner, as the header keeps it (no space)
-- ARGV[3] principal       string  the caller's principal tag (64 hex): must be the run's owner
-- ARGV[4] request_sha256  string  the continuing request's digest, as the header keeps it
-- ARGV[5] token           string  the token the waiting record keeps
-- ARGV[6] lease_ms        int     > 0: the new lease, from now; no later than the record's expiry
-- ARGV[7] run_id          string  the run's id, its member in KEYS[4] and KEYS[6]
-- ARGV[8] audit           string  the continue event's body (internal/auditrec), or empty: audit is off
--
-- RETRY safe    a resent continue (same owner, same token) finds the record its own and is given the state again
--
-- RETURNS
--   {"OK", header string, pttl int, state bytes, limits string, secret string}
--     the call is the new owner's, with the tool's state; the limits (packed, as begin returns them) and the
--     secret are the run's
--   {"RUN_FORBIDDEN"}
--     the run belongs to another principal, or its owner is unknown; checked before anything else
--   {"NOT_FOUND"}
--     no record (never begun, or expired)
--   {"IN_PROGRESS", header string}
--     PROJECTING, and waiting for no input under this token and request (running, or another's): nothing changed
--   {"DUPLICATE", header string}
--     the call is finished: nothing changed
--   {"LAYOUT_MISMATCH"}
--     the record or the run's state is of another layout (an earlier release's): nothing changed
--   a header in a reply is the header's whole field (the request may follow it)

-- #include format.lib
local AUDIT_EVENTS = KEYS[5]
local AUDIT_RUNS = KEYS[6]
local AUDIT_COUNT = KEYS[7]
local AUDIT_RUN = KEYS[2]
-- #include audit.lib

local run = redis.call('HMGET', KEYS[2], RUN_LAYOUT_FIELD, RUN_IDENT_FIELD, 'state', 'due', 'ag')
local layout, ident = run[1], run[2]
if run[3] and (not layout or sub(layout, 1, RUN_LAYOUT_LEN) ~= RUN_LAYOUT) then
  return {'LAYOUT_MISMATCH'}
end
-- A state without an owner (gone, or lost) is nobody's.
if not ident or sub(ident, 1, PRINCIPAL_LEN) ~= ARGV[3] then
  return {'RUN_FORBIDDEN'}
end
local r = redis.call('HMGET', KEYS[1], HEADER, INPUT_TOKEN, INPUT_STATE)
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
if sub(m, H_STATUS, H_STATUS) ~= PROJECTING then
  return {'DUPLICATE', m}
end
local sp = find(m, ' ', H_OWNER, true)
local mine = sub(m, H_OWNER, sp - 1) == ARGV[2]
if not w or sub(m, H_REQUEST_SHA256, H_REQUEST_SHA256_END) ~= ARGV[4] or
    not (w == ARGV[5] or (mine and w == CONSUMED .. ARGV[5])) then
  return {'IN_PROGRESS', m}
end

local t = redis.call('TIME')
local snow = t[1] .. sub(string.rep('0', 6 - len(t[2])) .. t[2], 1, 3)
local now = tonumber(snow)
local pttl = tonumber(sub(m, H_EXPIRES, H_EXPIRES_END)) - now
local lease = now + math.min(tonumber(ARGV[6]), pttl)
local h = sub(m, 1, H_UPDATED - 1) .. snow .. sub(m, H_CREATED, H_CREATED_END) .. format('%013d', lease) ..
  sub(m, H_EXPIRES, H_OWNER - 1) .. ARGV[2] .. sub(m, sp)
redis.call('HSET', KEYS[1], HEADER, h, INPUT_TOKEN, CONSUMED .. ARGV[5])
redis.call('ZADD', KEYS[3], 'XX', lease, ARGV[1])
-- The run's place in its slot's due set moves earlier, to this lease, when
-- it is later (begin.lua); XX: a run not in the set is left out of it, and
-- the set never made.
local at = run[4]
if at and lease < tonumber(at) and redis.call('ZADD', KEYS[4], 'XX', 'CH', lease, ARGV[7]) == 1 then
  redis.call('HSET', KEYS[2], 'due', format('%013d', lease))
end
-- A resent continue finds the token taken by its owner: no transition. The
-- event's stream is the state's generation (or the one it kept when it
-- was found lost).
if ARGV[8] ~= '' and w == ARGV[5] then
  audit_append(ARGV[7], redis.call('HINCRBY', KEYS[2], 'aseq', 1),
    run[5] or sub(ident, PRINCIPAL_LEN + 1, PRINCIPAL_LEN + GEN_LEN), snow, ARGV[8], 1)
end
return {'OK', h, pttl, r[3] or '', sub(layout, LIMITS_AT), sub(ident, PRINCIPAL_LEN + GEN_LEN + 1)}
