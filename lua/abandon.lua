-- abandon: close a PROJECTING record whose lease has passed, because the
-- worker that began it died or gave up. The record becomes
-- ERROR/EXECUTION_ABANDONED with its remaining TTL kept exactly (the header
-- keeps its expiry), and enters the run's completion index, leaving its
-- calls in flight, in one step; the owner's late complete is then refused.
-- Nothing of the run's counters changes: the call was begun and stays
-- counted.
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH  a header, the request when short, and the payloads' parts (format.lib)
-- KEYS[2] calls   <prefix>:{<run_id>}:calls                ZSET
-- KEYS[3] run     <prefix>:{<run_id>}:run                  HASH  with audit on: the event's sequence number (off: any key of the run)
-- KEYS[4] events  <prefix>:{<run_id>}:audit                LIST  the run's audit chain head and pending events (audit.lib)
-- KEYS[5] pending <prefix>:{<slot tag>}:audit              ZSET  the slot's runs with pending events
-- KEYS[6] count   <prefix>:{<slot tag>}:audit-n            STRING  the slot's pending events
--
-- ARGV[1] tool_call_id  string  the record's id, dropped from the calls when the record is gone
-- ARGV[2] claim         string  CLAIM_LEN base64url characters: kept in the header of the record this abandons
-- ARGV[3] audit         string  the abandon event's body (internal/auditrec), or empty: audit is off
-- ARGV[4] run_id        string  the run's id, its member in KEYS[5]
-- ARGV[5] generation    string  with audit on, 11 bytes: the stream of a run state this script makes (its state was lost)
--
-- RETRY safe    a resent abandon (same claim) finds the record it abandoned and is told it is its own
--
-- RETURNS
--   {"OK"|"EXISTS", header string, pttl int}
--     OK: abandoned by this claim, now or by an earlier send whose reply was lost; EXISTS: abandoned under
--     another claim (the stored outcome). Either way the header's field is written back unchanged when it was
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
--   a header in a reply is the header's whole field (the request may follow it)

-- #include format.lib
local AUDIT_EVENTS = KEYS[4]
local AUDIT_RUNS = KEYS[5]
local AUDIT_COUNT = KEYS[6]
local AUDIT_RUN = KEYS[3]
-- #include audit.lib

local m = redis.call('HGET', KEYS[1], HEADER)
if not m then
  -- A hash without a header under the record's key is another layout's:
  -- its lease is that layout's reaper's to keep.
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return {'LAYOUT_MISMATCH'}
  end
  redis.call('ZREM', KEYS[2], ARGV[1])
  return {'NOT_FOUND'}
end
if sub(m, H_VERSION, H_VERSION) ~= LAYOUT then
  return {'LAYOUT_MISMATCH'}
end
-- Replies carry the header's whole field (the request may follow the
-- header's newline): cutting it here would copy it again.
if sub(m, H_STATUS, H_STATUS) ~= PROJECTING then
  local c = sub(m, H_COMPLETION, H_COMPLETION_END)
  if c ~= NO_COMPLETION and sub(c, 1, 1) == ABANDON_MARK then
    redis.call('HSET', KEYS[1], HEADER, m)
    local outcome = 'EXISTS'
    if c == ABANDON_MARK .. ARGV[2] then
      outcome = 'OK'
    end
    return {outcome, m, redis.call('PTTL', KEYS[1])}
  end
  return {'INVALID_TRANSITION', m}
end
if len(ARGV[2]) ~= CLAIM_LEN then
  return {'INVALID_TRANSITION', m}
end

local t = redis.call('TIME')
local us = string.rep('0', 6 - len(t[2])) .. t[2]
local snow = t[1] .. sub(us, 1, 3)
local now = tonumber(snow)
local lease = tonumber(sub(m, H_LEASE, H_LEASE_END))
if now < lease then
  return {'LEASE_ACTIVE', lease - now}
end

local h = sub(m, 1, H_STATUS - 1) .. ABANDONED_HEAD .. ARGV[2] .. ABANDONED_TAIL .. snow .. sub(m, H_CREATED)
redis.call('HSET', KEYS[1], HEADER, h)
local expires = tonumber(sub(m, H_EXPIRES, H_EXPIRES_END))
-- The call enters the completion index, scored by the server's clock in
-- microseconds. Calls this ZADD made (they were lost) get the record's
-- expiry; older ones expire with the run's keys, which cover the record.
if redis.call('ZADD', KEYS[2], t[1] .. us, ARGV[1]) == 1 and redis.call('PTTL', KEYS[2]) == -1 then
  redis.call('PEXPIREAT', KEYS[2], sub(m, H_EXPIRES, H_EXPIRES_END))
end
if ARGV[3] ~= '' then
  -- A state gone while its call lived is made as a completion makes it
  -- after a loss (audit_number).
  local run = redis.call('HMGET', KEYS[3], 'aseq', 'ag', RUN_IDENT_FIELD, 'state')
  local seq, stream = audit_number(run[1], run[2], run[3], run[4], ARGV[5], snow,
    sub(m, H_EXPIRES, H_EXPIRES_END))
  audit_append(ARGV[4], seq, stream, snow, ARGV[3], 0)
end
return {'OK', h, expires - now}
