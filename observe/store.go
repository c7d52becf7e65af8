package observe

import (
	"context"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// StoreOp is one call of a canonical.Store method, reported when it returns.
// Like every event of this package it carries no payload, key or error text.
type StoreOp struct {
	// Method is the Store method: "Begin", "Complete", "CloseRun",
	// "ObserveProgress", "Get", "GetMany", "Completed", "Usage",
	// "Abandon", "ExpiredLeases", "Reap", "CheckPrincipal", "AwaitInput" or
	// "ContinueCall".
	Method string
	// Script is the lifecycle script the method runs (begin, complete,
	// close_run, observe_progress, await_input, continue_call); "" for a
	// read.
	Script string
	// Command is the Redis command the method stands for: EVALSHA for a
	// script, HMGET, HGETALL, ZRANGE or HGET for a read. The
	// in-memory store runs none, but has the same operations, so it reports
	// the same names.
	Command string
	// RunID and ToolCallID are the operation's identity when valid ("" for
	// a malformed one, or when the method names no call).
	RunID, ToolCallID string
	// Items is the number of records a GetMany asked for; 1 for a method
	// about one call, 0 for a method about the run.
	Items    int
	Start    time.Time
	Duration time.Duration
	// Code is the stable code of the error the method returned; "" on
	// success.
	Code canonical.Code
}

// StoreObserver is told about every operation of a store wrapped by Store.
// It is called from the goroutine that called the store, so it must be safe
// for concurrent use, quick, and must not block. A panic in it is recovered
// and ignored.
type StoreObserver interface {
	StoreOp(ctx context.Context, op StoreOp)
}

// The operations a Store reports, in the order of the interface.
var (
	opBegin           = storeOp{"Begin", "begin", "EVALSHA"}
	opComplete        = storeOp{"Complete", "complete", "EVALSHA"}
	opGet             = storeOp{"Get", "", "HMGET"}
	opGetMany         = storeOp{"GetMany", "", "HMGET"}
	opCompleted       = storeOp{"Completed", "", "ZRANGE"}
	opCloseRun        = storeOp{"CloseRun", "close_run", "EVALSHA"}
	opUsage           = storeOp{"Usage", "", "HGETALL"}
	opObserveProgress = storeOp{"ObserveProgress", "observe_progress", "EVALSHA"}
	opAbandon         = storeOp{"Abandon", "abandon", "EVALSHA"}
	opAwaitInput      = storeOp{"AwaitInput", "await_input", "EVALSHA"}
	opContinueCall    = storeOp{"ContinueCall", "continue_call", "EVALSHA"}
	opExpiredLeases   = storeOp{"ExpiredLeases", "", "ZRANGE"}
	opReap            = storeOp{"Reap", "", "ZRANGE"}
	opCheckPrincipal  = storeOp{"CheckPrincipal", "", "HGET"}
	opHandleSources   = storeOp{"HandleSources", "", "HMGET"}
	opReadIndex       = storeOp{"ReadIndex", "", "ZRANGE"}
	opReadRecords     = storeOp{"ReadRecords", "", "HMGET"}
	opReadUsage       = storeOp{"ReadUsage", "", "HGETALL"}
)

type storeOp struct{ method, script, command string }

// Store returns s reporting each of its operations to o. The result is a
// canonical.Store with the same semantics as s: every method calls s's with
// the same arguments and returns what it returned. A panic of s is reported
// as STORE_UNAVAILABLE and then continues. A nil o returns s itself.
func Store(s canonical.Store, o StoreObserver) canonical.Store {
	if o == nil {
		return s
	}
	return &observedStore{next: s, obs: o}
}

// observedStore has one small method per canonical.Store method: a new Store
// method gets its own storeOp and a method of three lines below.
type observedStore struct {
	next canonical.Store
	obs  StoreObserver
}

var (
	_ canonical.Store            = (*observedStore)(nil)
	_ canonical.ProgressObserver = (*observedStore)(nil)
	_ canonical.DefaultTTLer     = (*observedStore)(nil)
	_ canonical.HandleIndex      = (*observedStore)(nil)
	_ canonical.Continuer        = (*observedStore)(nil)
)

// DefaultTTL is the decorated store's default record TTL (0 when it has
// none or does not say), so that a boundary over the decorator checks the
// same lifetime as over the store itself. It is not an operation: nothing
// is reported.
func (s *observedStore) DefaultTTL() time.Duration { return canonical.DefaultTTLOf(s.next) }

func (s *observedStore) Begin(ctx context.Context, req canonical.BeginRequest) (_ canonical.Record, err error) {
	defer s.report(ctx, opBegin, req.RunID, req.ToolCallID, 1, time.Now(), &err)
	return s.next.Begin(ctx, req)
}

func (s *observedStore) Complete(ctx context.Context, c canonical.Completion) (_ canonical.Record, err error) {
	defer s.report(ctx, opComplete, c.RunID, c.ToolCallID, 1, time.Now(), &err)
	return s.next.Complete(ctx, c)
}

func (s *observedStore) Get(ctx context.Context, runID, toolCallID string) (_ canonical.Record, err error) {
	defer s.report(ctx, opGet, runID, toolCallID, 1, time.Now(), &err)
	return s.next.Get(ctx, runID, toolCallID)
}

func (s *observedStore) GetMany(ctx context.Context, runID string, ids []string, opts canonical.ReadOptions) (_ []*canonical.Record, err error) {
	defer s.report(ctx, opGetMany, runID, "", len(ids), time.Now(), &err)
	return s.next.GetMany(ctx, runID, ids, opts)
}

func (s *observedStore) Completed(ctx context.Context, runID string, max int) (_ []string, _ int, err error) {
	defer s.report(ctx, opCompleted, runID, "", 0, time.Now(), &err)
	return s.next.Completed(ctx, runID, max)
}

func (s *observedStore) CloseRun(ctx context.Context, runID, principal string) (err error) {
	defer s.report(ctx, opCloseRun, runID, "", 0, time.Now(), &err)
	return s.next.CloseRun(ctx, runID, principal)
}

func (s *observedStore) Usage(ctx context.Context, runID string) (_ canonical.RunUsage, err error) {
	defer s.report(ctx, opUsage, runID, "", 0, time.Now(), &err)
	return s.next.Usage(ctx, runID)
}

func (s *observedStore) ObserveProgress(ctx context.Context, runID, principal string, valid bool, threshold int64) (_ canonical.ProtocolState, err error) {
	defer s.report(ctx, opObserveProgress, runID, "", 0, time.Now(), &err)
	p, ok := s.next.(canonical.ProgressObserver)
	if !ok {
		return canonical.ProtocolState{}, canonical.Errorf(canonical.CodeInvalidArgument, "the store does not count progress reports (canonical.ProgressObserver)")
	}
	return p.ObserveProgress(ctx, runID, principal, valid, threshold)
}

func (s *observedStore) AwaitInput(ctx context.Context, a canonical.AwaitInput) (_ canonical.Record, err error) {
	defer s.report(ctx, opAwaitInput, a.RunID, a.ToolCallID, 1, time.Now(), &err)
	c, ok := s.next.(canonical.Continuer)
	if !ok {
		return canonical.Record{}, canonical.Errorf(canonical.CodeInvalidArgument, "the store keeps no call open for input (canonical.Continuer)")
	}
	return c.AwaitInput(ctx, a)
}

func (s *observedStore) ContinueCall(ctx context.Context, cc canonical.ContinueCall) (_ canonical.Continued, err error) {
	defer s.report(ctx, opContinueCall, cc.RunID, cc.ToolCallID, 1, time.Now(), &err)
	c, ok := s.next.(canonical.Continuer)
	if !ok {
		return canonical.Continued{}, canonical.Errorf(canonical.CodeInvalidArgument, "the store keeps no call open for input (canonical.Continuer)")
	}
	return c.ContinueCall(ctx, cc)
}

func (s *observedStore) HandleSources(ctx context.Context, runID, principal string, ids []string) (_ canonical.HandleSources, err error) {
	defer s.report(ctx, opHandleSources, runID, "", len(ids), time.Now(), &err)
	x, ok := s.next.(canonical.HandleIndex)
	if !ok {
		return canonical.HandleSources{}, canonical.Errorf(canonical.CodeInvalidArgument, "the store keeps no handle index (canonical.HandleIndex)")
	}
	return x.HandleSources(ctx, runID, principal, ids)
}

// ReadIndex, ReadRecords and ReadUsage are the store's own when it is a
// canonical.OwnedReader; otherwise the owner is checked with
// CheckPrincipal before the read, as hosts did before OwnedReader.
func (s *observedStore) ReadIndex(ctx context.Context, runID, principal string, max int) (_ canonical.RunIndex, err error) {
	defer s.report(ctx, opReadIndex, runID, "", 0, time.Now(), &err)
	if o, ok := s.next.(canonical.OwnedReader); ok {
		return o.ReadIndex(ctx, runID, principal, max)
	}
	if err := s.next.CheckPrincipal(ctx, runID, principal); err != nil {
		return canonical.RunIndex{}, err
	}
	ids, n, err := s.next.Completed(ctx, runID, max)
	return canonical.RunIndex{IDs: ids, Length: n}, err
}

func (s *observedStore) ReadRecords(ctx context.Context, runID, principal, gen string, ids []string, opts canonical.ReadOptions) (_ []*canonical.Record, err error) {
	defer s.report(ctx, opReadRecords, runID, "", len(ids), time.Now(), &err)
	if o, ok := s.next.(canonical.OwnedReader); ok {
		return o.ReadRecords(ctx, runID, principal, gen, ids, opts)
	}
	if err := s.next.CheckPrincipal(ctx, runID, principal); err != nil {
		return nil, err
	}
	return s.next.GetMany(ctx, runID, ids, opts)
}

func (s *observedStore) ReadUsage(ctx context.Context, runID, principal string) (_ canonical.RunUsage, err error) {
	defer s.report(ctx, opReadUsage, runID, "", 0, time.Now(), &err)
	if o, ok := s.next.(canonical.OwnedReader); ok {
		return o.ReadUsage(ctx, runID, principal)
	}
	if err := s.next.CheckPrincipal(ctx, runID, principal); err != nil {
		return canonical.RunUsage{}, err
	}
	return s.next.Usage(ctx, runID)
}

func (s *observedStore) CheckPrincipal(ctx context.Context, runID, principal string) (err error) {
	defer s.report(ctx, opCheckPrincipal, runID, "", 0, time.Now(), &err)
	return s.next.CheckPrincipal(ctx, runID, principal)
}

func (s *observedStore) Abandon(ctx context.Context, runID, toolCallID string) (_ canonical.Record, err error) {
	defer s.report(ctx, opAbandon, runID, toolCallID, 1, time.Now(), &err)
	return s.next.Abandon(ctx, runID, toolCallID)
}

func (s *observedStore) ExpiredLeases(ctx context.Context, runID string, max int) (_ []string, err error) {
	defer s.report(ctx, opExpiredLeases, runID, "", 0, time.Now(), &err)
	return s.next.ExpiredLeases(ctx, runID, max)
}

func (s *observedStore) Reap(ctx context.Context, opts canonical.ReapOptions) (_ canonical.ReapReport, err error) {
	defer s.report(ctx, opReap, "", "", 0, time.Now(), &err)
	return s.next.Reap(ctx, opts)
}

// report is deferred by every method: it sees the method's error, or its
// panic, which it reports and then lets continue.
func (s *observedStore) report(ctx context.Context, op storeOp, runID, toolCallID string, items int, start time.Time, err *error) {
	code := canonical.CodeOf(*err)
	v := recover()
	if v != nil {
		code = canonical.CodeStoreUnavailable
	}
	if canonical.ValidateRunID(runID) != nil {
		runID = ""
	}
	if canonical.ValidateToolCallID(toolCallID) != nil {
		toolCallID = ""
	}
	s.notify(ctx, StoreOp{
		Method: op.method, Script: op.script, Command: op.command, RunID: runID, ToolCallID: toolCallID, Items: items,
		Start: start, Duration: time.Since(start), Code: SafeCode(code),
	})
	if v != nil {
		panic(v)
	}
}

func (s *observedStore) notify(ctx context.Context, op StoreOp) {
	defer func() { _ = recover() }()
	s.obs.StoreOp(ctx, op)
}
