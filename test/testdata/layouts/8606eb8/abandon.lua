-- abandon: close a PROJECTING record whose lease has passed, because the
-- worker that began it died or gave up. The record becomes
-- ERROR/EXECUTION_ABANDONED with its remaining TTL kept exactly, leaves the
-- run's leases and enters the completion index, in one step; the owner's late
-- complete is then refused. Nothing of the run's counters changes: the call
-- was begun and stays counted.
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH  a header and the payloads' parts (format.lib)
-- KEYS[2] index   <prefix>:{<run_id>}:done                 LIST
-- KEYS[3] leases  <prefix>:{<run_id>}:leases               ZSET
-- KEYS[4] run     <prefix>:{<run_id>}:run                  HASH  with audit on: the event's sequence number (off: any key of the run)
-- KEYS[5] events  <prefix>:{<run_id>}:audit                LIST  the run's audit chain head and pending events (audit.lib)
-- KEYS[6] pending <prefix>:{<slot tag>}:audit              ZSET  the slot's runs with pending events
-- KEYS[7] count   <prefix>:{<slot tag>}:audit-n            STRING  the slot's pending events
--
-- ARGV[1] tool_call_id  string  the record's id, dropped from the leases when the record is gone
-- ARGV[2] claim         string  CLAIM_LEN base64url characters: kept in the header of the record this abandons
-- ARGV[3] audit         string  the abandon event's body (internal/auditrec), or empty: audit is off
-- ARGV[4] run_id        string  the run's id, its member in KEYS[6]
-- ARGV[5] generation    string  11 bytes: the stream of a run state this script makes (its state was lost)
--
-- RETRY safe    a resent abandon (same claim) finds the record it abandoned and is told it is its own
--
-- RETURNS
--   {"OK"|"EXISTS", header string, pttl int}
--     OK: abandoned by this claim, now or by an earlier send whose reply was lost; EXISTS: abandoned under
--     another claim (the stored outcome). Either way the header is written back unchanged when it was
--     abandoned before, so that the reply follows a write of this script's own: WAIT (Redis 7.2+, Valkey)
--     counts only what its connection propagated
--   {"LEASE_ACTIVE", remaining_ms int}
--     the lease has not passed: nothing changed
--   {"INVALID_TRANSITION", header string}
--     the record was completed by its owner: nothing changed
--   {"NOT_FOUND"}
--     no record (never begun, or expired); a leftover lease entry is dropped
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

local m = redis.call('HGET', KEYS[1], HEADER)
if not m then
  -- A hash without a header under the record's key is another layout's:
  -- its lease is that layout's reaper's to keep.
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return {'LAYOUT_MISMATCH'}
  end
  redis.call('ZREM', KEYS[3], ARGV[1])
  return {'NOT_FOUND'}
end
if string.sub(m, H_VERSION, H_VERSION) ~= LAYOUT then
  return {'LAYOUT_MISMATCH'}
end
if string.sub(m, H_STATUS, H_STATUS) ~= PROJECTING then
  local c = string.sub(m, H_COMPLETION, H_COMPLETION_END)
  if c ~= NO_COMPLETION and string.sub(c, 1, 1) == ABANDON_MARK then
    redis.call('HSET', KEYS[1], HEADER, m)
    local outcome = 'EXISTS'
    if c == ABANDON_MARK .. ARGV[2] then
      outcome = 'OK'
    end
    return {outcome, m, redis.call('PTTL', KEYS[1])}
  end
  return {'INVALID_TRANSITION', m}
end
if string.len(ARGV[2]) ~= CLAIM_LEN then
  return {'INVALID_TRANSITION', m}
end

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local lease = tonumber(string.sub(m, H_LEASE, H_LEASE_END))
if lease == 0 then
  -- Begun without a lease: it runs until the record expires.
  return {'LEASE_ACTIVE', redis.call('PTTL', KEYS[1])}
end
if now < lease then
  return {'LEASE_ACTIVE', lease - now}
end

local h = string.format('%s%s%s%s%013d%s', string.sub(m, 1, H_STATUS - 1), ABANDONED_HEAD, ARGV[2], ABANDONED_TAIL, now,
  string.sub(m, H_CREATED))
redis.call('HSET', KEYS[1], HEADER, h)
local expires = redis.call('PEXPIRETIME', KEYS[1])
local pttl = expires - now
redis.call('ZREM', KEYS[3], ARGV[1])
-- An index this RPUSH made gets the record's expiry; an older one expires
-- with the run's keys, which cover the record already.
if redis.call('RPUSH', KEYS[2], ARGV[1]) == 1 then
  redis.call('PEXPIREAT', KEYS[2], expires)
end
if ARGV[3] ~= '' then
  -- The event's sequence number is the run state's. A state that is gone
  -- while its call lived is made as a completion makes it after a loss:
  -- closed, lost, with a stream of its own, expiring with the record.
  local run = redis.call('HMGET', KEYS[4], 'aseq', 'ag', 'gen', 'state')
  local stream, seq = audit_stream(run[2], run[3]), tonumber(run[1] or '0') + 1
  if not run[4] then
    stream = stream or ARGV[5]
    redis.call('HSET', KEYS[4], 'state', 'closed', RUN_GONE_FIELD, 1, RUN_LAYOUT_FIELD, RUN_LAYOUT, 'ag', stream,
      'created_ms', now, 'exp', expires, 'aseq', seq)
    redis.call('PEXPIREAT', KEYS[4], expires)
  else
    redis.call('HSET', KEYS[4], 'aseq', seq)
  end
  audit_append(ARGV[4], seq, stream, now, ARGV[3], 0)
end
return {'OK', h, pttl}
