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

-- #include format.lib
local AUDIT_EVENTS = KEYS[5]
local AUDIT_RUNS = KEYS[6]
local AUDIT_COUNT = KEYS[7]
-- #include audit.lib

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
