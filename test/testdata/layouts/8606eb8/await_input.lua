-- await_input: keep the owner's PROJECTING record open for the agent's input
-- (a multi round-trip call): the tool asked the agent for input instead of
-- answering. The record stays PROJECTING; it keeps the token the continuing
-- call must present (continue_call.lua) and the tool's state for it, and
-- its lease becomes the wait for the input, after which a reaper may
-- abandon the call. The TTL is kept; of the run, only its place in its
-- slot's due set may move earlier, to the new lease (begin.lua).
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH  a header and the payloads' parts (format.lib)
-- KEYS[2] leases  <prefix>:{<run_id>}:leases               ZSET  PROJECTING calls by lease deadline
-- KEYS[3] run     <prefix>:{<run_id>}:run                  HASH  its field "due": the run's score in KEYS[4]
-- KEYS[4] due     <prefix>:{<slot tag>}:due                ZSET  the slot's runs with calls in flight, by earliest lease
--
-- ARGV[1] tool_call_id  string  the id in KEYS[1], for the run's leases
-- ARGV[2] owner         string  the owner as the header keeps it, and a space: must be the header's at H_OWNER
-- ARGV[3] token         string  what the continuing call must present
-- ARGV[4] state         bytes   the tool's state, for the continuing call (may be empty)
-- ARGV[5] wait_ms       int     > 0: the new lease, from now; no later than the record's expiry
-- ARGV[6] run_id        string  the run's id, its member in KEYS[4]
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
if string.sub(m, H_OWNER, H_OWNER + string.len(ARGV[2]) - 1) ~= ARGV[2] or
    string.sub(m, H_STATUS, H_STATUS) ~= PROJECTING then
  return {'INVALID_TRANSITION', m}
end
local w = redis.call('HGET', KEYS[1], INPUT_TOKEN)
if w and w ~= ARGV[3] and string.sub(w, 1, 1) ~= CONSUMED then
  return {'INVALID_TRANSITION', m}
end

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local pttl = redis.call('PTTL', KEYS[1])
local lease = now + math.min(tonumber(ARGV[5]), pttl)
local h = string.format('%s%013d%s%013d%s', string.sub(m, 1, H_UPDATED - 1), now,
  string.sub(m, H_CREATED, H_CREATED_END), lease, string.sub(m, H_GEN))
redis.call('HSET', KEYS[1], HEADER, h, INPUT_TOKEN, ARGV[3], INPUT_STATE, ARGV[4])
-- XX: the call's entry is there while it is PROJECTING; the key is never
-- made here, and so never without its expiry.
redis.call('ZADD', KEYS[2], 'XX', lease, ARGV[1])
-- The run's place in its slot's due set moves earlier, to this lease, when
-- it is later (begin.lua); XX: a run not in the set is left out of it, and
-- the set never made.
local at = redis.call('HGET', KEYS[3], 'due')
if at and lease < tonumber(at) and redis.call('ZADD', KEYS[4], 'XX', 'CH', lease, ARGV[6]) == 1 then
  redis.call('HSET', KEYS[3], 'due', lease)
end
return {'OK', h, pttl}
