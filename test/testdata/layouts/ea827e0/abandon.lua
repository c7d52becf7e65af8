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
--
-- ARGV[1] tool_call_id  string  the record's id, dropped from the leases when the record is gone
-- ARGV[2] claim         string  CLAIM_LEN base64url characters: kept in the header of the record this abandons
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
-- internal/scripts_gen: DO NOT EDIT. Included by begin, complete and abandon.
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
return {'OK', h, pttl}
