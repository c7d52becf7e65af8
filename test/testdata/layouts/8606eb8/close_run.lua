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
local AUDIT_EVENTS = KEYS[3]
local AUDIT_RUNS = KEYS[4]
local AUDIT_COUNT = KEYS[5]
-- audit.lib: the audit stream's append, included by the scripts of the
-- transitions after they name its keys (each "local NAME = KEYS[n]"):
--
--   AUDIT_EVENTS  <prefix>:{<run_id>}:audit        LIST    the run's chain head, then its pending events
--   AUDIT_RUNS    <prefix>:{<slot tag>}:audit      ZSET    the slot's runs with pending events, by their first one's time
--   AUDIT_COUNT   <prefix>:{<slot tag>}:audit-n    STRING  the slot's pending events, and the completions of its
--                                                         calls in flight (counted by their begin)
--
-- An event is the body Go encoded (internal/auditrec), behind its sequence
-- number, the server's time and its stream's generation; the script adds
-- nothing else. Pending events keep their keys until an exporter has them
-- acknowledged (audit_ack), however long: AUDIT_PENDING_MS is
-- canonical.MaxTTL, and the slot's count bounds them instead. With audit
-- off (the event's body empty) a script touches none of these keys, and
-- the store names another key of the run in their place.
local AUDIT_PENDING_MS = 315360000000
local AUDIT_GENESIS = '~'
-- audit_stream returns the stream of a run state read as run: its field
-- "ag" (set when a state without a generation had an event) or its
-- generation, else nil.
local function audit_stream(ag, gen)
  if ag then return ag end
  return gen
end
-- audit_append appends body as event seq of stream gen at now; a run with
-- nothing pending enters the slot's set. The slot's count grows by count:
-- a begin's event and its call's completion or abandonment were counted
-- ahead (audit_count), so those count nothing (0); a replay or a close
-- counts 1.
local function audit_append(run_id, seq, gen, now, body, count)
  local n = redis.call('RPUSH', AUDIT_EVENTS, seq .. ' ' .. now .. ' ' .. gen .. ' ' .. body)
  if n == 1 then
    redis.call('LPUSH', AUDIT_EVENTS, AUDIT_GENESIS)
  end
  if n <= 2 then
    redis.call('PEXPIRE', AUDIT_EVENTS, AUDIT_PENDING_MS)
    redis.call('ZADD', AUDIT_RUNS, 'NX', now, run_id)
    redis.call('PEXPIRE', AUDIT_RUNS, AUDIT_PENDING_MS)
  end
  if count > 0 and redis.call('INCRBY', AUDIT_COUNT, count) == count then
    redis.call('PEXPIRE', AUDIT_COUNT, AUDIT_PENDING_MS)
  end
end
-- audit_count counts a begin's event and its completion's ahead in the
-- slot, and reports whether the slot held fewer than max before; when it
-- did not, the count is given back.
local function audit_count(max)
  local n = redis.call('INCRBY', AUDIT_COUNT, 2)
  if n - 2 >= max then
    redis.call('DECRBY', AUDIT_COUNT, 2)
    return false
  end
  if n == 2 then
    redis.call('PEXPIRE', AUDIT_COUNT, AUDIT_PENDING_MS)
  end
  return true
end

local run = redis.call('HMGET', KEYS[1], 'principal', 'state', RUN_LAYOUT_FIELD, 'exp', 'aseq', 'ag', 'gen')
if other_layout(run, 2, 3) then
  return {'LAYOUT_MISMATCH'}
end
local principal = run[1]
if principal and principal ~= ARGV[2] then
  return {'RUN_FORBIDDEN'}
end
if not run[2] then
  return {'NOT_FOUND'}
end
-- A state without an owner is one a complete left after a loss: closing it
-- makes nobody its owner. A begun run's live marker expires with its
-- state, so that a closed run whose state is lost is still refused (as
-- lost) for the retention.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local keep = now + tonumber(ARGV[1])
local fields = {'state', 'closed', 'closed_ms', now}
-- A close of an open run is an event, numbered in the state's stream.
local seq = tonumber(run[5] or '0') + 1
local event = ARGV[3] ~= '' and run[2] ~= 'closed'
if event then
  fields[#fields + 1] = 'aseq'
  fields[#fields + 1] = seq
end
if tonumber(run[4] or '0') < keep then
  fields[#fields + 1] = 'exp'
  fields[#fields + 1] = keep
  redis.call('HSET', KEYS[1], unpack(fields))
  redis.call('PEXPIREAT', KEYS[1], keep)
  redis.call('PEXPIREAT', KEYS[2], keep)
  if ARGV[3] ~= '' then
    redis.call('PEXPIREAT', AUDIT_EVENTS, keep, 'GT')
  end
else
  redis.call('HSET', KEYS[1], unpack(fields))
end
if event then
  audit_append(ARGV[4], seq, audit_stream(run[6], run[7]), now, ARGV[3], 1)
end
return {'OK'}
