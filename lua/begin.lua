-- begin: create one call's record in PROJECTING, with a lease, and count it against its run.
--
-- The run's first begin fixes the run's limits and its generation in the
-- run's state; every later begin is checked against those, and each record
-- keeps the generation it was counted in, and the run's limits of a
-- record's bytes, which its completion checks. The record gets its expiry
-- as an absolute time (PEXPIREAT), which its header keeps too. The run's
-- state, calls and live marker expire together, at the absolute time the
-- state keeps in its field "exp": at most a granule (a sixteenth of the
-- TTL, at most a second) after their latest record, set only when a record
-- would outlive them (a close extends state and marker alike).
--
-- The record is made by one HSETNX of its header (with the request, when
-- it is short), which never writes over a record: a begin of an id that is
-- taken, by this run or by one whose keys were all lost, finds the record;
-- its PEXPIREAT NX finds a key that was there before (of another layout).
--
-- A run whose state is gone (evicted, deleted) while its calls or live
-- marker live is lost: it is refused, never restarted with fresh budgets.
--
-- The run is in its slot's due set, scored at or before its earliest lease,
-- while it has calls in flight: a begin adds it (and keeps the score in the
-- state's field "due") only when its lease is earlier than that score, so
-- about once per run; the reaper moves it to its next lease, or drops it.
--
-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH  a header, the request when short, and the payloads' parts (format.lib)
-- KEYS[2] run     <prefix>:{<run_id>}:run                  HASH
-- KEYS[3] calls   <prefix>:{<run_id>}:calls                ZSET  calls in flight by lease (ms), completed by completion (us), and "~" (+inf)
-- KEYS[4] live    <prefix>:{<run_id>}:live                 STRING  the run has begun calls; expires with the run's state
-- KEYS[5] due     <prefix>:{<slot tag>}:due                ZSET  the slot's runs with calls in flight, by earliest lease
-- KEYS[6] events  <prefix>:{<run_id>}:audit                LIST  the run's audit chain head and pending events (audit.lib)
-- KEYS[7] pending <prefix>:{<slot tag>}:audit              ZSET  the slot's runs with pending events
-- KEYS[8] count   <prefix>:{<slot tag>}:audit-n            STRING  the slot's pending events
--
-- ARGV[1]  tool_call_id  string  the id in KEYS[1], for the run's calls
-- ARGV[2]  tool          string  for the run's count of the tool's calls
-- ARGV[3]  head          string  the new record's header up to H_UPDATED, as Go encodes it
-- ARGV[4]  mid           string  the header from H_ID_TAG to H_MAX_RESULT (identity tag, request length and digest)
-- ARGV[5]  tail          string  the header from H_OWNER on (owner, space, tool, newline)
-- ARGV[6]  request       bytes   the request when the header's field keeps it, else empty
-- ARGV[7]  request_1     bytes   else the request's first part (a complete canonical request: a JSON object)
-- ARGV[8]  request_2     bytes   its second part, or empty
-- ARGV[9]  request_3     bytes   its third part, or empty
-- ARGV[10] ttl_ms        int     > 0; set once here (as an absolute expiry), never extended
-- ARGV[11] lease_ms      int     1..ttl_ms: time until abandon may close the call
-- ARGV[12] limits        string  the caller's limits, packed (record.PackLimits); a zero limit means the run's
-- ARGV[13] new_limits    string  the limits a run without any takes (the caller's, zeros defaulted), packed
-- ARGV[14] ident         string  the caller's principal tag, and the generation and secret a run without them
--                                takes (record.PackIdent; random per Begin): the run's owner once it has one
-- ARGV[15] run_id        string  the run's id, its member in KEYS[5] and KEYS[7]
-- ARGV[16] audit_call    string  the begin event's body after its type letter (internal/auditrec), or empty: audit
--                                is off; a replay, a duplicate of a finished call of the same request, has the same
-- ARGV[17] audit_max     int     the most pending events the slot may hold before a begin is refused
--
-- RETRY safe    a resent begin by the same owner with the same request finds its own record
--
-- RETURNS
--   {"OK", created_ms int, limits string, secret string}
--     created; the limits (packed) and the secret are the run's
--   {"EXISTS", header string, pttl int, result bytes, result_2 bytes, result_3 bytes, limits string, secret string}
--     the same owner retried the same request: the record as it is (its header and its result's parts), nothing
--     counted again; limits and secret are empty when the run's state is gone. The header's field is written
--     back unchanged, so that the reply follows a write of this script's own: WAIT (Redis 7.2+, Valkey) counts
--     only what its connection propagated
--   {"REPLAYABLE", header string, pttl int, result bytes, result_2 bytes, result_3 bytes}
--     another owner began the same tool and request under the id, and the call is finished: the record as it is,
--     for a host that replays duplicates; its header's field is written back unchanged, so that the reply
--     follows a write of this script's own and a WAIT covers what a replay shows
--   {"RUN_FORBIDDEN"}
--     the run belongs to another principal; checked before anything else, so it tells nothing of the run
--   {"TOOL_CALL_IN_PROGRESS"} | {"DUPLICATE_TOOL_CALL"} | {"BUDGET_EXHAUSTED"} | {"RESULT_TOO_LARGE"}
--     another call has the id (still PROJECTING, or finished), or the run's limits refuse it
--   {"RUN_INACTIVE", reason string}
--     reason "closed": the run was closed; "lost": its state is gone while its calls, live marker or the
--     call's record live
--   {"INVALID_ARGUMENT", field string}
--     a non-zero limit differs from the run's
--   {"LAYOUT_MISMATCH"}
--     the run's state, or a hash under the record's key, is of another layout (an earlier release's)
--   {"AUDIT_BACKLOG"}
--     audit is on and the slot holds audit_max pending events: the call would add one more
--   refusals write nothing (AUDIT_BACKLOG gives back to the slot's count what it took to compare: the store is as
--   it was); a header in a reply is the header's whole field (the request may follow it)

-- #include format.lib
local AUDIT_EVENTS = KEYS[6]
local AUDIT_RUNS = KEYS[7]
local AUDIT_COUNT = KEYS[8]
local AUDIT_RUN = KEYS[2]
-- #include audit.lib
local audit = ARGV[16] ~= ''

-- The run's state in one read; its owner is checked first: another
-- principal learns nothing, not even whether the call id is taken. A run
-- whose state is lost has no owner any more, and is refused below
-- (RUN_INACTIVE "lost") to every principal.
local tool_field = 'tool:' .. ARGV[2]
local run = redis.call('HMGET', KEYS[2], RUN_LAYOUT_FIELD, RUN_IDENT_FIELD, 'state', 'calls', tool_field, 'room', 'exp',
  'due', 'aseq')
local layout, ident, state = run[1], run[2], run[3]
-- A state of another layout is read no further.
if state and (not layout or sub(layout, 1, RUN_LAYOUT_LEN) ~= RUN_LAYOUT) then
  return {'LAYOUT_MISMATCH'}
end
if ident and sub(ident, 1, PRINCIPAL_LEN) ~= sub(ARGV[14], 1, PRINCIPAL_LEN) then
  return {'RUN_FORBIDDEN'}
end

-- The run's limits: "" in a state a completion left after a loss, nil
-- without a state.
local limits = layout and sub(layout, LIMITS_AT)
local refusal
local lim = limits
if state == RUN_LOST or limits == '' then
  refusal = {'RUN_INACTIVE', 'lost'}
elseif state == 'closed' then
  refusal = {'RUN_INACTIVE', 'closed'}
elseif limits then
  -- Each non-zero limit the caller gives must be the run's: so it is when
  -- the run's are the caller's, or the caller's with their zeros defaulted
  -- (new_limits: as when the caller began the run). Else each is compared.
  if ARGV[12] ~= limits and ARGV[13] ~= limits then
    local at = {1, 11, 21, 34, 42, 50}
    local names = {'calls_run', 'calls_tool', 'run_bytes', 'result_bytes', 'record_bytes'}
    for i = 1, 5 do
      local given = sub(ARGV[12], at[i], at[i + 1] - 1)
      if tonumber(given) ~= 0 and given ~= sub(limits, at[i], at[i + 1] - 1) then
        refusal = {'INVALID_ARGUMENT', names[i]}
        break
      end
    end
  end
else
  -- No state: a new run, unless the run already began calls (its calls or
  -- live marker live: neither outlives the state it belongs to), in which
  -- case its state was lost and its budgets cannot restart.
  if redis.call('EXISTS', KEYS[3], KEYS[4]) > 0 then
    refusal = {'RUN_INACTIVE', 'lost'}
  end
  lim = ARGV[13]
end
local calls, count = tonumber(run[4] or '0'), tonumber(run[5] or '0')
local size = len(ARGV[6]) + len(ARGV[7]) + len(ARGV[8]) + len(ARGV[9])
local room = tonumber(run[6] or sub(lim, 21, 33))
if not refusal then
  if calls >= tonumber(sub(lim, 1, 10)) or count >= tonumber(sub(lim, 11, 20)) then
    refusal = {'BUDGET_EXHAUSTED'}
  elseif size > tonumber(sub(lim, 42, 49)) or size > room then
    refusal = {'RESULT_TOO_LARGE'}
  elseif audit and not audit_count(tonumber(ARGV[17])) then
    -- The slot's count takes this call's event and its completion's
    -- ahead; past the bound it is given them back, and the begin refused.
    refusal = {'AUDIT_BACKLOG'}
  end
end

if not refusal then
  local t = redis.call('TIME')
  local us = t[2]
  local snow = t[1] .. sub(string.rep('0', 6 - len(us)) .. us, 1, 3)
  local now = tonumber(snow)
  local ttl = tonumber(ARGV[10])
  -- One absolute expiry for the record and every key that covers it, from
  -- one clock read.
  local expires = now + ttl
  local slease = format('%013d', now + tonumber(ARGV[11]))
  local sexpires = format('%013d', expires)
  local gen = sub(ident or ARGV[14], PRINCIPAL_LEN + 1, PRINCIPAL_LEN + GEN_LEN)
  -- The header Go encoded, with the server's clock, the run's generation
  -- and its limits of a record's bytes written between its parts, and the
  -- request when it is short. HSETNX makes the record, or finds one.
  if redis.call('HSETNX', KEYS[1], HEADER, ARGV[3] .. snow .. snow .. slease .. sexpires .. gen .. ARGV[4] ..
      sub(lim, 34) .. ARGV[5] .. ARGV[6]) == 1 then
    -- A key HSETNX did not make has an expiry already (every key of every
    -- layout does): a hash of another layout, without a header. The header
    -- is taken back, and the hash kept as it was.
    if redis.call('PEXPIREAT', KEYS[1], sexpires, 'NX') == 0 then
      redis.call('HDEL', KEYS[1], HEADER)
      if audit then
        redis.call('DECRBY', AUDIT_COUNT, 2)
      end
      return {'LAYOUT_MISMATCH'}
    end
    if ARGV[7] ~= '' then
      if ARGV[8] == '' then
        redis.call('HSET', KEYS[1], REQ, ARGV[7])
      elseif ARGV[9] == '' then
        redis.call('HSET', KEYS[1], REQ, ARGV[7], REQ_2, ARGV[8])
      else
        redis.call('HSET', KEYS[1], REQ, ARGV[7], REQ_2, ARGV[8], REQ_3, ARGV[9])
      end
    end

    -- The counters are the ones read above, in this script: one HSET
    -- writes them (and a run's first begin, its layout, limits, identity).
    local counts = {'calls', format('%d', calls + 1), tool_field, format('%d', count + 1), 'room', format('%d', room - size)}
    if not state then
      counts[7], counts[8] = RUN_LAYOUT_FIELD, RUN_LAYOUT .. ' ' .. lim
      counts[9], counts[10] = RUN_IDENT_FIELD, ARGV[14]
      counts[11], counts[12] = 'state', 'open'
      counts[13], counts[14] = 'created_ms', snow
    end
    -- The event's sequence number is the state's, written with its
    -- counters. A state with an owner has no stream but its generation's.
    local seq = tonumber(run[9] or '0') + 1
    if audit then
      counts[#counts + 1] = 'aseq'
      counts[#counts + 1] = format('%d', seq)
    end
    -- The run's state, calls and live marker must outlive every record they
    -- count, and expire together: at the absolute time the state keeps in
    -- its field "exp". When the new record expires later, all three are
    -- set to its expiry and a granule more (a sixteenth of its TTL, at most
    -- a second), so that the begins of the next granule find them covering
    -- already and write none of them; the first begin of a run sets them
    -- all. The calls keep a member of their own ("~", scored +inf) that no
    -- call removes, so that they are never deleted while the run lives and
    -- a ZADD that makes them (2 added) tells they were lost.
    local sexp = run[7]
    local extend = not state or tonumber(sexp) < expires
    if extend then
      sexp = format('%d', math.max(tonumber(sexp or '0'), expires + math.min(math.floor(ttl / 16), 1000)))
      counts[#counts + 1] = 'exp'
      counts[#counts + 1] = sexp
    end
    -- The run enters its slot's due set at this lease when it is not there
    -- at an earlier time already (a later lease of the run is found through
    -- the earliest one: the reaper moves the run on when it comes).
    local due = not run[8] or slease < run[8]
    if due then
      counts[#counts + 1] = 'due'
      counts[#counts + 1] = slease
    end
    if #counts == 6 then
      redis.call('HSET', KEYS[2], counts[1], counts[2], counts[3], counts[4], counts[5], counts[6])
    else
      redis.call('HSET', KEYS[2], unpack(counts))
    end
    if audit then
      audit_append(ARGV[15], seq, gen, snow, 'B ' .. ARGV[16], 0)
    end
    local added = redis.call('ZADD', KEYS[3], slease, ARGV[1], 'inf', '~')
    if extend then
      redis.call('PEXPIREAT', KEYS[2], sexp)
      redis.call('PEXPIREAT', KEYS[3], sexp)
      -- The marker holds the run's generation; setting it with its expiry
      -- is one command.
      redis.call('SET', KEYS[4], gen, 'PXAT', sexp)
      -- A chain head with nothing pending lives as long as the run's state
      -- (a later event continues it); pending events keep their longer life.
      if audit then
        redis.call('PEXPIREAT', AUDIT_EVENTS, sexp, 'GT')
      end
    elseif added == 2 then
      -- The calls were lost, and made again by this ZADD.
      redis.call('PEXPIREAT', KEYS[3], sexp)
    end
    if due then
      redis.call('ZADD', KEYS[5], slease, ARGV[15])
    end
    -- The due set lives as long as the runs in it: extended as their keys
    -- are.
    if (due or extend and run[8]) and redis.call('PEXPIREAT', KEYS[5], sexp, 'GT') == 0 then
      redis.call('PEXPIREAT', KEYS[5], sexp, 'NX')
    end
    return {'OK', now, lim, sub(ident or ARGV[14], PRINCIPAL_LEN + GEN_LEN + 1)}
  end
  -- The id is taken: the count the call took ahead is given back.
  if audit then
    redis.call('DECRBY', AUDIT_COUNT, 2)
  end
end

-- A refusal, or the id is taken: a record under the id answers first.
local m = redis.call('HGET', KEYS[1], HEADER)
if not m then
  -- A hash under the record's key without a header of this layout is no
  -- record this layout wrote: never write over it.
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return {'LAYOUT_MISMATCH'}
  end
  return refusal
end
if sub(m, H_VERSION, H_VERSION) ~= LAYOUT then
  return {'LAYOUT_MISMATCH'}
end
local same = sub(m, H_ID_TAG, H_MAX_RESULT - 1) == ARGV[4]
if same and sub(m, H_OWNER, H_OWNER + len(ARGV[5]) - 1) == ARGV[5] then
  redis.call('HSET', KEYS[1], HEADER, m)
  local res = redis.call('HMGET', KEYS[1], RES, RES_2, RES_3)
  local secret = ''
  if ident then
    secret = sub(ident, PRINCIPAL_LEN + GEN_LEN + 1)
  end
  return {'EXISTS', m, redis.call('PTTL', KEYS[1]), res[1] or '',
    res[2] or '', res[3] or '', limits or '', secret}
end
-- A record while the run's state has no limits: the state is lost (it
-- outlives every record it counts), and with it the run's owner. Refused
-- as lost to every principal, before telling whether the id is taken.
if not limits or limits == '' then
  return {'RUN_INACTIVE', 'lost'}
end
if sub(m, H_STATUS, H_STATUS) == PROJECTING then
  return {'TOOL_CALL_IN_PROGRESS'}
end
-- The same request and tool (the owner holds no space, so the tool is what
-- follows the last space before the header's newline).
local e = find(m, '\n', H_OWNER, true)
if same and e and sub(m, e - len(ARGV[2]) - 1, e) == ' ' .. ARGV[2] .. '\n' then
  redis.call('HSET', KEYS[1], HEADER, m)
  if audit then
    -- A replay is an event of the state's stream (the state has its owner:
    -- a lost one was refused above).
    local t = redis.call('TIME')
    local seq = redis.call('HINCRBY', KEYS[2], 'aseq', 1)
    audit_append(ARGV[15], seq, sub(ident, PRINCIPAL_LEN + 1, PRINCIPAL_LEN + GEN_LEN),
      t[1] .. sub(string.rep('0', 6 - len(t[2])) .. t[2], 1, 3), 'R ' .. ARGV[16], 1)
  end
  local res = redis.call('HMGET', KEYS[1], RES, RES_2, RES_3)
  return {'REPLAYABLE', m, redis.call('PTTL', KEYS[1]), res[1] or '', res[2] or '', res[3] or ''}
end
return {'DUPLICATE_TOOL_CALL'}
