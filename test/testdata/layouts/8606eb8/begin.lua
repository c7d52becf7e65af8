-- begin: create one call's record in PROJECTING, with a lease, and count it against its run.
--
-- The run's first begin fixes the run's limits and its generation in the
-- run's state; every later begin is checked against those, and each record
-- keeps the generation it was counted in. The record gets its expiry as an
-- absolute time (PEXPIREAT). The run's state, leases, index and live marker
-- expire together, at the absolute time the state keeps in its field "exp":
-- at most a granule (a sixteenth of the TTL, at most a second) after their
-- latest record, set only when a record would outlive them (a close extends
-- state and marker alike).
--
-- A run whose state is gone (evicted, deleted) while its live marker, index
-- or leases live is lost: it is refused, never restarted with fresh budgets.
--
-- The run is in its slot's due set, scored at or before its earliest lease,
-- while it has calls in flight: a begin adds it (and keeps the score in the
-- state's field "due") only when its lease is earlier than that score, so
-- about once per run; the reaper moves it to its next lease, or drops it.
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH  a header and the payloads' parts (format.lib)
-- KEYS[2] run     <prefix>:{<run_id>}:run                  HASH
-- KEYS[3] index   <prefix>:{<run_id>}:done                 LIST  tells a lost run state from a new run; extended with the state
-- KEYS[4] leases  <prefix>:{<run_id>}:leases               ZSET  PROJECTING calls by lease deadline, and "~" (+inf)
-- KEYS[5] live    <prefix>:{<run_id>}:live                 STRING  the run has begun calls; expires with the run's state
-- KEYS[6] due     <prefix>:{<slot tag>}:due                ZSET  the slot's runs with calls in flight, by earliest lease
-- KEYS[7] events  <prefix>:{<run_id>}:audit                LIST  the run's audit chain head and pending events (audit.lib)
-- KEYS[8] pending <prefix>:{<slot tag>}:audit              ZSET  the slot's runs with pending events
-- KEYS[9] count   <prefix>:{<slot tag>}:audit-n            STRING  the slot's pending events
--
-- ARGV[1]  tool_call_id      string  the id in KEYS[1], for the run's leases
-- ARGV[2]  tool              string  for the run's count of the tool's calls
-- ARGV[3]  head              string  the new record's header up to H_UPDATED, as Go encodes it
-- ARGV[4]  tail              string  the header from H_ID_TAG on (identity tag, request length and digest, owner, tool)
-- ARGV[5]  request           bytes   the request's first part (complete canonical request: a JSON object)
-- ARGV[6]  request_2         bytes   its second part, or empty
-- ARGV[7]  request_3         bytes   its third part, or empty
-- ARGV[8]  ttl_ms            int     > 0; set once here (as an absolute expiry), never extended
-- ARGV[9]  lease_ms          int     1..ttl_ms: time until abandon may close the call
-- ARGV[10] calls_run         int     the caller's limits; 0 means the run's
-- ARGV[11] calls_tool        int
-- ARGV[12] run_bytes         int
-- ARGV[13] record_bytes      int
-- ARGV[14] result_bytes      int
-- ARGV[15] new_calls_run     int     the limits a run without any takes (the caller's, defaulted)
-- ARGV[16] new_calls_tool    int
-- ARGV[17] new_run_bytes     int
-- ARGV[18] new_record_bytes  int
-- ARGV[19] new_result_bytes  int
-- ARGV[20] principal         string  the caller's principal tag (64 hex): the run's owner once the run has one
-- ARGV[21] generation        string  11 bytes: the generation a run without one takes (random per Begin)
-- ARGV[22] secret            string  the secret a run without one takes (random per Begin): the key of the run's handles
-- ARGV[23] run_id            string  the run's id, its member in KEYS[6] and KEYS[8]
-- ARGV[24] audit_call        string  the begin event's body after its type letter (internal/auditrec), or empty: audit
--                                    is off; a replay, a duplicate of a finished call of the same request, has the same
-- ARGV[25] audit_max         int     the most pending events the slot may hold before a begin is refused
--
-- RETRY safe    a resent begin by the same owner with the same request finds its own record
--
-- RETURNS
--   {"OK", created_ms int, ttl_ms int, lease_ms int, calls_run int, calls_tool int, run_bytes int, record_bytes int, result_bytes int, secret string}
--     created; the limits and the secret are the run's
--   {"EXISTS", header string, pttl int, result bytes, result_2 bytes, result_3 bytes, calls_run int, calls_tool int, run_bytes int, record_bytes int, result_bytes int, secret string}
--     the same owner retried the same request (the header's tail is ARGV[4]): the record as it is (its header and
--     its result's parts), nothing counted again; limits are 0 and the secret empty when the run's state is gone. The header is written
--     back unchanged, so that the reply follows a write of this script's own: WAIT (Redis 7.2+, Valkey) counts only
--     what its connection propagated
--   {"REPLAYABLE", header string, pttl int, result bytes, result_2 bytes, result_3 bytes}
--     another owner began the same tool and request under the id, and the call is finished: the record as it is,
--     for a host that replays duplicates; its header is written back unchanged, so that the reply follows a write
--     of this script's own and a WAIT covers what a replay shows
--   {"RUN_FORBIDDEN"}
--     the run belongs to another principal; checked before anything else, so it tells nothing of the run
--   {"TOOL_CALL_IN_PROGRESS"} | {"DUPLICATE_TOOL_CALL"} | {"BUDGET_EXHAUSTED"} | {"RESULT_TOO_LARGE"}
--     another call has the id (still PROJECTING, or finished), or the run's limits refuse it
--   {"RUN_INACTIVE", reason string}
--     reason "closed": the run was closed; "lost": its state is gone while its live marker, index, leases or
--     the call's record live
--   {"INVALID_ARGUMENT", field string}
--     a non-zero limit differs from the run's
--   {"LAYOUT_MISMATCH"}
--     the run's state, or a hash under the record's key, is of another layout (an earlier release's)
--   {"AUDIT_BACKLOG"}
--     audit is on and the slot holds audit_max pending events: the call would add one more
--   refusals write nothing (AUDIT_BACKLOG gives back to the slot's count what it took to compare: the store is as
--   it was)

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
local AUDIT_EVENTS = KEYS[7]
local AUDIT_RUNS = KEYS[8]
local AUDIT_COUNT = KEYS[9]
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
local audit = ARGV[24] ~= ''

-- The run's state in one read; its owner is checked first: another
-- principal learns nothing, not even whether the call id is taken. A run
-- whose state is lost has no owner any more, and is refused below
-- (RUN_INACTIVE "lost") to every principal.
local tool_field = 'tool:' .. ARGV[2]
local run = redis.call('HMGET', KEYS[2], 'state', 'calls', tool_field, 'bytes',
  'lim_calls_run', 'lim_calls_tool', 'lim_run_bytes', 'lim_record_bytes', 'lim_result_bytes', RUN_GONE_FIELD, 'gen',
  'principal', 'secret', RUN_LAYOUT_FIELD, 'exp', 'created_ms', 'due', 'aseq', 'ag')
-- A state of another layout is read no further.
if other_layout(run, 1, 14) then
  return {'LAYOUT_MISMATCH'}
end
if run[12] and run[12] ~= ARGV[20] then
  return {'RUN_FORBIDDEN'}
end

-- A new call finds no key: one EXISTS, and the record is read only when
-- there is one.
if redis.call('EXISTS', KEYS[1]) == 1 then
  local m = redis.call('HGET', KEYS[1], HEADER)
  if not m or string.sub(m, H_VERSION, H_VERSION) ~= LAYOUT then
    -- A hash under the record's key without a header of this layout is
    -- no record this layout wrote: never write over it.
    return {'LAYOUT_MISMATCH'}
  end
  if string.sub(m, H_ID_TAG) == ARGV[4] then
    redis.call('HSET', KEYS[1], HEADER, m)
    local res = redis.call('HMGET', KEYS[1], unpack(RESULT_PARTS))
    return {'EXISTS', m, redis.call('PTTL', KEYS[1]), res[1] or '', res[2] or '', res[3] or '',
      tonumber(run[5] or '0'), tonumber(run[6] or '0'), tonumber(run[7] or '0'), tonumber(run[8] or '0'),
      tonumber(run[9] or '0'), run[13] or ''}
  end
  -- A record while the run's state has no limits: the state is lost (it
  -- outlives every record it counts), and with it the run's owner. Refused
  -- as lost to every principal, before telling whether the id is taken.
  if not run[5] then
    return {'RUN_INACTIVE', 'lost'}
  end
  if string.sub(m, H_STATUS, H_STATUS) == PROJECTING then
    return {'TOOL_CALL_IN_PROGRESS'}
  end
  -- The same request and tool (the tail but its owner; the owner holds no
  -- space, so the tool is what follows the header's last one).
  if string.sub(m, H_ID_TAG, H_OWNER - 1) == string.sub(ARGV[4], 1, H_OWNER - H_ID_TAG)
      and string.sub(m, -(string.len(ARGV[2]) + 1)) == ' ' .. ARGV[2] then
    redis.call('HSET', KEYS[1], HEADER, m)
    if audit then
      local t = redis.call('TIME')
      local seq = tonumber(run[18] or '0') + 1
      redis.call('HSET', KEYS[2], 'aseq', seq)
      audit_append(ARGV[23], seq, audit_stream(run[19], run[11]), t[1] * 1000 + math.floor(t[2] / 1000), 'R ' .. ARGV[24], 1)
    end
    local res = redis.call('HMGET', KEYS[1], unpack(RESULT_PARTS))
    return {'REPLAYABLE', m, redis.call('PTTL', KEYS[1]), res[1] or '', res[2] or '', res[3] or ''}
  end
  return {'DUPLICATE_TOOL_CALL'}
end

if run[10] then
  return {'RUN_INACTIVE', 'lost'}
end
if run[1] == 'closed' then
  return {'RUN_INACTIVE', 'closed'}
end
local names = {'calls_run', 'calls_tool', 'run_bytes', 'record_bytes', 'result_bytes'}
local lim = {}
local gen = run[11]
if run[5] then
  for i = 1, 5 do
    lim[i] = tonumber(run[4 + i])
    local given = tonumber(ARGV[9 + i])
    if given ~= 0 and given ~= lim[i] then
      return {'INVALID_ARGUMENT', names[i]}
    end
  end
else
  -- No limits: a new run, unless the run already began calls (its live
  -- marker, index or leases live: none outlives the state it belongs to),
  -- in which case its state was lost and its budgets cannot restart.
  if redis.call('EXISTS', KEYS[5], KEYS[3], KEYS[4]) > 0 then
    return {'RUN_INACTIVE', 'lost'}
  end
  for i = 1, 5 do
    lim[i] = tonumber(ARGV[14 + i])
  end
  gen = ARGV[21]
end
if tonumber(run[2] or '0') >= lim[1] or tonumber(run[3] or '0') >= lim[2] then
  return {'BUDGET_EXHAUSTED'}
end
local size = string.len(ARGV[5]) + string.len(ARGV[6]) + string.len(ARGV[7])
if size > lim[4] or tonumber(run[4] or '0') + size > lim[3] then
  return {'RESULT_TOO_LARGE'}
end
-- The slot's count takes this call's event and its completion's ahead;
-- past the bound it is given them back, and the begin refused: the store
-- is left as it was.
if audit and not audit_count(tonumber(ARGV[25])) then
  return {'AUDIT_BACKLOG'}
end

local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local ttl = tonumber(ARGV[8])
local lease = now + tonumber(ARGV[9])
-- One absolute expiry for the record and every key that covers it, from
-- one clock read.
local expires = now + ttl
-- The header Go encoded, with the server's clock and the run's generation
-- written between its head and its tail.
local args = {HEADER, string.format('%s%013d%013d%013d%s%s', ARGV[3], now, now, lease, gen, ARGV[4])}
put(args, REQUEST_PARTS, 5)
redis.call('HSET', KEYS[1], unpack(args))
redis.call('PEXPIREAT', KEYS[1], expires)

-- The counters are the ones read above, in this script: one HSET writes
-- them (and a run's first begin, its limits and generation).
local counts = {'calls', tonumber(run[2] or '0') + 1, tool_field, tonumber(run[3] or '0') + 1,
  'bytes', tonumber(run[4] or '0') + size}
-- The event's sequence number is the state's, written with its counters.
local seq = tonumber(run[18] or '0') + 1
if audit then
  counts[#counts + 1] = 'aseq'
  counts[#counts + 1] = seq
end
if not run[5] then
  for i, f in ipairs({'lim_calls_run', 'lim_calls_tool', 'lim_run_bytes', 'lim_record_bytes', 'lim_result_bytes'}) do
    counts[#counts + 1] = f
    counts[#counts + 1] = lim[i]
  end
  counts[#counts + 1] = 'gen'
  counts[#counts + 1] = gen
  counts[#counts + 1] = RUN_LAYOUT_FIELD
  counts[#counts + 1] = RUN_LAYOUT
end
-- The run's secret, the key of its handles, is fixed by the first begin
-- that finds none: no agent ever reads it.
local secret = run[13]
if not secret then
  secret = ARGV[22]
  counts[#counts + 1] = 'secret'
  counts[#counts + 1] = secret
end
-- A run's first begin writes what a progress report or a close may have
-- made before it only where they made nothing: the same one HSET.
if not run[5] then
  if not run[1] then
    counts[#counts + 1] = 'state'
    counts[#counts + 1] = 'open'
  end
  if not run[12] then
    counts[#counts + 1] = 'principal'
    counts[#counts + 1] = ARGV[20]
  end
  if not run[16] then
    counts[#counts + 1] = 'created_ms'
    counts[#counts + 1] = now
  end
end
-- The run's state, leases, index and live marker must outlive every record
-- they count, and expire together: at the absolute time the state keeps in
-- its field "exp". When the new record expires later, all four are set to
-- its expiry and a granule more (a sixteenth of its TTL, at most a second),
-- so that the begins of the next granule find them covering already and
-- write none of them; the first begin of a run sets them all. The leases
-- keep a member of their own ("~", scored +inf) that no call removes, so
-- that they are never deleted while the run lives and a ZADD that creates
-- them (2 added) tells they were lost.
local run_exp = tonumber(run[15] or '0')
local extend = not run[5] or run_exp < expires
if extend then
  run_exp = math.max(run_exp, expires + math.min(math.floor(ttl / 16), 1000))
  counts[#counts + 1] = 'exp'
  counts[#counts + 1] = run_exp
end
-- The run enters its slot's due set at this lease when it is not there at
-- an earlier time already (a later lease of the run is found through the
-- earliest one: the reaper moves the run on when it comes).
local due = not run[17] or lease < tonumber(run[17])
if due then
  counts[#counts + 1] = 'due'
  counts[#counts + 1] = lease
end
redis.call('HSET', KEYS[2], unpack(counts))
if audit then
  audit_append(ARGV[23], seq, audit_stream(run[19], gen), now, 'B ' .. ARGV[24], 0)
end
if due then
  redis.call('ZADD', KEYS[6], lease, ARGV[23])
end
-- The due set lives as long as the runs in it: extended as their keys are.
if (due or extend and run[17]) and redis.call('PEXPIREAT', KEYS[6], run_exp, 'GT') == 0 then
  redis.call('PEXPIREAT', KEYS[6], run_exp, 'NX')
end
local added = redis.call('ZADD', KEYS[4], lease, ARGV[1], 'inf', '~')
if extend then
  redis.call('PEXPIREAT', KEYS[2], run_exp)
  redis.call('PEXPIREAT', KEYS[4], run_exp)
  redis.call('PEXPIREAT', KEYS[3], run_exp)
  -- The marker holds the run's generation; setting it with its expiry is
  -- one command.
  redis.call('SET', KEYS[5], gen, 'PXAT', run_exp)
  -- A chain head with nothing pending lives as long as the run's state
  -- (a later event continues it); pending events keep their longer life.
  if audit then
    redis.call('PEXPIREAT', AUDIT_EVENTS, run_exp, 'GT')
  end
elseif added == 2 then
  -- The leases were lost, and made again by this ZADD.
  redis.call('PEXPIREAT', KEYS[4], run_exp)
end
return {'OK', now, ttl, lease, lim[1], lim[2], lim[3], lim[4], lim[5], secret}
