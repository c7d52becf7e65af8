// Package memstore is the canonical Store in process memory: the embedded
// default, for single-process hosts, demos and unit tests of other packages.
//
// It has the semantics of the Redis store — the same lifecycle, limits, TTLs,
// completion index and errors — behind one mutex, with an injectable clock so
// tests can move time. Time has millisecond resolution, as on Redis.
package memstore

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// DefaultClosedRunTTL is how long a run closed before any call began keeps
// its closed state when the store has no default TTL.
const DefaultClosedRunTTL = 24 * time.Hour

// sweepEvery is how many Begins pass between sweeps of expired entries, so
// that a long-lived store does not keep what has expired.
const sweepEvery = 256

// Option configures a Store.
type Option func(*Store)

// WithClock makes the store read time from now (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithDefaultTTL sets the TTL used by a Begin whose TTL is zero (default: none,
// every Begin must give one) and for the closed state of a run that has none.
func WithDefaultTTL(d time.Duration) Option { return func(s *Store) { s.ttl = d } }

// Store is the canonical Store in memory. It is safe for concurrent use.
type Store struct {
	mu      sync.Mutex
	now     func() time.Time
	ttl     time.Duration
	records map[recordKey]*record
	runs    map[string]*run
	begins  int
}

type recordKey struct{ run, id string }

type record struct {
	rec            canonical.Record // TTL unused here; computed on read
	expires        int64            // unix ms
	cdigest        string
	overflow       bool
	limRunBytes    int64
	limRecordBytes int64
	limResultBytes int64
}

type run struct {
	calls, bytes  int64
	toolCalls     map[string]int64
	closed        bool
	expires       int64 // unix ms; the run's counters
	index         []string
	indexExpires  int64 // unix ms; the completion index
	createdMillis int64
	protocol      canonical.ProtocolState
}

var _ canonical.Store = (*Store)(nil)

// New returns an empty Store.
func New(opts ...Option) *Store {
	s := &Store{now: time.Now, records: map[recordKey]*record{}, runs: map[string]*run{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

// live returns the record if it exists and has not expired.
func (s *Store) live(k recordKey, now int64) *record {
	r := s.records[k]
	if r != nil && r.expires <= now {
		delete(s.records, k)
		return nil
	}
	return r
}

// liveRun returns the run state if any, dropping what has expired.
func (s *Store) liveRun(id string, now int64) *run {
	r := s.runs[id]
	if r == nil {
		return nil
	}
	if r.indexExpires <= now {
		r.index = nil
	}
	if r.expires <= now {
		if len(r.index) == 0 {
			delete(s.runs, id)
			return nil
		}
		// Only the index outlives the counters (it covers the records).
		r.calls, r.bytes, r.toolCalls, r.closed, r.createdMillis = 0, 0, nil, false, 0
		r.protocol = canonical.ProtocolState{}
	}
	return r
}

func (r *run) hasState(now int64) bool { return r != nil && r.expires > now }

// Begin implements canonical.Store.
func (s *Store) Begin(ctx context.Context, req canonical.BeginRequest) (canonical.Record, error) {
	ttl, lim, err := req.Validate(s.ttl)
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
	if cur := s.live(k, now); cur != nil {
		if cur.rec.Owner == req.Owner && cur.rec.Tool == req.Tool && cur.rec.RequestDigest == digest {
			return s.view(cur, now, true, false), nil
		}
		return canonical.Record{}, &canonical.Error{Code: canonical.CodeDuplicateToolCall, Msg: "begin"}
	}
	r := s.liveRun(req.RunID, now)
	var calls, toolCalls, bytesUsed int64
	if r.hasState(now) {
		if r.closed {
			return canonical.Record{}, &canonical.Error{Code: canonical.CodeRunInactive, Msg: "begin"}
		}
		calls, toolCalls, bytesUsed = r.calls, r.toolCalls[req.Tool], r.bytes
	}
	size := int64(len(req.Request))
	switch {
	case calls >= lim.MaxCallsPerRun || toolCalls >= lim.MaxCallsPerTool:
		return canonical.Record{}, &canonical.Error{Code: canonical.CodeBudgetExhausted, Msg: "begin"}
	case size > lim.MaxRecordBytes || bytesUsed+size > lim.MaxRunBytes:
		return canonical.Record{}, &canonical.Error{Code: canonical.CodeResultTooLarge, Msg: "begin"}
	}
	ttlMs := ttl.Milliseconds()
	rec := &record{
		rec: canonical.Record{
			RunID: req.RunID, ToolCallID: req.ToolCallID, Tool: req.Tool, Owner: req.Owner,
			Status: canonical.StatusProjecting, Evidence: canonical.EvidenceUnknown,
			Request: bytes.Clone(req.Request), RequestDigest: digest,
			CreatedAt: time.UnixMilli(now), UpdatedAt: time.UnixMilli(now),
		},
		expires:     now + ttlMs,
		limRunBytes: lim.MaxRunBytes, limRecordBytes: lim.MaxRecordBytes, limResultBytes: lim.MaxResultBytes,
	}
	s.records[k] = rec
	if r == nil {
		r = &run{}
		s.runs[req.RunID] = r
	}
	if !r.hasState(now) {
		r.toolCalls, r.createdMillis = map[string]int64{}, now
	}
	r.calls++
	r.toolCalls[req.Tool]++
	r.bytes += size
	if r.expires-now < ttlMs {
		r.expires = now + ttlMs
	}
	return s.view(rec, now, true, false), nil
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
	cur := s.live(recordKey{c.RunID, c.ToolCallID}, now)
	if cur == nil {
		return canonical.Record{}, &canonical.Error{Code: canonical.CodeNotFound, Msg: "complete"}
	}
	if cur.rec.Owner != c.Owner {
		return canonical.Record{}, canonical.Errorf(canonical.CodeInvalidTransition, "complete: record is %s or owned by another invocation", cur.rec.Status)
	}
	if cur.rec.Status != canonical.StatusProjecting {
		if cur.cdigest == digest {
			rec := s.view(cur, now, false, false)
			return canonical.FinishCompletion(rec, c, cur.overflow)
		}
		return canonical.Record{}, canonical.Errorf(canonical.CodeInvalidTransition, "complete: record is %s or owned by another invocation", cur.rec.Status)
	}
	// Begin kept the run's state alive at least as long as this record, so a
	// live record always has live run state.
	r := s.liveRun(c.RunID, now)
	rawLen, resultLen := int64(len(c.Raw)), int64(len(c.Result))
	cur.cdigest = digest
	cur.rec.UpdatedAt = time.UnixMilli(now)
	if resultLen > cur.limResultBytes || int64(len(cur.rec.Request))+rawLen+resultLen > cur.limRecordBytes ||
		r.bytes+rawLen+resultLen > cur.limRunBytes {
		cur.overflow = true
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
	r.index = append(r.index, c.ToolCallID)
	if r.indexExpires-now < cur.expires-now {
		r.indexExpires = cur.expires
	}
	rec := s.view(cur, now, false, false)
	return canonical.FinishCompletion(rec, c, cur.overflow)
}

// ensureRun returns the run entry, creating an empty one.
func (s *Store) ensureRun(id string, now int64) *run {
	r := s.runs[id]
	if r == nil {
		r = &run{}
		s.runs[id] = r
	}
	if r.toolCalls == nil {
		r.toolCalls = map[string]int64{}
	}
	return r
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
		if r := s.live(recordKey{runID, id}, now); r != nil {
			v := s.view(r, now, opts.Request, opts.Raw)
			out[i] = &v
		}
	}
	return out, nil
}

// Completed implements canonical.Store.
func (s *Store) Completed(ctx context.Context, runID string) ([]string, error) {
	if err := enter(ctx, runID, "read completion index"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.liveRun(runID, s.nowMs())
	if r == nil {
		return []string{}, nil
	}
	return append([]string{}, r.index...), nil
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
	if !r.hasState(now) {
		r = s.newRunState(runID, now)
	}
	r.closed = true
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
	if !r.hasState(now) {
		return canonical.RunUsage{}, canonical.Errorf(canonical.CodeNotFound, "no state for run %s", runID)
	}
	u := canonical.RunUsage{
		RunID: runID, Calls: r.calls, Bytes: r.bytes, Completed: int64(len(r.index)), Closed: r.closed,
		ToolCalls: make(map[string]int64, len(r.toolCalls)), TTL: time.Duration(r.expires-now) * time.Millisecond,
		Protocol: r.protocol,
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
	if !r.hasState(now) {
		r = s.newRunState(runID, now)
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

// newRunState starts the state of a run that has none, with the TTL a closed
// or observed run gets.
func (s *Store) newRunState(runID string, now int64) *run {
	ttl := s.ttl
	if ttl == 0 {
		ttl = DefaultClosedRunTTL
	}
	r := s.ensureRun(runID, now)
	r.toolCalls, r.createdMillis, r.expires = map[string]int64{}, now, now+ttl.Milliseconds()
	r.protocol = canonical.ProtocolState{}
	return r
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

// sweep drops every expired record and run.
func (s *Store) sweep(now int64) {
	for k := range s.records {
		s.live(k, now)
	}
	for id := range s.runs {
		s.liveRun(id, now)
	}
}
