package memstore

import (
	"context"
	"sync"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/auditrec"
	layout "github.com/toolcanon/toolcanon/internal/record"
)

// WithAudit turns the store's audit stream on (it is off by default): every
// transition appends a canonical.AuditEvent under the same lock, and the
// events wait until an exporter has had a sink confirm them
// (canonical.AuditSource). opts.MaxBacklog bounds the events waiting in
// the whole store. Options that do not validate leave audit off and make
// every Begin fail with INVALID_ARGUMENT, so that a misconfigured store
// never runs unaudited.
func WithAudit(opts canonical.AuditOptions) Option {
	return func(s *Store) {
		if opts.MaxBacklog == 0 {
			opts.MaxBacklog = canonical.DefaultAuditBacklog
		}
		opts.Key = append([]byte(nil), opts.Key...)
		s.audit = &auditState{opts: opts, err: opts.Validate()}
	}
}

// auditState is the store's side of its audit stream.
type auditState struct {
	opts canonical.AuditOptions
	err  error // the options' fault: every Begin fails with it

	mu     sync.Mutex
	holder string // the export lease's holder, until leaseUntil
	until  int64
	status canonical.AuditStatus
}

// auditLog is one run's pending events and its chain head. It lives while
// it holds events, and while its run's state lives after that (a later
// event of the same stream continues the head).
type auditLog struct {
	head   canonical.AuditHead
	events []canonical.AuditEvent
}

// auditOn reports whether the store records events.
func (s *Store) auditOn() bool { return s.audit != nil }

// auditCall is what a transition's event knows before the lock: digests
// and the trace, computed outside it.
type auditCall struct {
	trace                         canonical.Trace
	request, raw, result          string
	requestLen, rawLen, resultLen int64
}

// appendEvent appends ev to its run's stream under the shard's lock: the
// run's state (r, live) gives the stream's generation and sequence number,
// and the store's clock its time.
func (s *Store) appendEvent(sh *shard, r *runState, ev canonical.AuditEvent, now int64) {
	if r.agen == "" {
		r.agen = layout.NewGeneration()
	}
	r.aseq++
	ev.Gen, ev.Seq, ev.Time = r.agen, r.aseq, time.UnixMilli(now).UTC()
	if ev.Type != canonical.AuditAbandon && ev.Type != canonical.AuditClose {
		ev.KeyID = s.audit.opts.KeyID // the key of its digests: abandon and close have none (as redisstore)
	}
	l := sh.audits[ev.RunID]
	if l == nil {
		l = &auditLog{}
		sh.audits[ev.RunID] = l
	}
	l.events = append(l.events, ev)
	s.pendingEvents.Add(1)
}

// backlogFull reports whether the store holds as many pending events as
// it may.
func (s *Store) backlogFull() bool {
	return s.auditOn() && s.pendingEvents.Load() >= s.audit.opts.MaxBacklog
}

// errBacklog is the refusal of a Begin by a full backlog.
func errBacklog(max int64) error {
	return canonical.Errorf(canonical.CodeAuditBacklog,
		"begin: %d audit events wait for export, the most the store keeps (AuditOptions.MaxBacklog)", max)
}

// dropHeadOnly forgets the audit log of a run whose state is gone, when
// nothing of it waits for export: no later event continues its chain.
func (sh *shard) dropHeadOnly(runID string) {
	if l := sh.audits[runID]; l != nil && len(l.events) == 0 {
		delete(sh.audits, runID)
	}
}

// AuditRuns implements canonical.AuditSource: the runs with pending
// events, shard by shard.
func (s *Store) AuditRuns(ctx context.Context, batch int, visit func(runs []string) error) error {
	if err := s.auditCall(ctx, "list audit runs"); err != nil {
		return err
	}
	if batch <= 0 {
		return canonical.Errorf(canonical.CodeInvalidArgument, "audit runs: batch must be positive")
	}
	var out []string
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for run, l := range sh.audits {
			if len(l.events) > 0 {
				out = append(out, run)
			}
		}
		sh.mu.Unlock()
		for len(out) >= batch {
			if err := visit(out[:batch:batch]); err != nil {
				return err
			}
			out = out[batch:]
		}
	}
	if len(out) > 0 {
		return visit(out)
	}
	return nil
}

// AuditRead implements canonical.AuditSource.
func (s *Store) AuditRead(ctx context.Context, runIDs []string, max int) ([]canonical.AuditPending, error) {
	if err := s.auditCall(ctx, "read audit events"); err != nil {
		return nil, err
	}
	if max <= 0 {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "audit read: max must be positive")
	}
	out := make([]canonical.AuditPending, len(runIDs))
	for i, run := range runIDs {
		if err := canonical.ValidateRunID(run); err != nil {
			return nil, err
		}
		sh := &s.shards[s.shardOf(run)]
		sh.mu.Lock()
		out[i].RunID = run
		if l := sh.audits[run]; l != nil {
			out[i].Head = l.head
			out[i].Events = append([]canonical.AuditEvent(nil), l.events[:min(max, len(l.events))]...)
		}
		sh.mu.Unlock()
	}
	return out, nil
}

// AuditAck implements canonical.AuditSource.
func (s *Store) AuditAck(ctx context.Context, runID string, from canonical.AuditHead, n int, to canonical.AuditHead) (bool, error) {
	if err := s.auditCall(ctx, "acknowledge audit events"); err != nil {
		return false, err
	}
	if err := canonical.ValidateRunID(runID); err != nil {
		return false, err
	}
	sh, now := s.lock(runID)
	defer sh.mu.Unlock()
	l := sh.audits[runID]
	if l == nil || l.head != from || n < 1 || n > len(l.events) {
		return false, nil
	}
	last := l.events[n-1]
	if last.Gen != to.Gen || last.Seq != to.Seq {
		return false, canonical.Errorf(canonical.CodeInvalidArgument, "audit ack: the head is not the last event acknowledged")
	}
	l.events = append(l.events[:0:0], l.events[n:]...)
	l.head = to
	s.pendingEvents.Add(-int64(n))
	if len(l.events) == 0 {
		// The head is kept only while a later event may continue it: while
		// the run's state of that stream lives.
		if r := sh.liveRun(runID, now); r == nil || r.agen != to.Gen {
			delete(sh.audits, runID)
		}
	}
	return true, nil
}

// AuditLease implements canonical.AuditSource: one holder at a time, in
// this process.
func (s *Store) AuditLease(ctx context.Context, holder string, ttl time.Duration) (bool, error) {
	if err := s.auditCall(ctx, "take the export lease"); err != nil {
		return false, err
	}
	if holder == "" || ttl < time.Millisecond {
		return false, canonical.Errorf(canonical.CodeInvalidArgument, "export lease: a holder and a TTL of at least 1ms")
	}
	a := s.audit
	a.mu.Lock()
	defer a.mu.Unlock()
	now := s.nowMs()
	if a.holder != "" && a.holder != holder && a.until > now {
		return false, nil
	}
	a.holder, a.until = holder, now+ttl.Milliseconds()
	return true, nil
}

// AuditStatus implements canonical.AuditSource.
func (s *Store) AuditStatus(ctx context.Context) (canonical.AuditStatus, error) {
	if err := s.auditCall(ctx, "read the export status"); err != nil {
		return canonical.AuditStatus{}, err
	}
	s.audit.mu.Lock()
	defer s.audit.mu.Unlock()
	return s.audit.status, nil
}

// AuditReport implements canonical.AuditSource.
func (s *Store) AuditReport(ctx context.Context, r canonical.AuditStatus) error {
	if err := s.auditCall(ctx, "keep the export status"); err != nil {
		return err
	}
	s.audit.mu.Lock()
	defer s.audit.mu.Unlock()
	s.audit.status = r
	return nil
}

// AuditBacklog returns how many events wait for export.
func (s *Store) AuditBacklog() int64 { return s.pendingEvents.Load() }

// auditCall checks that audit is on and ctx alive.
func (s *Store) auditCall(ctx context.Context, op string) error {
	if !s.auditOn() {
		return canonical.Errorf(canonical.CodeInvalidArgument, "%s: the store's audit is off (memstore.WithAudit)", op)
	}
	if err := ctx.Err(); err != nil {
		return canonical.Wrap(canonical.CodeStoreUnavailable, err, op)
	}
	return nil
}

var _ canonical.AuditSource = (*Store)(nil)

// callEvent is the begin or replay event of req by the principal of tag.
func (s *Store) callEvent(t canonical.AuditType, req canonical.BeginRequest, tag string, ac *auditCall) canonical.AuditEvent {
	ev := canonical.AuditEvent{RunID: req.RunID, Type: t, ToolCallID: req.ToolCallID, Tool: req.Tool,
		ToolVersion: auditrec.Definition(req.Definition), Principal: tag, RequestDigest: ac.request,
		RequestSize: ac.requestLen, TraceID: ac.trace.TraceID, SpanID: ac.trace.SpanID}
	if t == canonical.AuditReplay {
		ev.Execution = canonical.ExecutionReplayed
	}
	return ev
}

// completeEvent is the event of completion c as the record cur now holds
// it (its outcome: RESULT_TOO_LARGE when the store refused the bytes).
func completeEvent(c canonical.Completion, cur *record, ac *auditCall) canonical.AuditEvent {
	ev := canonical.AuditEvent{RunID: c.RunID, Type: canonical.AuditComplete, ToolCallID: c.ToolCallID,
		Status: cur.rec.Status, Evidence: cur.rec.Evidence, Code: cur.rec.Error, Execution: canonical.ExecutionExecuted,
		RawDigest: ac.raw, RawSize: ac.rawLen, ResultDigest: ac.result, ResultSize: ac.resultLen,
		Redactions: max(c.Redactions, 0), Handles: len(c.Handles), TraceID: ac.trace.TraceID, SpanID: ac.trace.SpanID}
	if c.NotRun {
		ev.Execution = canonical.ExecutionNotRun
	}
	return ev
}

// streamRun returns the run's state for an event's sequence number: when
// it is gone (lost) while the call lives, the state a completion makes
// after a loss, closed and lost, expiring with the record.
func (sh *shard) streamRun(runID string, recExpires, now int64) *runState {
	r := sh.liveRun(runID, now)
	if r == nil {
		r = sh.newRun(runID, now, recExpires)
		r.closed, r.lost = true, true
	}
	return r
}

// AuditEnabled reports whether the store records audit events (WithAudit).
func (s *Store) AuditEnabled() bool { return s.auditOn() }
