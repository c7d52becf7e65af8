// Package memstore is the canonical Store in process memory: the embedded
// default, for single-process hosts, demos and unit tests of other packages.
//
// It has the semantics of the Redis store — the same lifecycle, run limits,
// leases, TTLs, completion index and errors, and the same fields in every
// reply — behind one mutex, with an injectable clock so tests can move
// time. Time has millisecond resolution, as on Redis. What Redis keeps in
// four keys per run (record, run state, completion index, leases) memstore
// keeps in four maps, each entry with its own expiry, so that the two stores
// expire alike.
//
// Options are functional (WithClock, WithDefaultTTL, ...): a store in memory
// has nothing to dial, so there is no address-bearing Options struct as in
// redisstore.
package memstore

import (
	"bytes"
	"context"
	"sort"
	"sync"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// DefaultClosedRunRetention is how long a closed run stays closed at least
// when WithClosedRunRetention is not given.
const DefaultClosedRunRetention = 24 * time.Hour

// sweepEvery is how many Begins pass between sweeps of expired entries, so
// that a long-lived store does not keep what has expired.
const sweepEvery = 256

// Option configures a Store.
type Option func(*Store)

// WithClock makes the store read time from now (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithDefaultTTL sets the TTL used by a Begin whose TTL is zero (default:
// none, every Begin must give one), and of the state of a run that a
// progress report reaches first (default: the closed-run retention).
func WithDefaultTTL(d time.Duration) Option { return func(s *Store) { s.ttl = d } }

// WithClosedRunRetention sets how long a closed run stays closed at least,
// whatever its records' TTLs (default DefaultClosedRunRetention; d <= 0
// keeps the default).
func WithClosedRunRetention(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.retention = d
		}
	}
}

// Store is the canonical Store in memory. It is safe for concurrent use.
type Store struct {
	mu        sync.Mutex
	now       func() time.Time
	ttl       time.Duration
	retention time.Duration
	records   map[recordKey]*record
	runs      map[string]*runState
	indexes   map[string]*index
	leases    map[string]*leaseSet
	begins    int
}

type recordKey struct{ run, id string }

type record struct {
	rec      canonical.Record // TTL and Limits unused here; computed on read
	expires  int64            // unix ms
	cdigest  string           // digest of the completion made, "abandoned" after Abandon
	overflow bool
}

// runState is what Redis keeps in the run's HASH.
type runState struct {
	calls, bytes  int64
	toolCalls     map[string]int64
	limits        canonical.Limits // valid when hasLimits: fixed by the run's first Begin
	hasLimits     bool
	closed, lost  bool
	createdMillis int64
	protocol      canonical.ProtocolState
	expires       int64 // unix ms
}

// index is the run's completion index (a LIST on Redis).
type index struct {
	ids     []string
	expires int64
}

// leaseSet is the run's PROJECTING calls by lease deadline (a ZSET on Redis).
type leaseSet struct {
	until   map[string]int64
	expires int64
}

// abandoned marks a record closed by Abandon; no completion digest equals it.
const abandoned = "abandoned"

var _ canonical.Store = (*Store)(nil)

// New returns an empty Store.
func New(opts ...Option) *Store {
	s := &Store{now: time.Now, retention: DefaultClosedRunRetention, records: map[recordKey]*record{},
		runs: map[string]*runState{}, indexes: map[string]*index{}, leases: map[string]*leaseSet{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

// The live* getters return an entry if it exists and has not expired,
// dropping it when it has.

func (s *Store) liveRecord(k recordKey, now int64) *record {
	r := s.records[k]
	if r != nil && r.expires <= now {
		delete(s.records, k)
		return nil
	}
	return r
}

func (s *Store) liveRun(id string, now int64) *runState {
	r := s.runs[id]
	if r != nil && r.expires <= now {
		delete(s.runs, id)
		return nil
	}
	return r
}

func (s *Store) liveIndex(id string, now int64) *index {
	x := s.indexes[id]
	if x != nil && x.expires <= now {
		delete(s.indexes, id)
		return nil
	}
	return x
}

func (s *Store) liveLeases(id string, now int64) *leaseSet {
	l := s.leases[id]
	if l != nil && l.expires <= now {
		delete(s.leases, id)
		return nil
	}
	return l
}

// newRun creates a run's state, as the first HSET of a script does on Redis.
func (s *Store) newRun(id string, now int64) *runState {
	r := &runState{toolCalls: map[string]int64{}, createdMillis: now}
	s.runs[id] = r
	return r
}

// dropLease removes id from the run's leases; an empty set is gone, as an
// empty ZSET is on Redis.
func (s *Store) dropLease(runID, id string, now int64) {
	if l := s.liveLeases(runID, now); l != nil {
		delete(l.until, id)
		if len(l.until) == 0 {
			delete(s.leases, runID)
		}
	}
}

// appendIndex appends id to the run's completion index and extends the
// index to cover a record that expires at recExpires.
func (s *Store) appendIndex(runID, id string, recExpires, now int64) {
	x := s.liveIndex(runID, now)
	if x == nil {
		x = &index{}
		s.indexes[runID] = x
	}
	x.ids = append(x.ids, id)
	if x.expires < recExpires {
		x.expires = recExpires
	}
}

// Begin implements canonical.Store.
func (s *Store) Begin(ctx context.Context, req canonical.BeginRequest) (canonical.Record, error) {
	a, err := req.Validate(s.ttl)
	if err != nil {
		return canonical.Record{}, err
	}
	if err := ctx.Err(); err != nil {
		return canonical.Record{}, canonical.Wrap(canonical.CodeStoreUnavailable, err, "begin")
	}
	digest := canonical.RequestDigest(req.Request) // hashed outside the lock
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowMs()
	s.begins++
	if s.begins%sweepEvery == 0 {
		s.sweep(now)
	}
	k := recordKey{req.RunID, req.ToolCallID}
	if cur := s.liveRecord(k, now); cur != nil {
		if cur.rec.Owner == req.Owner && cur.rec.Tool == req.Tool && cur.rec.RequestDigest == digest {
			out := s.view(cur, now, true, false)
			if r := s.liveRun(req.RunID, now); r != nil && r.hasLimits {
				out.Limits = r.limits
			}
			return out, nil
		}
		if cur.rec.Status == canonical.StatusProjecting {
			return canonical.Record{}, &canonical.Error{Code: canonical.CodeToolCallInProgress, Msg: "begin"}
		}
		return canonical.Record{}, &canonical.Error{Code: canonical.CodeDuplicateToolCall, Msg: "begin"}
	}
	r := s.liveRun(req.RunID, now)
	switch {
	case r != nil && r.lost:
		return canonical.Record{}, canonical.Errorf(canonical.CodeRunInactive, "begin: the run is lost")
	case r != nil && r.closed:
		return canonical.Record{}, canonical.Errorf(canonical.CodeRunInactive, "begin: the run is closed")
	}
	lim := a.NewRun
	if r != nil && r.hasLimits {
		if f := a.Limits.Conflict(r.limits); f != "" {
			return canonical.Record{}, canonical.Errorf(canonical.CodeInvalidArgument, "begin: limit %s differs from the run's", f)
		}
		lim = r.limits
	} else if s.liveIndex(req.RunID, now) != nil || s.liveLeases(req.RunID, now) != nil {
		return canonical.Record{}, canonical.Errorf(canonical.CodeRunInactive, "begin: the run is lost")
	}
	var calls, toolCalls, bytesUsed int64
	if r != nil {
		calls, toolCalls, bytesUsed = r.calls, r.toolCalls[req.Tool], r.bytes
	}
	size := int64(len(req.Request))
	switch {
	case calls >= lim.MaxCallsPerRun || toolCalls >= lim.MaxCallsPerTool:
		return canonical.Record{}, &canonical.Error{Code: canonical.CodeBudgetExhausted, Msg: "begin"}
	case size > lim.MaxRecordBytes || bytesUsed+size > lim.MaxRunBytes:
		return canonical.Record{}, &canonical.Error{Code: canonical.CodeResultTooLarge, Msg: "begin"}
	}

	ttl := a.TTL.Milliseconds()
	rec := &record{
		rec: canonical.Record{
			RunID: req.RunID, ToolCallID: req.ToolCallID, Tool: req.Tool, Owner: req.Owner,
			Status: canonical.StatusProjecting, Evidence: canonical.EvidenceUnknown,
			Request: bytes.Clone(req.Request), RequestDigest: digest,
			CreatedAt: time.UnixMilli(now), UpdatedAt: time.UnixMilli(now),
			LeaseUntil: time.UnixMilli(now + a.Lease.Milliseconds()),
		},
		expires: now + ttl,
	}
	s.records[k] = rec
	if r == nil {
		r = s.newRun(req.RunID, now)
	}
	r.calls++
	r.toolCalls[req.Tool]++
	r.bytes += size
	if !r.hasLimits {
		r.limits, r.hasLimits = lim, true
	}
	// The run's state and leases must outlive every record they count.
	if r.expires-now < ttl {
		r.expires = now + ttl
	}
	l := s.liveLeases(req.RunID, now)
	if l == nil {
		l = &leaseSet{until: map[string]int64{}}
		s.leases[req.RunID] = l
	}
	l.until[req.ToolCallID] = rec.rec.LeaseUntil.UnixMilli()
	if l.expires-now < ttl {
		l.expires = now + ttl
	}
	out := s.view(rec, now, true, false)
	out.Limits = lim
	return out, nil
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
	digest := c.Digest()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowMs()
	cur := s.liveRecord(recordKey{c.RunID, c.ToolCallID}, now)
	if cur == nil {
		return canonical.Record{}, &canonical.Error{Code: canonical.CodeNotFound, Msg: "complete"}
	}
	if cur.rec.Owner != c.Owner {
		return canonical.Record{}, canonical.Errorf(canonical.CodeInvalidTransition, "complete: record is %s or owned by another invocation", cur.rec.Status)
	}
	if cur.rec.Status != canonical.StatusProjecting {
		if cur.cdigest == digest {
			return s.finish(cur, c, now)
		}
		return canonical.Record{}, canonical.Errorf(canonical.CodeInvalidTransition, "complete: record is %s or owned by another invocation", cur.rec.Status)
	}

	rawLen, resultLen := int64(len(c.Raw)), int64(len(c.Result))
	r := s.liveRun(c.RunID, now)
	if r == nil || !r.hasLimits {
		// The run's state is gone while its record lives: record the outcome
		// all the same, and mark the run lost and closed, so that its budgets
		// never silently start again from zero.
		if r == nil {
			r = s.newRun(c.RunID, now)
		}
		r.closed, r.lost = true, true
		if r.expires < cur.expires {
			r.expires = cur.expires
		}
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
		cur.rec.Raw = bytes.Clone(c.Raw)
		r.bytes += rawLen
		if c.Status == canonical.StatusReady {
			cur.rec.Result = bytes.Clone(c.Result)
			r.bytes += resultLen
		}
	}
	s.dropLease(c.RunID, c.ToolCallID, now)
	s.appendIndex(c.RunID, c.ToolCallID, cur.expires, now)
	return s.finish(cur, c, now)
}

// finish returns a completed record to the completion's caller.
func (s *Store) finish(cur *record, c canonical.Completion, now int64) (canonical.Record, error) {
	rec, err := canonical.FinishCompletion(s.view(cur, now, false, false), c, cur.overflow)
	rec.RawLen = len(cur.rec.Raw)
	return rec, err
}

// Abandon implements canonical.Store.
func (s *Store) Abandon(ctx context.Context, runID, toolCallID string) (canonical.Record, error) {
	if err := canonical.ValidateRead(runID, []string{toolCallID}); err != nil {
		return canonical.Record{}, err
	}
	if err := ctx.Err(); err != nil {
		return canonical.Record{}, canonical.Wrap(canonical.CodeStoreUnavailable, err, "abandon")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowMs()
	cur := s.liveRecord(recordKey{runID, toolCallID}, now)
	if cur == nil {
		s.dropLease(runID, toolCallID, now)
		return canonical.Record{}, &canonical.Error{Code: canonical.CodeNotFound, Msg: "abandon"}
	}
	if cur.rec.Status != canonical.StatusProjecting {
		if cur.cdigest == abandoned {
			return s.view(cur, now, false, false), nil
		}
		return canonical.Record{}, canonical.Errorf(canonical.CodeInvalidTransition, "abandon: record is %s", cur.rec.Status)
	}
	if lease := cur.rec.LeaseUntil.UnixMilli(); now < lease {
		return canonical.Record{}, canonical.Errorf(canonical.CodeInvalidTransition, "abandon: the lease runs for %v more",
			time.Duration(lease-now)*time.Millisecond)
	}
	cur.rec.Status, cur.rec.Evidence, cur.rec.Error = canonical.StatusError, canonical.EvidenceError, canonical.CodeExecutionAbandoned
	cur.rec.UpdatedAt = time.UnixMilli(now)
	cur.cdigest = abandoned
	s.dropLease(runID, toolCallID, now)
	s.appendIndex(runID, toolCallID, cur.expires, now)
	return s.view(cur, now, false, false), nil
}

// ExpiredLeases implements canonical.Store.
func (s *Store) ExpiredLeases(ctx context.Context, runID string, max int) ([]string, error) {
	if err := enter(ctx, runID, "read leases"); err != nil {
		return nil, err
	}
	if err := canonical.ValidateMax(max); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowMs()
	type lease struct {
		id    string
		until int64
	}
	var passed []lease
	if l := s.liveLeases(runID, now); l != nil {
		for id, until := range l.until {
			if until <= now {
				passed = append(passed, lease{id, until})
			}
		}
	}
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

// view copies a record out for a caller. Large fields are copied only when
// asked for, so callers never share the store's memory.
func (s *Store) view(r *record, now int64, withRequest, withRaw bool) canonical.Record {
	out := r.rec
	out.TTL = time.Duration(r.expires-now) * time.Millisecond
	out.RequestLen, out.RawLen = len(r.rec.Request), len(r.rec.Raw)
	out.Request, out.Raw = nil, nil
	if withRequest {
		out.Request = bytes.Clone(r.rec.Request)
	}
	if withRaw {
		out.Raw = bytes.Clone(r.rec.Raw)
	}
	out.Result = bytes.Clone(r.rec.Result)
	return out
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
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowMs()
	out := make([]*canonical.Record, len(ids))
	for i, id := range ids {
		if r := s.liveRecord(recordKey{runID, id}, now); r != nil {
			v := s.view(r, now, opts.Request, opts.Raw)
			out[i] = &v
		}
	}
	return out, nil
}

// Completed implements canonical.Store.
func (s *Store) Completed(ctx context.Context, runID string, limit int) ([]string, int, error) {
	if err := enter(ctx, runID, "read completion index"); err != nil {
		return nil, 0, err
	}
	if err := canonical.ValidateMax(limit); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.liveIndex(runID, s.nowMs())
	if x == nil {
		return []string{}, 0, nil
	}
	return append([]string{}, x.ids[:min(limit, len(x.ids))]...), len(x.ids), nil
}

// CloseRun implements canonical.Store.
func (s *Store) CloseRun(ctx context.Context, runID string) error {
	if err := enter(ctx, runID, "close run"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowMs()
	r := s.liveRun(runID, now)
	if r == nil {
		r = s.newRun(runID, now)
	}
	r.closed = true
	if r.expires-now < s.retention.Milliseconds() {
		r.expires = now + s.retention.Milliseconds()
	}
	return nil
}

// Usage implements canonical.Store.
func (s *Store) Usage(ctx context.Context, runID string) (canonical.RunUsage, error) {
	if err := enter(ctx, runID, "read run"); err != nil {
		return canonical.RunUsage{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowMs()
	r := s.liveRun(runID, now)
	if r == nil {
		return canonical.RunUsage{}, canonical.Errorf(canonical.CodeNotFound, "no state for run %s", runID)
	}
	u := canonical.RunUsage{
		RunID: runID, Calls: r.calls, Bytes: r.bytes, Closed: r.closed, Lost: r.lost,
		ToolCalls: make(map[string]int64, len(r.toolCalls)), TTL: time.Duration(r.expires-now) * time.Millisecond,
		Protocol: r.protocol,
	}
	if r.hasLimits {
		u.Limits = r.limits
	}
	if x := s.liveIndex(runID, now); x != nil {
		u.Completed = int64(len(x.ids))
	}
	if l := s.liveLeases(runID, now); l != nil {
		u.InFlight = int64(len(l.until))
	}
	for t, n := range r.toolCalls {
		u.ToolCalls[t] = n
	}
	return u, nil
}

// ObserveProgress implements canonical.Store.
func (s *Store) ObserveProgress(ctx context.Context, runID string, valid bool, threshold int64) (canonical.ProtocolState, error) {
	if err := canonical.ValidateRunID(runID); err != nil {
		return canonical.ProtocolState{}, err
	}
	if threshold <= 0 {
		return canonical.ProtocolState{}, canonical.Errorf(canonical.CodeInvalidArgument, "progress threshold must be positive")
	}
	if err := ctx.Err(); err != nil {
		return canonical.ProtocolState{}, canonical.Wrap(canonical.CodeStoreUnavailable, err, "observe progress")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowMs()
	r := s.liveRun(runID, now)
	if r == nil {
		ttl := s.ttl
		if ttl == 0 {
			ttl = s.retention
		}
		r = s.newRun(runID, now)
		r.expires = now + ttl.Milliseconds()
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

// sweep drops every expired entry.
func (s *Store) sweep(now int64) {
	for k := range s.records {
		s.liveRecord(k, now)
	}
	for id := range s.runs {
		s.liveRun(id, now)
	}
	for id := range s.indexes {
		s.liveIndex(id, now)
	}
	for id := range s.leases {
		s.liveLeases(id, now)
	}
}
