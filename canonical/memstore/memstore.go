// Package memstore is the canonical Store in process memory: the embedded
// default, for single-process hosts, demos and unit tests of other packages.
//
// It has the semantics of the Redis store — the same lifecycle, run limits,
// leases, TTLs, completion index and errors, and the same fields in every
// reply — with an injectable clock so tests can move time. Time has
// millisecond resolution, as on Redis. What Redis keeps in five keys per run
// (record, run state, completion index, leases, live marker) memstore keeps
// in five maps, each entry with its own expiry, so that the two stores
// expire alike and a lost run state is detected alike.
//
// The state is split into shards by run, as a run is one hash slot on
// Redis: every call touches one run, so it takes one shard's lock, and calls
// on runs of different shards never wait for each other. Each shard orders
// its entries by deadline in a min-heap; writes drop expired entries from
// its top in bounded batches, so no call ever waits for a pass over the
// store. Payloads are copied outside every lock: a stored payload is never
// written again, so a reply can copy it after the lock is released.
//
// Options are functional (WithClock, WithDefaultTTL, ...): a store in memory
// has nothing to dial, so there is no address-bearing Options struct as in
// redisstore.
package memstore

import (
	"bytes"
	"context"
	"hash/maphash"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/internal/storeimpl"
	layout "github.com/toolcanon/toolcanon/internal/record"
)

// DefaultClosedRunRetention is how long a closed run stays closed at least
// when WithClosedRunRetention is not given.
const DefaultClosedRunRetention = 24 * time.Hour

// Option configures a Store.
type Option func(*Store)

// WithClock makes the store read time from now (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithDefaultTTL sets the TTL used by a Begin whose TTL is zero (default:
// none, every Begin must give one), rounded up to whole milliseconds.
func WithDefaultTTL(d time.Duration) Option { return func(s *Store) { s.ttl = wholeMs(d) } }

// wholeMs rounds a positive duration up to whole milliseconds, the unit
// the store keeps time in, so that no expiry under 1ms is read as 0 (at
// once), as redisstore refuses one.
func wholeMs(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}

// WithClosedRunRetention sets how long a closed run stays closed at least,
// whatever its records' TTLs (default DefaultClosedRunRetention; d <= 0
// keeps the default), rounded up to whole milliseconds, and at most
// canonical.MaxTTL.
func WithClosedRunRetention(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.retention = wholeMs(min(d, canonical.MaxTTL))
		}
	}
}

// DefaultMaxRuns is how many runs a Store holds at most when WithMaxRuns
// is not given.
const DefaultMaxRuns = 1 << 20

// WithMaxRuns bounds the runs the store holds (default DefaultMaxRuns;
// n <= 0 keeps the default). A Begin that would create one more run state
// is refused with STORE_FULL until runs expire; calls of runs the store
// already holds go on. Expired runs are dropped first, a bounded batch per
// shard, so a full store is one of live runs.
func WithMaxRuns(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.maxRuns = int64(n)
		}
	}
}

// WithMaxRunsPerPrincipal bounds the live runs one principal owns (default:
// no bound but WithMaxRuns; n <= 0 keeps the default), so that no principal
// can fill the store for the others: a Begin that would create one more
// run for a principal that owns n already is refused with STORE_FULL until
// one of its runs expires. Other principals' runs go on being created.
func WithMaxRunsPerPrincipal(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.maxOwned = int64(n)
		}
	}
}

// Store is the canonical Store in memory. It is safe for concurrent use.
type Store struct {
	now       func() time.Time
	ttl       time.Duration
	retention time.Duration
	maxRuns   int64
	maxOwned  int64        // live runs one principal may own; 0: no bound but maxRuns
	runs      atomic.Int64 // run states held, over every shard
	owned     owners       // live run states by owner
	seed      maphash.Seed
	gens      atomic.Uint64 // the last run generation handed out
	reapLease atomic.Int64  // when the reap lease taken last ends, ms (ReapOptions.Every)
	shards    [shardCount]shard
	// audit is the audit stream's state (nil: off); pendingEvents counts
	// the events waiting for export over every shard.
	audit         *auditState
	pendingEvents atomic.Int64
}

// full reports whether a new run state may not be created, after dropping
// a bounded batch of what has expired in every shard. sh is locked.
func (s *Store) full(sh *shard, now int64) bool {
	if s.runs.Load() < s.maxRuns {
		return false
	}
	sh.expire(now, sweepBatch)
	for i := range s.shards {
		if &s.shards[i] != sh {
			s.visit(i)
		}
	}
	return s.runs.Load() >= s.maxRuns
}

// errFull is the refusal of a new run by a full store.
func errFull(op string, max int64) error {
	return canonical.Errorf(canonical.CodeStoreFull, "%s: the store holds %d runs, its maximum (memstore.WithMaxRuns)", op, max)
}

// shareFull reports whether the principal of tag may not own one more
// run, after dropping a bounded batch of what has expired in every shard
// (as full does). sh is locked.
func (s *Store) shareFull(sh *shard, tag string, now int64) bool {
	if s.maxOwned == 0 || s.owned.count(tag) < s.maxOwned {
		return false
	}
	sh.expire(now, sweepBatch)
	for i := range s.shards {
		if &s.shards[i] != sh {
			s.visit(i)
		}
	}
	return s.owned.count(tag) >= s.maxOwned
}

type recordKey struct{ run, id string }

type record struct {
	expiry
	rec      canonical.Record // TTL and Limits unused here; computed on read
	cdigest  string           // digest of the completion made, abandoned and the claim after Abandon
	overflow bool
	gen      uint64   // generation of the run state the call was counted in
	input    *waiting // set while the call waits (or waited) for the agent's input
}

// runState is what Redis keeps in the run's HASH.
type runState struct {
	expiry
	calls, bytes  int64
	toolCalls     map[string]int64
	limits        canonical.Limits // valid when hasLimits: fixed by the run's first Begin
	hasLimits     bool
	closed, lost  bool
	gen           uint64 // set with the limits by the run's first Begin
	createdMillis int64
	protocol      canonical.ProtocolState
	principal     string            // the owner's canonical.PrincipalTag; "" before the run has one
	secret        string            // the key of the run's handles, fixed by the first Begin that finds none
	handles       map[string]string // the run's handle index: handle id -> the call whose result minted it
	agen          string            // the audit stream's generation, fixed by the state's first event
	aseq          int64             // the audit stream's last sequence number
}

// forbids reports whether the run belongs to a principal other than the one
// of tag.
func (r *runState) forbids(tag string) bool {
	return r != nil && r.principal != "" && r.principal != tag
}

// index names call as the source of each handle id in the run's handle
// index.
func (r *runState) index(ids []string, call string) {
	if len(ids) > 0 && r.handles == nil {
		r.handles = make(map[string]string, len(ids))
	}
	for _, id := range ids {
		r.handles[id] = call
	}
}

// claim makes tag the owner of run r when it has none, counting it in the
// owner's share.
func (sh *shard) claim(r *runState, tag string) {
	if r.principal == "" {
		r.principal = tag
		sh.owned.add(tag, 1)
	}
}

// disown takes r's owner away, as a lost run has none.
func (sh *shard) disown(r *runState) {
	if r.principal != "" {
		sh.owned.add(r.principal, -1)
		r.principal = ""
	}
}

// index is the run's completion index (on Redis, the finished members of
// the run's calls, a ZSET): each id at most once, at its latest
// completion; an id begun again leaves it until it finishes again.
type index struct {
	expiry
	ids []string        // in completion order
	in  map[string]bool // the ids in ids
}

// leaseSet is the run's PROJECTING calls by lease deadline (a ZSET on Redis).
type leaseSet struct {
	expiry
	until map[string]int64
}

// marker is the run's live marker (a STRING on Redis): the run has begun
// calls. It expires with the run's state, never later, so a marker without
// a state proves the state was lost.
type marker struct {
	expiry
}

// abandoned starts the completion digest of a record closed by Abandon,
// followed by the abandon's claim; no completion digest starts with it.
const abandoned = "abandoned:"

// newClaim returns a claim for one Abandon, or one reap pass.
func newClaim() string { return canonical.NewOwner()[:10] }

var (
	_ canonical.Store            = (*Store)(nil)
	_ canonical.ProgressObserver = (*Store)(nil)
	_ canonical.DefaultTTLer     = (*Store)(nil)
	_ canonical.HandleIndex      = (*Store)(nil)
	_ canonical.OwnedReader      = (*Store)(nil)
)

// New returns an empty Store.
func New(opts ...Option) *Store {
	s := &Store{now: time.Now, retention: DefaultClosedRunRetention, maxRuns: DefaultMaxRuns, seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].init()
		s.shards[i].runCount, s.shards[i].owned = &s.runs, &s.owned
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// DefaultTTL implements canonical.DefaultTTLer: the TTL of WithDefaultTTL,
// 0 when none was given.
func (s *Store) DefaultTTL() time.Duration { return s.ttl }

func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

// shardOf returns the index of the shard that holds a run.
func (s *Store) shardOf(runID string) int {
	return int(maphash.String(s.seed, runID) & (shardCount - 1))
}

// lock locks the shard of a run, reads the time, and drops a bounded batch
// of what has expired in the shard before a write.
func (s *Store) lock(runID string) (*shard, int64) {
	sh, now := s.lockForRead(runID)
	sh.expire(now, expireBatch)
	return sh, now
}

// lockForRead locks the shard of a run for a read and reads the time. A read
// runs no expiry pass: it drops only the expired entries it looks up.
func (s *Store) lockForRead(runID string) (*shard, int64) {
	sh := &s.shards[s.shardOf(runID)]
	sh.mu.Lock()
	return sh, s.nowMs()
}

// visit drops a bounded batch of what has expired in shard i, unless its
// lock is held: a caller never waits for another shard.
func (s *Store) visit(i int) {
	sh := &s.shards[i]
	if sh.mu.TryLock() {
		sh.expire(s.nowMs(), sweepBatch)
		sh.mu.Unlock()
	}
}

// Begin implements canonical.Store.
func (s *Store) Begin(ctx context.Context, req canonical.BeginRequest) (canonical.Record, error) {
	a, err := storeimpl.ValidateBegin(&req, s.ttl)
	if err != nil {
		return canonical.Record{}, err
	}
	if err := ctx.Err(); err != nil {
		return canonical.Record{}, canonical.Wrap(canonical.CodeStoreUnavailable, err, "begin")
	}
	// Hashed, copied and allocated outside the lock; a refused Begin drops
	// them.
	rec := &record{rec: canonical.Record{
		RunID: req.RunID, ToolCallID: req.ToolCallID, Tool: req.Tool, Owner: req.Owner,
		Status: canonical.StatusProjecting, Evidence: canonical.EvidenceUnknown,
		Request: bytes.Clone(req.Request), RequestDigest: canonical.RequestDigest(req.Request),
	}}
	var ac *auditCall
	if s.auditOn() {
		if s.audit.err != nil {
			return canonical.Record{}, s.audit.err
		}
		ac = &auditCall{trace: canonical.TraceOf(ctx), request: s.audit.opts.Digest(req.Request), requestLen: int64(len(req.Request))}
	}
	out, visit, err := s.begin(req, a, rec, ac)
	if visit >= 0 {
		s.visit(visit)
	}
	if err != nil {
		return canonical.Record{}, err
	}
	detach(&out)
	return out, nil
}

// begin is Begin under the run's shard lock; rec is the record to store,
// without its times. It returns the record with payloads still shared with
// the store, and the shard to visit after the lock is released (-1: none).
func (s *Store) begin(req canonical.BeginRequest, a storeimpl.BeginArgs, rec *record, ac *auditCall) (canonical.Record, int, error) {
	digest := rec.rec.RequestDigest
	tag := canonical.PrincipalTag(req.Principal)
	sh, now := s.lock(req.RunID)
	defer sh.mu.Unlock()
	// The run's state in one read; its owner first: another principal
	// learns nothing, not even whether the call id is taken.
	r := sh.liveRun(req.RunID, now)
	if r.forbids(tag) {
		return canonical.Record{}, -1, &canonical.Error{Code: canonical.CodeRunForbidden, Msg: "begin"}
	}
	k := recordKey{req.RunID, req.ToolCallID}
	if cur := sh.liveRecord(k, now); cur != nil {
		if cur.rec.Owner == req.Owner && cur.rec.Tool == req.Tool && cur.rec.RequestDigest == digest {
			out := snapshot(cur, now, true, false)
			if r != nil && r.hasLimits {
				out.Limits = r.limits
			}
			if r != nil && r.secret != "" {
				out.RunSecret = []byte(r.secret)
			}
			return out, -1, nil
		}
		// A record while the run's state has no limits: the state is lost
		// (it outlives every record it counts), and with it the run's
		// owner. Refused as lost to every principal, before telling whether
		// the id is taken.
		if r == nil || !r.hasLimits {
			return canonical.Record{}, -1, canonical.Errorf(canonical.CodeRunInactive, "begin: the run is lost")
		}
		if cur.rec.Status == canonical.StatusProjecting {
			return canonical.Record{}, -1, &canonical.Error{Code: canonical.CodeToolCallInProgress, Msg: "begin"}
		}
		if cur.rec.Tool == req.Tool && cur.rec.RequestDigest == digest {
			// A finished call of the same tool and request: the record, for
			// a host that replays duplicates (its payloads copied by detach).
			if ac != nil {
				s.appendEvent(sh, r, s.callEvent(canonical.AuditReplay, req, tag, ac), now)
			}
			first := snapshot(cur, now, false, false)
			detach(&first)
			return canonical.Record{}, -1, &canonical.Error{Code: canonical.CodeDuplicateToolCall, Msg: "begin",
				Err: &canonical.Replayable{Record: first}}
		}
		return canonical.Record{}, -1, &canonical.Error{Code: canonical.CodeDuplicateToolCall, Msg: "begin"}
	}
	switch {
	case r != nil && r.lost:
		return canonical.Record{}, -1, canonical.Errorf(canonical.CodeRunInactive, "begin: the run is lost")
	case r != nil && r.closed:
		return canonical.Record{}, -1, canonical.Errorf(canonical.CodeRunInactive, "begin: the run is closed")
	}
	lim := a.NewRun
	if r != nil && r.hasLimits {
		if f := a.Limits.Conflict(r.limits); f != "" {
			return canonical.Record{}, -1, canonical.Errorf(canonical.CodeInvalidArgument, "begin: limit %s differs from the run's", f)
		}
		lim = r.limits
	} else if sh.begun(req.RunID, now) {
		return canonical.Record{}, -1, canonical.Errorf(canonical.CodeRunInactive, "begin: the run is lost")
	}
	if r == nil && s.full(sh, now) {
		return canonical.Record{}, -1, errFull("begin", s.maxRuns)
	}
	if r == nil && s.shareFull(sh, tag, now) {
		return canonical.Record{}, -1, canonical.Errorf(canonical.CodeStoreFull,
			"begin: the principal owns %d live runs, its share (memstore.WithMaxRunsPerPrincipal)", s.maxOwned)
	}
	var calls, toolCalls, bytesUsed int64
	if r != nil {
		calls, toolCalls, bytesUsed = r.calls, r.toolCalls[req.Tool], r.bytes
	}
	if ac != nil && s.backlogFull() {
		return canonical.Record{}, -1, errBacklog(s.audit.opts.MaxBacklog)
	}
	size := int64(len(req.Request))
	switch {
	case calls >= lim.MaxCallsPerRun || toolCalls >= lim.MaxCallsPerTool:
		return canonical.Record{}, -1, &canonical.Error{Code: canonical.CodeBudgetExhausted, Msg: "begin"}
	case size > lim.MaxRecordBytes || bytesUsed+size > lim.MaxRunBytes:
		return canonical.Record{}, -1, &canonical.Error{Code: canonical.CodeResultTooLarge, Msg: "begin"}
	}

	ttl := a.TTL.Milliseconds()
	rec.rec.CreatedAt, rec.rec.UpdatedAt = time.UnixMilli(now), time.UnixMilli(now)
	rec.rec.LeaseUntil = time.UnixMilli(now + a.Lease.Milliseconds())
	rec.expires = now + ttl
	sh.records[k] = rec
	sh.track(&rec.expiry, kindRecord, req.RunID, req.ToolCallID)
	// The run's state, leases and live marker must outlive every record
	// they count, and expire together.
	if r == nil {
		r = sh.newRun(req.RunID, now, rec.expires)
	} else if r.expires < rec.expires {
		r.expires = rec.expires
	}
	r.calls++
	r.toolCalls[req.Tool]++
	r.bytes += size
	if !r.hasLimits {
		r.limits, r.hasLimits, r.gen = lim, true, s.gens.Add(1)
	}
	rec.gen = r.gen
	if r.secret == "" {
		r.secret = layout.NewRunSecret()
	}
	sh.claim(r, tag)
	l := sh.liveLeases(req.RunID, now)
	if l == nil {
		l = sh.newLeases(req.RunID, rec.expires)
	} else if l.expires < rec.expires {
		l.expires = rec.expires
	}
	l.until[req.ToolCallID] = rec.rec.LeaseUntil.UnixMilli()
	// An id begun again (its record expired) is in flight, not finished:
	// on Redis the call's one member in the run's calls moves.
	sh.dropFromIndex(req.RunID, req.ToolCallID, now)
	sh.cover(req.RunID, rec.expires, now)
	if ac != nil {
		s.appendEvent(sh, r, s.callEvent(canonical.AuditBegin, req, tag, ac), now)
	}
	out := snapshot(rec, now, true, false)
	out.Limits, out.RunSecret = lim, []byte(r.secret)
	visit := -1
	if sh.begins++; sh.begins%sweepEvery == 0 {
		self := s.shardOf(req.RunID)
		visit = (self + 1 + int(sh.begins/sweepEvery)%(shardCount-1)) % shardCount
	}
	return out, visit, nil
}

// Complete implements canonical.Store.
func (s *Store) Complete(ctx context.Context, c canonical.Completion) (canonical.Record, error) {
	if c.Status == canonical.StatusError && c.Evidence == "" {
		c.Evidence = canonical.EvidenceError
	}
	if err := c.Validate(); err != nil {
		return canonical.Record{}, err
	}
	if err := ctx.Err(); err != nil {
		return canonical.Record{}, canonical.Wrap(canonical.CodeStoreUnavailable, err, "complete")
	}
	// Hashed and copied outside the lock; a refused completion drops the copies.
	digest := c.Digest()
	raw, result := bytes.Clone(c.Raw), []byte(nil)
	if c.Status == canonical.StatusReady {
		result = bytes.Clone(c.Result)
	}
	var ac *auditCall
	if s.auditOn() {
		ac = &auditCall{trace: canonical.TraceOf(ctx), raw: s.audit.opts.Digest(c.Raw), result: s.audit.opts.Digest(c.Result),
			rawLen: int64(len(c.Raw)), resultLen: int64(len(c.Result))}
	}
	out, overflow, err := s.complete(c, digest, raw, result, ac)
	if err != nil {
		return canonical.Record{}, err
	}
	detach(&out)
	// out.RawLen is the stored raw response's length already: FinishCompletion
	// sets it only from a completion whose raw response is the one stored.
	return storeimpl.FinishCompletion(out, c, overflow)
}

// complete is Complete under the run's shard lock. It returns the record
// with payloads still shared with the store, and whether the completion
// overflowed the run's limits.
func (s *Store) complete(c canonical.Completion, digest string, raw, result []byte, ac *auditCall) (canonical.Record, bool, error) {
	sh, now := s.lock(c.RunID)
	defer sh.mu.Unlock()
	cur := sh.liveRecord(recordKey{c.RunID, c.ToolCallID}, now)
	if cur == nil {
		return canonical.Record{}, false, &canonical.Error{Code: canonical.CodeNotFound, Msg: "complete"}
	}
	if cur.rec.Owner != c.Owner {
		return canonical.Record{}, false, canonical.Errorf(canonical.CodeInvalidTransition, "complete: record is %s or owned by another invocation", cur.rec.Status)
	}
	if cur.rec.Status != canonical.StatusProjecting {
		if cur.cdigest == digest {
			return snapshot(cur, now, false, false), cur.overflow, nil
		}
		return canonical.Record{}, false, canonical.Errorf(canonical.CodeInvalidTransition, "complete: record is %s or owned by another invocation", cur.rec.Status)
	}

	rawLen, resultLen := int64(len(c.Raw)), int64(len(c.Result))
	r := sh.liveRun(c.RunID, now)
	if r == nil || !r.hasLimits || cur.gen != 0 && r.gen != cur.gen {
		// The run's state is gone while its record lives, or is a new one a
		// Begin made after it was lost: record the outcome all the same, and
		// mark the run lost and closed, so that its budgets never silently
		// start again from zero.
		if r == nil {
			r = sh.newRun(c.RunID, now, cur.expires)
		} else if r.expires < cur.expires {
			r.expires = cur.expires
		}
		if r.hasLimits {
			// Another generation's state: its owner restarted a run it
			// could not know was lost, and is not this record's. The state
			// becomes what a lost one is, with no owner and no limits, so
			// that nobody reads the run from now on, nor claims it.
			sh.disown(r)
			r.hasLimits, r.limits, r.gen, r.secret = false, canonical.Limits{}, 0, ""
		}
		r.closed, r.lost = true, true
	} else if resultLen > r.limits.MaxResultBytes || int64(len(cur.rec.Request))+rawLen+resultLen > r.limits.MaxRecordBytes ||
		r.bytes+rawLen+resultLen > r.limits.MaxRunBytes {
		cur.overflow = true // never truncate: refuse the payload and record why
	}
	cur.cdigest = digest
	cur.rec.UpdatedAt = time.UnixMilli(now)
	if cur.overflow {
		cur.rec.Status, cur.rec.Evidence, cur.rec.Error = canonical.StatusError, canonical.EvidenceError, canonical.CodeResultTooLarge
	} else {
		cur.rec.Status, cur.rec.Evidence, cur.rec.Error = c.Status, c.Evidence, c.Code
		cur.rec.Raw = raw
		r.bytes += rawLen
		if c.Status == canonical.StatusReady {
			cur.rec.Result = result
			r.bytes += resultLen
			r.index(c.Handles, c.ToolCallID)
		}
	}
	sh.dropLease(c.RunID, c.ToolCallID, now)
	sh.appendIndex(c.RunID, c.ToolCallID, cur.expires, now)
	if ac != nil {
		s.appendEvent(sh, r, completeEvent(c, cur, ac), now)
	}
	return snapshot(cur, now, false, false), cur.overflow, nil
}

// Abandon implements canonical.Store.
func (s *Store) Abandon(ctx context.Context, runID, toolCallID string) (canonical.Record, error) {
	if err := canonical.ValidateRead(runID, []string{toolCallID}); err != nil {
		return canonical.Record{}, err
	}
	if err := ctx.Err(); err != nil {
		return canonical.Record{}, canonical.Wrap(canonical.CodeStoreUnavailable, err, "abandon")
	}
	out, _, err := s.abandon(runID, toolCallID, newClaim())
	if err != nil {
		return canonical.Record{}, err
	}
	detach(&out)
	return out, nil
}

// abandon is Abandon under the run's shard lock; the record it returns
// shares its payloads with the store. fresh is true when the record was
// abandoned under claim (by this call, or an earlier one with the same
// claim), false when under another.
func (s *Store) abandon(runID, toolCallID, claim string) (_ canonical.Record, fresh bool, _ error) {
	sh, now := s.lock(runID)
	defer sh.mu.Unlock()
	cur := sh.liveRecord(recordKey{runID, toolCallID}, now)
	if cur == nil {
		sh.dropLease(runID, toolCallID, now)
		return canonical.Record{}, false, &canonical.Error{Code: canonical.CodeNotFound, Msg: "abandon"}
	}
	if cur.rec.Status != canonical.StatusProjecting {
		if strings.HasPrefix(cur.cdigest, abandoned) {
			return snapshot(cur, now, false, false), cur.cdigest == abandoned+claim, nil
		}
		return canonical.Record{}, false, canonical.Errorf(canonical.CodeInvalidTransition, "abandon: record is %s", cur.rec.Status)
	}
	if lease := cur.rec.LeaseUntil.UnixMilli(); now < lease {
		return canonical.Record{}, false, canonical.Errorf(canonical.CodeInvalidTransition, "abandon: the lease runs for %v more",
			time.Duration(lease-now)*time.Millisecond)
	}
	cur.rec.Status, cur.rec.Evidence, cur.rec.Error = canonical.StatusError, canonical.EvidenceError, canonical.CodeExecutionAbandoned
	cur.rec.UpdatedAt = time.UnixMilli(now)
	cur.cdigest = abandoned + claim
	sh.dropLease(runID, toolCallID, now)
	sh.appendIndex(runID, toolCallID, cur.expires, now)
	if s.auditOn() {
		s.appendEvent(sh, sh.streamRun(runID, cur.expires, now), canonical.AuditEvent{RunID: runID, ToolCallID: toolCallID,
			Type: canonical.AuditAbandon, Status: canonical.StatusError, Evidence: canonical.EvidenceError,
			Code: canonical.CodeExecutionAbandoned}, now)
	}
	return snapshot(cur, now, false, false), true, nil
}

// lease is a PROJECTING call by its lease deadline.
type lease struct {
	id    string
	until int64
}

// ExpiredLeases implements canonical.Store.
func (s *Store) ExpiredLeases(ctx context.Context, runID string, max int) ([]string, error) {
	if err := enter(ctx, runID, "read leases"); err != nil {
		return nil, err
	}
	if err := canonical.ValidateMax(max); err != nil {
		return nil, err
	}
	passed := s.passedLeases(runID)
	// The order of a Redis ZSET: by score, then by member.
	sort.Slice(passed, func(i, j int) bool {
		if passed[i].until != passed[j].until {
			return passed[i].until < passed[j].until
		}
		return passed[i].id < passed[j].id
	})
	ids := make([]string, 0, min(len(passed), max))
	for _, p := range passed[:min(len(passed), max)] {
		ids = append(ids, p.id)
	}
	return ids, nil
}

// passedLeases returns the run's leases that have passed, in no order.
func (s *Store) passedLeases(runID string) []lease {
	sh, now := s.lockForRead(runID)
	defer sh.mu.Unlock()
	var passed []lease
	if l := sh.liveLeases(runID, now); l != nil {
		for id, until := range l.until {
			if until <= now {
				passed = append(passed, lease{id, until})
			}
		}
	}
	return passed
}

// snapshot copies a record out for a caller under its shard's lock. Large
// fields are kept only when asked for, and still share the store's memory:
// a stored payload is never written again, so detach copies them after the
// lock is released.
func snapshot(r *record, now int64, withRequest, withRaw bool) canonical.Record {
	out := r.rec
	out.TTL = time.Duration(r.expires-now) * time.Millisecond
	out.RequestLen, out.RawLen = len(r.rec.Request), len(r.rec.Raw)
	if !withRequest {
		out.Request = nil
	}
	if !withRaw {
		out.Raw = nil
	}
	return out
}

// detach copies a snapshot's payloads, so that callers never share the
// store's memory.
func detach(r *canonical.Record) {
	r.Request, r.Raw, r.Result = bytes.Clone(r.Request), bytes.Clone(r.Raw), bytes.Clone(r.Result)
}

// Get implements canonical.Store.
func (s *Store) Get(ctx context.Context, runID, toolCallID string) (canonical.Record, error) {
	recs, err := s.GetMany(ctx, runID, []string{toolCallID}, canonical.ReadOptions{Request: true, Raw: true})
	if err != nil {
		return canonical.Record{}, err
	}
	if recs[0] == nil {
		return canonical.Record{}, canonical.Errorf(canonical.CodeNotFound, "no record %s in run %s", toolCallID, runID)
	}
	return *recs[0], nil
}

// GetMany implements canonical.Store.
func (s *Store) GetMany(ctx context.Context, runID string, ids []string, opts canonical.ReadOptions) ([]*canonical.Record, error) {
	if err := canonical.ValidateRead(runID, ids); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, canonical.Wrap(canonical.CodeStoreUnavailable, err, "read records")
	}
	out := make([]*canonical.Record, len(ids))
	s.getMany(runID, ids, opts, out)
	for _, r := range out {
		if r != nil {
			detach(r)
		}
	}
	return out, nil
}

// getMany fills out with snapshots of the live records of ids under the
// run's shard lock.
func (s *Store) getMany(runID string, ids []string, opts canonical.ReadOptions, out []*canonical.Record) {
	sh, now := s.lockForRead(runID)
	defer sh.mu.Unlock()
	for i, id := range ids {
		if r := sh.liveRecord(recordKey{runID, id}, now); r != nil {
			v := snapshot(r, now, opts.Request, opts.Raw)
			out[i] = &v
		}
	}
}

// Completed implements canonical.Store.
func (s *Store) Completed(ctx context.Context, runID string, limit int) ([]string, int, error) {
	if err := enter(ctx, runID, "read completion index"); err != nil {
		return nil, 0, err
	}
	if err := canonical.ValidateMax(limit); err != nil {
		return nil, 0, err
	}
	ids, n := s.completed(runID, limit)
	// The index is only ever appended to: its first ids never change, so
	// they are copied outside the lock.
	return append(make([]string, 0, len(ids)), ids...), n, nil
}

// completed returns the first limit ids of the run's completion index, still
// shared with the store, and the index's length.
func (s *Store) completed(runID string, limit int) ([]string, int) {
	sh, now := s.lockForRead(runID)
	defer sh.mu.Unlock()
	x := sh.liveIndex(runID, now)
	if x == nil {
		return nil, 0
	}
	n := min(limit, len(x.ids))
	return x.ids[:n:n], len(x.ids)
}

// CloseRun implements canonical.Store.
func (s *Store) CloseRun(ctx context.Context, runID, principal string) error {
	if err := enter(ctx, runID, "close run"); err != nil {
		return err
	}
	if err := canonical.ValidatePrincipal(principal); err != nil {
		return err
	}
	tag := canonical.PrincipalTag(principal)
	sh, now := s.lock(runID)
	defer sh.mu.Unlock()
	keep := now + s.retention.Milliseconds()
	r := sh.liveRun(runID, now)
	if r.forbids(tag) {
		return &canonical.Error{Code: canonical.CodeRunForbidden, Msg: "close run"}
	}
	if r == nil {
		// Nobody began it (or its state is lost): a close claims no run.
		return canonical.Errorf(canonical.CodeNotFound, "close run: run %s has no state", runID)
	}
	if r.expires < keep {
		r.expires = keep
	}
	if s.auditOn() && !r.closed {
		s.appendEvent(sh, r, canonical.AuditEvent{RunID: runID, Type: canonical.AuditClose, Principal: tag}, now)
	}
	r.closed = true
	// A begun run's live marker expires with its state.
	if m := sh.liveMarker(runID, now); m != nil && m.expires < r.expires {
		m.expires = r.expires
	}
	return nil
}

// Usage implements canonical.Store.
func (s *Store) Usage(ctx context.Context, runID string) (canonical.RunUsage, error) {
	if err := enter(ctx, runID, "read run"); err != nil {
		return canonical.RunUsage{}, err
	}
	sh, now := s.lockForRead(runID)
	defer sh.mu.Unlock()
	return sh.usage(runID, now)
}

// usage is Usage under the run's shard lock.
func (sh *shard) usage(runID string, now int64) (canonical.RunUsage, error) {
	r := sh.liveRun(runID, now)
	// What Begin reads as a lost run: no limits while a key only a begun run
	// has lives.
	lost := (r == nil || !r.hasLimits) && sh.begun(runID, now)
	if r == nil {
		if !lost {
			return canonical.RunUsage{}, canonical.Errorf(canonical.CodeNotFound, "no state for run %s", runID)
		}
		r = &runState{}
	}
	u := canonical.RunUsage{
		RunID: runID, Calls: r.calls, Bytes: r.bytes, Closed: r.closed || lost, Lost: r.lost || lost,
		ToolCalls: make(map[string]int64, len(r.toolCalls)), Protocol: r.protocol,
	}
	if r.expires > now {
		u.TTL = time.Duration(r.expires-now) * time.Millisecond
	}
	if r.hasLimits {
		u.Limits = r.limits
	}
	if x := sh.liveIndex(runID, now); x != nil {
		u.Completed = int64(len(x.ids))
	}
	if l := sh.liveLeases(runID, now); l != nil {
		u.InFlight = int64(len(l.until))
	}
	for t, n := range r.toolCalls {
		u.ToolCalls[t] = n
	}
	return u, nil
}

// ObserveProgress implements canonical.ProgressObserver.
func (s *Store) ObserveProgress(ctx context.Context, runID, principal string, valid bool, threshold int64) (canonical.ProtocolState, error) {
	if err := canonical.ValidateRunID(runID); err != nil {
		return canonical.ProtocolState{}, err
	}
	if err := canonical.ValidatePrincipal(principal); err != nil {
		return canonical.ProtocolState{}, err
	}
	if threshold <= 0 {
		return canonical.ProtocolState{}, canonical.Errorf(canonical.CodeInvalidArgument, "progress threshold must be positive")
	}
	if err := ctx.Err(); err != nil {
		return canonical.ProtocolState{}, canonical.Wrap(canonical.CodeStoreUnavailable, err, "observe progress")
	}
	sh, now := s.lock(runID)
	defer sh.mu.Unlock()
	tag := canonical.PrincipalTag(principal)
	r := sh.liveRun(runID, now)
	if r.forbids(tag) {
		return canonical.ProtocolState{}, &canonical.Error{Code: canonical.CodeRunForbidden, Msg: "observe progress"}
	}
	if r == nil {
		// Nobody began it (or its state is lost): a report claims no run.
		return canonical.ProtocolState{}, canonical.Errorf(canonical.CodeNotFound, "observe progress: run %s has no state", runID)
	}
	if r.principal == "" {
		// A state without an owner is what a complete leaves after the
		// run's state was lost: counted nowhere, so that the counters do not
		// outlive the loss into the next run of the id.
		return canonical.ProtocolState{}, canonical.Errorf(canonical.CodeRunInactive, "observe progress: the run is lost")
	}
	p := &r.protocol
	p.Reports++
	if valid {
		p.Pending = 0
	} else {
		p.Pending++
		if p.Violations < threshold {
			p.Violations++
		}
	}
	if p.Violations >= threshold {
		p.Violated = true
	}
	return *p, nil
}

// CheckPrincipal implements canonical.Store.
func (s *Store) CheckPrincipal(ctx context.Context, runID, principal string) error {
	if err := enter(ctx, runID, "read run owner"); err != nil {
		return err
	}
	if err := canonical.ValidatePrincipal(principal); err != nil {
		return err
	}
	sh, now := s.lockForRead(runID)
	r := sh.liveRun(runID, now)
	owner := ""
	if r != nil {
		owner = r.principal
	}
	calls := sh.begun(runID, now)
	sh.mu.Unlock()
	return canonical.CheckOwner(owner, owner != "", calls, principal)
}

// HandleSources implements canonical.HandleIndex, checking the run's owner
// as CheckPrincipal does under the same lock.
func (s *Store) HandleSources(ctx context.Context, runID, principal string, ids []string) (canonical.HandleSources, error) {
	if err := storeimpl.ValidateHandleRead(runID, principal, ids); err != nil {
		return canonical.HandleSources{}, err
	}
	if err := ctx.Err(); err != nil {
		return canonical.HandleSources{}, canonical.Wrap(canonical.CodeStoreUnavailable, err, "read handles")
	}
	sh, now := s.lockForRead(runID)
	defer sh.mu.Unlock()
	r := sh.liveRun(runID, now)
	owner := ""
	if r != nil {
		owner = r.principal
	}
	if err := canonical.CheckOwner(owner, owner != "", sh.begun(runID, now), principal); err != nil {
		return canonical.HandleSources{}, err
	}
	out := canonical.HandleSources{Calls: make([]string, len(ids))}
	if r.secret != "" {
		out.RunSecret = []byte(r.secret)
	}
	for i, id := range ids {
		out.Calls[i] = r.handles[id]
	}
	return out, nil
}

// checkOwner is CheckPrincipal under the run's shard lock: the run's state
// (nil when none) and nil when principal may read the run.
func (sh *shard) checkOwner(runID, principal string, now int64) (*runState, error) {
	r := sh.liveRun(runID, now)
	owner := ""
	if r != nil {
		owner = r.principal
	}
	return r, canonical.CheckOwner(owner, owner != "", sh.begun(runID, now), principal)
}

// genOf is the generation of a run's state as OwnedReader names it: ""
// for none.
func genOf(r *runState) string {
	if r == nil || r.gen == 0 {
		return ""
	}
	return strconv.FormatUint(r.gen, 10)
}

// ReadIndex implements canonical.OwnedReader, under one lock.
func (s *Store) ReadIndex(ctx context.Context, runID, principal string, limit int) (canonical.RunIndex, error) {
	if err := enter(ctx, runID, "read completion index"); err != nil {
		return canonical.RunIndex{}, err
	}
	if err := canonical.ValidatePrincipal(principal); err != nil {
		return canonical.RunIndex{}, err
	}
	if err := canonical.ValidateMax(limit); err != nil {
		return canonical.RunIndex{}, err
	}
	sh, now := s.lockForRead(runID)
	r, err := sh.checkOwner(runID, principal, now)
	if err != nil {
		sh.mu.Unlock()
		return canonical.RunIndex{}, err
	}
	out := canonical.RunIndex{IDs: []string{}, Gen: genOf(r)}
	var ids []string
	if x := sh.liveIndex(runID, now); x != nil {
		n := min(limit, len(x.ids))
		ids, out.Length = x.ids[:n:n], len(x.ids)
	}
	sh.mu.Unlock()
	// The index is only ever appended to: its first ids are copied outside
	// the lock.
	out.IDs = append(out.IDs, ids...)
	return out, nil
}

// ReadRecords implements canonical.OwnedReader, under one lock.
func (s *Store) ReadRecords(ctx context.Context, runID, principal, gen string, ids []string, opts canonical.ReadOptions) ([]*canonical.Record, error) {
	if err := canonical.ValidateRead(runID, ids); err != nil {
		return nil, err
	}
	if err := canonical.ValidatePrincipal(principal); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, canonical.Wrap(canonical.CodeStoreUnavailable, err, "read records")
	}
	out := make([]*canonical.Record, len(ids))
	sh, now := s.lockForRead(runID)
	r, err := sh.checkOwner(runID, principal, now)
	if err == nil {
		if gen == "" {
			gen = genOf(r)
		}
		for i, id := range ids {
			// A record of another generation of the run's state is not
			// the reader's: the run was lost, or expired and was begun
			// again, since.
			if rec := sh.liveRecord(recordKey{runID, id}, now); rec != nil && strconv.FormatUint(rec.gen, 10) == gen {
				v := snapshot(rec, now, opts.Request, opts.Raw)
				out[i] = &v
			}
		}
	}
	sh.mu.Unlock()
	if err != nil {
		return nil, err
	}
	for _, r := range out {
		if r != nil {
			detach(r)
		}
	}
	return out, nil
}

// ReadUsage implements canonical.OwnedReader, under one lock.
func (s *Store) ReadUsage(ctx context.Context, runID, principal string) (canonical.RunUsage, error) {
	if err := enter(ctx, runID, "read run"); err != nil {
		return canonical.RunUsage{}, err
	}
	if err := canonical.ValidatePrincipal(principal); err != nil {
		return canonical.RunUsage{}, err
	}
	sh, now := s.lockForRead(runID)
	defer sh.mu.Unlock()
	if _, err := sh.checkOwner(runID, principal, now); err != nil {
		return canonical.RunUsage{}, err
	}
	return sh.usage(runID, now)
}

// enter checks a run id and the caller's context before a call touches the
// store; a context that is done reads as an unavailable store, as on Redis.
func enter(ctx context.Context, runID, op string) error {
	if err := canonical.ValidateRunID(runID); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return canonical.Wrap(canonical.CodeStoreUnavailable, err, op)
	}
	return nil
}
