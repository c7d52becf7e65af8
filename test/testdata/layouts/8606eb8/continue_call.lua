-- continue_call: hand a record that waits for the agent's input
-- (await_input.lua) to the invocation that continues the call: the same
-- call (the request's digest is the record's), of the run's principal,
-- presenting the token the record keeps. The record stays PROJECTING under
-- the new owner with a new lease, and the tool's state is returned with the
-- run's limits and secret (as begin returns them to the invocation); the
-- token is kept as taken, so that only this owner's retry finds it again.
-- Anything else changes nothing: a call still running, one waiting under
-- another token or for another request, and a finished one are refused as
-- a begin of the id would be. The TTL is kept; of the run, only its place
-- in its slot's due set may move earlier, to the new lease (begin.lua).
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH  a header and the payloads' parts (format.lib)
-- KEYS[2] run     <prefix>:{<run_id>}:run                  HASH  its owner is checked first
-- KEYS[3] leases  <prefix>:{<run_id>}:leases               ZSET  PROJECTING calls by lease deadline
-- KEYS[4] due     <prefix>:{<slot tag>}:due                ZSET  the slot's runs with calls in flight, by earliest lease
--
-- ARGV[1] tool_call_id    string  the id in KEYS[1], for the run's leases
-- ARGV[2] owner           string  the continuing invocation's owner, as the header keeps it (no space)
-- ARGV[3] principal       string  the caller's principal tag (64 hex): must be the run's owner
-- ARGV[4] request_sha256  string  the continuing request's digest, as the header keeps it
-- ARGV[5] token           string  the token the waiting record keeps
-- ARGV[6] lease_ms        int     > 0: the new lease, from now; no later than the record's expiry
-- ARGV[7] run_id          string  the run's id, its member in KEYS[4]
--
-- RETRY safe    a resent continue (same owner, same token) finds the record its own and is given the state again
--
-- RETURNS
--   {"OK", header string, pttl int, state bytes, calls_run int, calls_tool int, run_bytes int, record_bytes int, result_bytes int, secret string}
--     the call is the new owner's, with the tool's state; the limits and the secret are the run's
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

-- format.lib: the record's layout, generated from internal/record (record.go) by
-- internal/scripts_gen: DO NOT EDIT. Included by every script of a record.
--
-- A record is a HASH: field "h" is the header, fixed-width ASCII fields at
-- fixed positions (below, 1-based as string.sub takes them), then the owner,
-- one space and the tool; each payload is the concatenation of its parts'
-- fields, cut in Go. A script compares the bytes it must and writes bytes
-- Go prepared; it never copies or cuts a payload.
local H_VERSION, H_VERSION_END = 1, 1 -- layout version: 3
local H_STATUS, H_STATUS_END = 2, 2 -- P PROJECTING, R READY, E ERROR
local H_EVIDENCE, H_EVIDENCE_END = 3, 3 -- U UNKNOWN, F EVIDENCE_FOUND, N NO_EVIDENCE, E ERROR
local H_OVERFLOW, H_OVERFLOW_END = 4, 4 -- 1: the completion was refused for its size (RESULT_TOO_LARGE), else 0
local H_RAW_LEN, H_RAW_LEN_END = 5, 14 -- bytes of the raw response
local H_RESULT_LEN, H_RESULT_LEN_END = 15, 24 -- bytes of the agent result
local H_COMPLETION, H_COMPLETION_END = 25, 35 -- digest of the completion made (to recognise its retry); `~~~~~~~~~~~` none, `~` and the abandoning claim (10 characters) abandoned
local H_ERROR, H_ERROR_END = 36, 61 -- the stable error code, space-padded
local H_UPDATED, H_UPDATED_END = 62, 74 -- last transition, ms since the epoch (server clock)
local H_CREATED, H_CREATED_END = 75, 87 -- begin, ms since the epoch (server clock)
local H_LEASE, H_LEASE_END = 88, 100 -- lease deadline, ms since the epoch
local H_GEN, H_GEN_END = 101, 111 -- generation of the run state the call was counted in
local H_ID_TAG, H_ID_TAG_END = 112, 119 -- binds the record to its key's run_id and tool_call_id
local H_REQUEST_LEN, H_REQUEST_LEN_END = 120, 129 -- bytes of the request
local H_REQUEST_SHA256, H_REQUEST_SHA256_END = 130, 172 -- SHA-256 of the request, base64url
local H_OWNER = 173 -- the owner, one space, the tool
local HEADER = "h"
local INPUT_TOKEN, INPUT_STATE, CONSUMED = "in", "is", "~" -- a record waiting for input: its token (CONSUMED and the token once taken), the tool's state
local LAYOUT = "3" -- the header's first byte
local RUN_LAYOUT, RUN_LAYOUT_FIELD, RUN_GONE_FIELD = "layout 3", "lost", "gone" -- the run state's layout, the field that keeps it, its lost flag
-- other_layout reports whether a run state read as run (state at
-- index state, the layout field at index layout) is another layout's.
local function other_layout(run, state, layout)
  return run[state] ~= false and run[state] ~= nil and run[layout] ~= RUN_LAYOUT
end
local PROJECTING, READY, ERROR = "P", "R", "E"
local NO_COMPLETION, ABANDON_MARK, CLAIM_LEN = "~~~~~~~~~~~", "~", 10 -- the completion field: none yet; an abandonment's mark and claim
local ABANDONED_HEAD, ABANDONED_TAIL = "EE000000000000000000000~", "EXECUTION_ABANDONED       " -- an abandonment's bytes from H_STATUS to H_UPDATED, around its claim
local PARTS = 3
local REQUEST_PARTS = {'req', 'req.2', 'req.3'}
local RAW_PARTS = {'raw', 'raw.2', 'raw.3'}
local RESULT_PARTS = {'res', 'res.2', 'res.3'}
-- put appends to args the fields and values of the parts ARGV[first],
-- ... ARGV[first + PARTS - 1] that hold bytes, named names.
local function put(args, names, first)
  for i = 1, PARTS do
    local v = ARGV[first + i - 1]
    if v == '' then break end
    args[#args + 1] = names[i]
    args[#args + 1] = v
  end
end

local run = redis.call('HMGET', KEYS[2], 'state', 'principal', RUN_LAYOUT_FIELD,
  'lim_calls_run', 'lim_calls_tool', 'lim_run_bytes', 'lim_record_bytes', 'lim_result_bytes', 'secret')
if other_layout(run, 1, 3) then
  return {'LAYOUT_MISMATCH'}
end
if run[2] ~= ARGV[3] then
  return {'RUN_FORBIDDEN'}
end
local m = redis.call('HGET', KEYS[1], HEADER)
if not m then
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return {'LAYOUT_MISMATCH'}
  end
  return {'NOT_FOUND'}
end
if string.sub(m, H_VERSION, H_VERSION) ~= LAYOUT then
  return {'LAYOUT_MISMATCH'}
end
if string.sub(m, H_STATUS, H_STATUS) ~= PROJECTING then
  return {'DUPLICATE', m}
end
local sp = string.find(m, ' ', H_OWNER, true)
local w = redis.call('HGET', KEYS[1], INPUT_TOKEN)
local mine = string.sub(m, H_OWNER, sp - 1) == ARGV[2]
if not w or string.sub(m, H_REQUEST_SHA256, H_REQUEST_SHA256_END) ~= ARGV[4] or
    not (w == ARGV[5] or (mine and w == CONSUMED .. ARGV[5])) then
  return {'IN_PROGRESS', m}
end

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local pttl = redis.call('PTTL', KEYS[1])
local lease = now + math.min(tonumber(ARGV[6]), pttl)
local h = string.format('%s%013d%s%013d%s%s%s', string.sub(m, 1, H_UPDATED - 1), now,
  string.sub(m, H_CREATED, H_CREATED_END), lease, string.sub(m, H_GEN, H_OWNER - 1), ARGV[2], string.sub(m, sp))
redis.call('HSET', KEYS[1], HEADER, h, INPUT_TOKEN, CONSUMED .. ARGV[5])
redis.call('ZADD', KEYS[3], 'XX', lease, ARGV[1])
-- The run's place in its slot's due set moves earlier, to this lease, when
-- it is later (begin.lua); XX: a run not in the set is left out of it, and
-- the set never made.
local at = redis.call('HGET', KEYS[2], 'due')
if at and lease < tonumber(at) and redis.call('ZADD', KEYS[4], 'XX', 'CH', lease, ARGV[7]) == 1 then
  redis.call('HSET', KEYS[2], 'due', lease)
end
return {'OK', h, pttl, redis.call('HGET', KEYS[1], INPUT_STATE) or '',
  tonumber(run[4]) or 0, tonumber(run[5]) or 0, tonumber(run[6]) or 0, tonumber(run[7]) or 0, tonumber(run[8]) or 0, run[9] or ''}
