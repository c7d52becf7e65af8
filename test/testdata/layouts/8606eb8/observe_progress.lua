-- observe_progress: count one progress report of a run against the progress
-- protocol, atomically for every worker of the run.
--
-- An invalid report is a repairable observation: it raises "pending" (invalid
-- reports since the last valid one) and "violations". A valid report repairs:
-- it resets "pending" only. "violations" is never reset and saturates at the
-- threshold, where the run is marked violated for good. Only a begin claims
-- a run: a run with no state is not created here.
--
-- KEYS[1] run     <prefix>:{<run_id>}:run     HASH
--
-- ARGV[1] valid      int     1 for a valid report, 0 for an invalid one
-- ARGV[2] threshold  int     > 0: violations at which the protocol is violated
-- ARGV[3] principal  string  the caller's principal tag (64 hex): only the run's owner reports on it
--
-- RETRY unsafe  each run counts one more report: a resent report would be counted twice
--
-- RETURNS
--   {"OK", reports int, pending int, violations int, violated int}
--   {"RUN_FORBIDDEN"}
--     the run belongs to another principal; nothing is counted
--   {"LAYOUT_MISMATCH"}
--     the run's state is of another layout (an earlier release's); nothing is counted
--   {"NOT_FOUND"}
--     the run has no state: nobody began it (or its state is lost); nothing
--     is written, so that a report claims no run
--   {"RUN_INACTIVE", reason string}
--     reason "lost": the state has no owner, as a complete leaves it after the run's state was lost; nothing is
--     counted, so that no counter outlives the loss into the next run of the id

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

local run = redis.call('HMGET', KEYS[1], 'principal', 'state', RUN_LAYOUT_FIELD)
if other_layout(run, 2, 3) then
  return {'LAYOUT_MISMATCH'}
end
local principal = run[1]
if principal and principal ~= ARGV[3] then
  return {'RUN_FORBIDDEN'}
end
if not run[2] then
  return {'NOT_FOUND'}
end
if not principal then
  return {'RUN_INACTIVE', 'lost'}
end
local reports = redis.call('HINCRBY', KEYS[1], 'pp_reports', 1)
local threshold = tonumber(ARGV[2])
local pending, violations
if ARGV[1] == '1' then
  redis.call('HSET', KEYS[1], 'pp_pending', 0)
  pending = 0
  violations = tonumber(redis.call('HGET', KEYS[1], 'pp_violations') or '0')
else
  pending = redis.call('HINCRBY', KEYS[1], 'pp_pending', 1)
  violations = tonumber(redis.call('HGET', KEYS[1], 'pp_violations') or '0')
  if violations < threshold then
    violations = violations + 1
    redis.call('HSET', KEYS[1], 'pp_violations', violations)
  end
end
local violated = 0
if violations >= threshold or redis.call('HGET', KEYS[1], 'pp_violated') == '1' then
  violated = 1
  redis.call('HSET', KEYS[1], 'pp_violated', 1)
end
return {'OK', reports, pending, violations, violated}
