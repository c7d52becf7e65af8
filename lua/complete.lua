-- complete: move a PROJECTING record to READY or ERROR and enter it in the
-- run's completion index, in one step. The record's TTL is kept exactly
-- (HSET does not touch it; the header keeps its expiry). The completion is
-- checked against the run's limits: a record's bytes against the limits its
-- header took from the run at begin, the run's bytes by taking them from
-- the room the run's state keeps (HINCRBY), given back when it goes below
-- zero. When the run's state is gone (evicted, deleted), or is another
-- generation than the record's (it was lost and a later begin made a new
-- one: the call is not among the new state's calls), the outcome is still
-- recorded, and the run is marked lost, with a TTL no longer than the
-- record's; a state of another generation loses its owner and limits, as a
-- lost one has none.
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH  a header, the request when short, and the payloads' parts (format.lib)
-- KEYS[2] run     <prefix>:{<run_id>}:run                  HASH
-- KEYS[3] calls   <prefix>:{<run_id>}:calls                ZSET
-- KEYS[4] events  <prefix>:{<run_id>}:audit                LIST  the run's audit chain head and pending events (audit.lib)
-- KEYS[5] pending <prefix>:{<slot tag>}:audit              ZSET  the slot's runs with pending events
-- KEYS[6] count   <prefix>:{<slot tag>}:audit-n            STRING  the slot's pending events
--
-- ARGV[1]  tool_call_id  string  the id in KEYS[1], for the run's calls
-- ARGV[2]  owner         string  the owner as the header keeps it, and a space: must be the header's at H_OWNER
-- ARGV[3]  segment       string  the header from H_STATUS to H_UPDATED that the completion writes, as Go encodes it
-- ARGV[4]  raw           bytes   the raw response's first part (may be empty for ERROR)
-- ARGV[5]  raw_2         bytes   its second part, or empty
-- ARGV[6]  raw_3         bytes   its third part, or empty
-- ARGV[7]  result        bytes   READY: the agent-facing result's first part; ERROR: empty
-- ARGV[8]  result_2      bytes
-- ARGV[9]  result_3      bytes
-- ARGV[10] handles       string  READY: the ids of the handles the result holds, space-separated, or empty: each
--                                becomes the run's field "h:<id>" naming this call (the run's handle index)
-- ARGV[11] audit         string  the complete event's body after its head (internal/auditrec), or empty: audit is off
-- ARGV[12] audit_head    string  the body's head: type letter, status, evidence, code ("C R F -"); a completion
--                                refused for its size has "C E E RESULT_TOO_LARGE" instead
-- ARGV[13] run_id        string  the run's id, its member in KEYS[5]
-- ARGV[14] generation    string  with audit on, 11 bytes: the stream of a run state this script finds lost without one
--
-- RETRY safe    a resent completion by the same owner is recognised by its digest
--
-- RETURNS
--   {"OK"|"EXISTS"|"RESULT_TOO_LARGE", header string, pttl int}
--     OK: the transition asked for was made; EXISTS: the same owner already made this completion (the stored outcome),
--     its header's field written back unchanged, so that the reply follows a write of this script's own: WAIT
--     (Redis 7.2+, Valkey) counts only what its connection propagated;
--     RESULT_TOO_LARGE: over a byte limit, the record is now ERROR/RESULT_TOO_LARGE with no raw or result
--   {"NOT_FOUND"}
--     no record (never begun, or expired)
--   {"INVALID_TRANSITION", header string}
--     wrong owner, terminal record (abandoned included), or a malformed completion: nothing changed
--   {"LAYOUT_MISMATCH"}
--     the record or the run's state is of another layout (an earlier release's): nothing changed
--   a header in a reply is the header's whole field (the request may follow it)

-- #include format.lib
local AUDIT_EVENTS = KEYS[4]
local AUDIT_RUNS = KEYS[5]
local AUDIT_COUNT = KEYS[6]
local AUDIT_RUN = KEYS[2]
-- #include audit.lib
local audit = ARGV[11] ~= ''

local m = redis.call('HGET', KEYS[1], HEADER)
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
-- Replies carry the header's whole field (the request may follow the
-- header's newline): cutting it here would copy it again.
if sub(m, H_OWNER, H_OWNER + len(ARGV[2]) - 1) ~= ARGV[2] then
  return {'INVALID_TRANSITION', m}
end
if sub(m, H_STATUS, H_STATUS) ~= PROJECTING then
  if sub(m, H_COMPLETION, H_COMPLETION_END) == sub(ARGV[3], H_COMPLETION - 1, H_COMPLETION_END - 1) then
    redis.call('HSET', KEYS[1], HEADER, m)
    return {'EXISTS', m, redis.call('PTTL', KEYS[1])}
  end
  return {'INVALID_TRANSITION', m}
end
local status = sub(ARGV[3], 1, 1)
if (status ~= READY and status ~= ERROR) or len(ARGV[3]) ~= H_UPDATED - H_STATUS then
  return {'INVALID_TRANSITION', m}
end

local raw_len = len(ARGV[4]) + len(ARGV[5]) + len(ARGV[6])
local result_len = 0
if status == READY then
  result_len = len(ARGV[7]) + len(ARGV[8]) + len(ARGV[9])
end
local outcome, segment, charge = 'OK', ARGV[3], raw_len + result_len
-- Never truncate: a record over its limits keeps no payload, and says why.
if result_len > tonumber(sub(m, H_MAX_RESULT, H_MAX_RESULT_END)) or
    tonumber(sub(m, H_REQUEST_LEN, H_REQUEST_LEN_END)) + charge > tonumber(sub(m, H_MAX_RECORD, H_MAX_RECORD_END)) then
  outcome, segment, charge = 'RESULT_TOO_LARGE', OVERFLOW_HEAD ..
    sub(ARGV[3], H_COMPLETION - 1, H_COMPLETION_END - 1) .. OVERFLOW_TAIL, 0
end
local t = redis.call('TIME')
local us = string.rep('0', 6 - len(t[2])) .. t[2]
local snow = t[1] .. sub(us, 1, 3)
local expires = tonumber(sub(m, H_EXPIRES, H_EXPIRES_END))

-- The run's bytes: taken from its room, which a run at its limit has at
-- zero. The call enters the completion index, scored by the server's clock
-- in microseconds (after every lease, which are milliseconds).
local room = redis.call('HINCRBY', KEYS[2], 'room', format('%d', -charge))
local added = redis.call('ZADD', KEYS[3], t[1] .. us, ARGV[1])
-- The audit event's sequence number and stream: the state's.
local seq, stream
if room <= 0 or added == 1 then
  -- At the run's limit, over it, or a state that is not the one that counted
  -- the call: the state tells which.
  local run = redis.call('HMGET', KEYS[2], RUN_LAYOUT_FIELD, RUN_IDENT_FIELD, 'state', 'exp', 'aseq', 'ag')
  local layout, ident = run[1], run[2]
  -- A state's stream is its generation's, or the one it kept when it was
  -- found lost ("ag").
  seq, stream = tonumber(run[5] or '0') + 1, run[6] or ident and sub(ident, PRINCIPAL_LEN + 1, PRINCIPAL_LEN + GEN_LEN)
  local thisLayout = layout and sub(layout, 1, RUN_LAYOUT_LEN) == RUN_LAYOUT
  if run[3] and not thisLayout then
    -- Another layout's state: what this script wrote is taken back.
    redis.call('HDEL', KEYS[2], 'room')
    if added == 1 then
      redis.call('ZREM', KEYS[3], ARGV[1])
    end
    return {'LAYOUT_MISMATCH'}
  end
  local run_exp = tonumber(run[4] or '0')
  if not run[3] or run[3] == RUN_LOST or not ident or len(layout) == RUN_LAYOUT_LEN or
      (added == 1 and sub(ident, PRINCIPAL_LEN + 1, PRINCIPAL_LEN + GEN_LEN) ~= sub(m, H_GEN, H_GEN_END)) then
    -- The run's state is gone while its record lives, or the state is a
    -- new one a begin made after it was lost: record the outcome all the
    -- same (the record is the canonical one), and mark the run lost, so
    -- that its budgets never silently start again from zero. A state of
    -- another generation loses its owner, limits and room: its owner
    -- restarted a run it could not know was lost, and is not this record's;
    -- from now on nobody reads the run, nor claims it.
    redis.call('HDEL', KEYS[2], RUN_IDENT_FIELD, 'room')
    redis.call('HSET', KEYS[2], 'state', RUN_LOST, RUN_LAYOUT_FIELD, RUN_LAYOUT)
    if audit then
      -- The stream goes on past the loss under the state's generation, or
      -- starts with the one Go offered when the state is gone.
      stream = stream or ARGV[14]
      redis.call('HSET', KEYS[2], 'ag', stream)
    end
    redis.call('HSETNX', KEYS[2], 'created_ms', snow)
    if not run[3] or run_exp < expires then
      run_exp = math.max(run_exp, expires)
      redis.call('HSET', KEYS[2], 'exp', format('%d', run_exp))
      redis.call('PEXPIREAT', KEYS[2], format('%d', run_exp))
    end
  elseif room < 0 then
    -- Over the run's bytes: the room is given back, and the record keeps
    -- no payload.
    redis.call('HINCRBY', KEYS[2], 'room', format('%d', charge))
    outcome, segment = 'RESULT_TOO_LARGE', OVERFLOW_HEAD ..
      sub(ARGV[3], H_COMPLETION - 1, H_COMPLETION_END - 1) .. OVERFLOW_TAIL
  end
  -- Calls this ZADD made (they were lost) get the run's keys' expiry.
  if added == 1 and redis.call('PTTL', KEYS[3]) == -1 then
    redis.call('PEXPIREAT', KEYS[3], format('%d', math.max(run_exp, expires)))
  end
  if audit then
    redis.call('HSET', KEYS[2], 'aseq', format('%d', seq))
  end
elseif audit then
  -- The state that counted the call, with its owner: its stream is the
  -- record's generation.
  seq, stream = redis.call('HINCRBY', KEYS[2], 'aseq', 1), sub(m, H_GEN, H_GEN_END)
end

-- The header keeps its first byte and everything from H_CREATED on (the
-- request too, when it follows); Go's segment and the server's clock
-- replace the rest.
local h = sub(m, 1, H_STATUS - 1) .. segment .. snow .. sub(m, H_CREATED)
if outcome ~= 'OK' or raw_len == 0 and result_len == 0 then
  redis.call('HSET', KEYS[1], HEADER, h)
elseif ARGV[5] == '' and ARGV[8] == '' and raw_len > 0 then
  -- A raw response in one part, and a result in one part or none.
  if result_len > 0 then
    redis.call('HSET', KEYS[1], HEADER, h, RAW, ARGV[4], RES, ARGV[7])
  else
    redis.call('HSET', KEYS[1], HEADER, h, RAW, ARGV[4])
  end
else
  -- The payloads' parts that hold bytes.
  local args = {HEADER, h}
  if raw_len > 0 then
    args[3], args[4] = RAW, ARGV[4]
    if ARGV[5] ~= '' then
      args[5], args[6] = RAW_2, ARGV[5]
      if ARGV[6] ~= '' then
        args[7], args[8] = RAW_3, ARGV[6]
      end
    end
  end
  if result_len > 0 then
    local n = #args
    args[n + 1], args[n + 2] = RES, ARGV[7]
    if ARGV[8] ~= '' then
      args[n + 3], args[n + 4] = RES_2, ARGV[8]
      if ARGV[9] ~= '' then
        args[n + 5], args[n + 6] = RES_3, ARGV[9]
      end
    end
  end
  redis.call('HSET', KEYS[1], unpack(args))
end
-- The run's handle index: for each handle the result holds, the call whose
-- raw response holds its value. The index is the state's, so it lives as
-- the state does, longer than every record it names, and is lost with the
-- run's secret.
if outcome == 'OK' and status == READY and ARGV[10] ~= '' then
  local fields = {}
  for id in string.gmatch(ARGV[10], '%S+') do
    fields[#fields + 1] = 'h:' .. id
    fields[#fields + 1] = ARGV[1]
  end
  redis.call('HSET', KEYS[2], unpack(fields))
end
if audit then
  local head = ARGV[12]
  if outcome ~= 'OK' then
    head = 'C E E RESULT_TOO_LARGE'
  end
  audit_append(ARGV[13], seq, stream, snow, head .. ' ' .. ARGV[11], 0)
end
return {outcome, h, expires - tonumber(snow)}
