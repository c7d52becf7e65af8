-- complete: move a PROJECTING record to READY or ERROR and append it to the
-- run's completion index, in one step. The record's TTL is kept exactly (HSET
-- does not touch it); the index is extended only to cover the record. The
-- completion is checked against the run's limits. When the run's state is gone
-- (evicted, deleted), or is another generation than the record's (it was lost
-- and a later begin made a new one), the outcome is still recorded, and the
-- run is marked lost and closed, with a TTL no longer than the record's; a
-- state of another generation loses its owner and limits, as a lost one has
-- none. The index expires with the run's other keys (the state keeps their
-- absolute expiry, which begin sets); one this script makes gets it.
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH  a header and the payloads' parts (format.lib)
-- KEYS[2] run     <prefix>:{<run_id>}:run                  HASH
-- KEYS[3] index   <prefix>:{<run_id>}:done                 LIST
-- KEYS[4] leases  <prefix>:{<run_id>}:leases               ZSET
-- KEYS[5] events  <prefix>:{<run_id>}:audit                LIST  the run's audit chain head and pending events (audit.lib)
-- KEYS[6] pending <prefix>:{<slot tag>}:audit              ZSET  the slot's runs with pending events
-- KEYS[7] count   <prefix>:{<slot tag>}:audit-n            STRING  the slot's pending events
--
-- ARGV[1]  tool_call_id  string  the id in KEYS[1], for the run's leases and index
-- ARGV[2]  owner         string  the owner as the header keeps it, and a space: must be the header's at H_OWNER
-- ARGV[3]  segment       string  the header from H_STATUS to H_UPDATED that the completion writes, as Go encodes it
-- ARGV[4]  overflow      string  the same for the completion refused for its size (ERROR/RESULT_TOO_LARGE, no payload)
-- ARGV[5]  digest        string  the completion's digest, as in both segments: recognises a retry
-- ARGV[6]  raw           bytes   the raw response's first part (may be empty for ERROR)
-- ARGV[7]  raw_2         bytes   its second part, or empty
-- ARGV[8]  raw_3         bytes   its third part, or empty
-- ARGV[9]  result        bytes   READY: the agent-facing result's first part; ERROR: empty
-- ARGV[10] result_2      bytes
-- ARGV[11] result_3      bytes
-- ARGV[12] handles       string  READY: the ids of the handles the result holds, space-separated, or empty: each
--                                becomes the run's field "h:<id>" naming this call (the run's handle index)
-- ARGV[13] audit         string  the complete event's body after its head (internal/auditrec), or empty: audit is off
-- ARGV[14] audit_head    string  the body's head: type letter, status, evidence, code ("C R F -"); a completion
--                                refused for its size has "C E E RESULT_TOO_LARGE" instead
-- ARGV[15] run_id        string  the run's id, its member in KEYS[6]
-- ARGV[16] generation    string  11 bytes: the stream of a run state this script makes (after a loss)
--
-- RETRY safe    a resent completion by the same owner is recognised by its digest
--
-- RETURNS
--   {"OK"|"EXISTS"|"RESULT_TOO_LARGE", header string, pttl int}
--     OK: the transition asked for was made; EXISTS: the same owner already made this completion (the stored outcome),
--     its header written back unchanged, so that the reply follows a write of this script's own: WAIT
--     (Redis 7.2+, Valkey) counts only what its connection propagated;
--     RESULT_TOO_LARGE: over a byte limit, the record is now ERROR/RESULT_TOO_LARGE with no raw or result
--   {"NOT_FOUND"}
--     no record (never begun, or expired)
--   {"INVALID_TRANSITION", header string}
--     wrong owner, terminal record (abandoned included), or a malformed completion: nothing changed
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
local AUDIT_EVENTS = KEYS[5]
local AUDIT_RUNS = KEYS[6]
local AUDIT_COUNT = KEYS[7]
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
local audit = ARGV[13] ~= ''

local m = redis.call('HGET', KEYS[1], HEADER)
if not m then
  -- A hash without a header under the record's key is another layout's.
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return {'LAYOUT_MISMATCH'}
  end
  return {'NOT_FOUND'}
end
if string.sub(m, H_VERSION, H_VERSION) ~= LAYOUT then
  return {'LAYOUT_MISMATCH'}
end
if string.sub(m, H_OWNER, H_OWNER + string.len(ARGV[2]) - 1) ~= ARGV[2] then
  return {'INVALID_TRANSITION', m}
end
if string.sub(m, H_STATUS, H_STATUS) ~= PROJECTING then
  if string.sub(m, H_COMPLETION, H_COMPLETION_END) == ARGV[5] then
    redis.call('HSET', KEYS[1], HEADER, m)
    return {'EXISTS', m, redis.call('PTTL', KEYS[1])}
  end
  return {'INVALID_TRANSITION', m}
end
local status = string.sub(ARGV[3], 1, 1)
local width = H_UPDATED - H_STATUS
if (status ~= READY and status ~= ERROR) or string.len(ARGV[3]) ~= width or string.len(ARGV[4]) ~= width then
  return {'INVALID_TRANSITION', m}
end

local raw_len = string.len(ARGV[6]) + string.len(ARGV[7]) + string.len(ARGV[8])
local result_len = string.len(ARGV[9]) + string.len(ARGV[10]) + string.len(ARGV[11])
local req_len = tonumber(string.sub(m, H_REQUEST_LEN, H_REQUEST_LEN_END))
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local expires = redis.call('PEXPIRETIME', KEYS[1])
local pttl = expires - now
local run = redis.call('HMGET', KEYS[2], 'bytes', 'lim_run_bytes', 'lim_record_bytes', 'lim_result_bytes', 'gen', 'state',
  RUN_LAYOUT_FIELD, 'exp', 'aseq', 'ag')
-- The expiry of the run's keys, which cover this record: the state's own
-- (begin sets it and them together), else, for a state made below, the
-- record's.
local run_exp = tonumber(run[8] or '0')
if other_layout(run, 6, 7) then
  return {'LAYOUT_MISMATCH'}
end
local outcome, segment = 'OK', ARGV[3]
-- The audit stream the event joins: the state's (a state made here after
-- a loss starts one of its own), and its next sequence number.
local stream, seq = audit_stream(run[10], run[5]), tonumber(run[9] or '0') + 1
if not run[2] or (run[5] and string.sub(m, H_GEN, H_GEN_END) ~= run[5]) then
  -- The run's state is gone while its record lives, or the state is a new
  -- one a begin made after it was lost: record the outcome all the same
  -- (the record is the canonical one), and mark the run lost and closed, so
  -- that its budgets never silently start again from zero.
  redis.call('HSET', KEYS[2], 'state', 'closed', RUN_GONE_FIELD, 1, RUN_LAYOUT_FIELD, RUN_LAYOUT)
  if audit then
    -- The stream goes on past the loss under the state's generation, or
    -- starts with the one Go offered when the state is gone.
    stream = stream or ARGV[16]
    redis.call('HSET', KEYS[2], 'ag', stream)
  end
  if run[5] then
    -- Another generation's state: its owner restarted a run it could not
    -- know was lost, and is not this record's. The state becomes what a
    -- lost one is, with no owner and no limits, so that nobody reads the
    -- run from now on, nor claims it.
    redis.call('HDEL', KEYS[2], 'principal', 'gen', 'secret', 'lim_calls_run', 'lim_calls_tool', 'lim_run_bytes',
      'lim_record_bytes', 'lim_result_bytes')
  end
  redis.call('HSETNX', KEYS[2], 'created_ms', now)
  if run_exp < expires then
    run_exp = expires
    redis.call('HSET', KEYS[2], 'exp', run_exp)
    redis.call('PEXPIREAT', KEYS[2], run_exp)
  end
elseif result_len > tonumber(run[4]) or req_len + raw_len + result_len > tonumber(run[3])
    or tonumber(run[1] or '0') + raw_len + result_len > tonumber(run[2]) then
  -- Never truncate: refuse the payload and record why.
  outcome, segment = 'RESULT_TOO_LARGE', ARGV[4]
end

-- The header keeps its first byte and everything from H_CREATED on; Go's
-- segment and the server's clock replace the rest.
local h = string.format('%s%s%013d%s', string.sub(m, 1, H_STATUS - 1), segment, now, string.sub(m, H_CREATED))
local args = {HEADER, h}
if outcome == 'OK' then
  put(args, RAW_PARTS, 6)
  if status == READY then
    put(args, RESULT_PARTS, 9)
  else
    result_len = 0
  end
  -- The bytes read above, and the run's handle index: for each handle the
  -- result holds, the call whose raw response holds its value. The index
  -- is the state's, so it lives as the state does, longer than every
  -- record it names, and is lost with the run's secret.
  local fields = {'bytes', tonumber(run[1] or '0') + raw_len + result_len}
  if audit then
    fields[#fields + 1] = 'aseq'
    fields[#fields + 1] = seq
  end
  if status == READY then
    for id in string.gmatch(ARGV[12], '%S+') do
      fields[#fields + 1] = 'h:' .. id
      fields[#fields + 1] = ARGV[1]
    end
  end
  redis.call('HSET', KEYS[2], unpack(fields))
elseif audit then
  redis.call('HSET', KEYS[2], 'aseq', seq)
end
redis.call('HSET', KEYS[1], unpack(args))
if audit then
  local head = ARGV[14]
  if outcome ~= 'OK' then
    head = 'C E E RESULT_TOO_LARGE'
  end
  audit_append(ARGV[15], seq, stream, now, head .. ' ' .. ARGV[13], 0)
end

redis.call('ZREM', KEYS[4], ARGV[1])
-- An index this RPUSH made has no expiry yet, and gets the run's keys'; an
-- older one has it already (begin extends it with the state).
if redis.call('RPUSH', KEYS[3], ARGV[1]) == 1 then
  redis.call('PEXPIREAT', KEYS[3], math.max(run_exp, expires))
end
return {outcome, h, pttl}
