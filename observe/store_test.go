package observe_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/canonical/storetest"
	"github.com/toolcanon/toolcanon/internal/redistest"
	"github.com/toolcanon/toolcanon/observe"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// opRecorder keeps every store operation it is told of.
type opRecorder struct {
	mu  sync.Mutex
	ops []observe.StoreOp
}

func (r *opRecorder) StoreOp(_ context.Context, op observe.StoreOp) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
}

func (r *opRecorder) take() []observe.StoreOp {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.ops
	r.ops = nil
	return out
}

func redisStore(t *testing.T) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(redisstore.Options{Addrs: []string{redistest.Addr(t)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// stores are the two stores every decorator test runs on.
var stores = []struct {
	name string
	open func(t *testing.T) canonical.Store
}{
	{"memstore", func(*testing.T) canonical.Store { return memstore.New() }},
	{"redisstore", func(t *testing.T) canonical.Store { return redisStore(t) }},
}

// A wrapped store must still be a Store: the whole conformance suite passes
// through the decorator, while it reports each operation.
func TestObservedStoreConformance(t *testing.T) {
	t.Run("memstore", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) storetest.Harness {
			return storetest.Harness{Store: observe.Store(memstore.New(), &opRecorder{}), Wait: time.Sleep, RealClock: true}
		})
	})
	t.Run("redisstore", func(t *testing.T) {
		s := redisStore(t)
		storetest.Run(t, func(t *testing.T) storetest.Harness {
			return storetest.Harness{Store: observe.Store(s, &opRecorder{}), Wait: time.Sleep, RealClock: true,
				Isolated: func(t *testing.T) storetest.Harness {
					own, err := redisstore.New(redisstore.Options{Addrs: []string{redistest.Addr(t)}, Prefix: "tc:reap" + canonical.NewOwner()[:12]})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = own.Close() })
					return storetest.Harness{Store: observe.Store(own, &opRecorder{}), Wait: time.Sleep, RealClock: true}
				}}
		})
	})
}

// Every method is reported once, with its script or command, its identity,
// its code and a duration, and returns what the store returned.
func TestObservedStoreReportsEveryOperation(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			rec := &opRecorder{}
			raw := st.open(t)
			s := observe.Store(raw, rec)
			ctx := context.Background()
			run := "run-" + canonical.NewOwner()
			owner := canonical.NewOwner()
			begin := canonical.BeginRequest{RunID: run, ToolCallID: "call_1", Tool: "kb.search", Owner: owner,
				Request: []byte(`{"q":1}`), TTL: time.Minute}

			type step struct {
				do   func() error
				want observe.StoreOp
			}
			steps := []step{
				{func() error { _, err := s.Begin(ctx, begin); return err },
					observe.StoreOp{Method: "Begin", Script: "begin", Command: "EVALSHA", RunID: run, ToolCallID: "call_1", Items: 1}},
				{func() error {
					b := begin
					b.Owner = canonical.NewOwner()
					_, err := s.Begin(ctx, b)
					return err
				}, observe.StoreOp{Method: "Begin", Script: "begin", Command: "EVALSHA", RunID: run, ToolCallID: "call_1", Items: 1,
					Code: canonical.CodeToolCallInProgress}},
				{func() error {
					_, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: "call_1", Owner: owner,
						Status: canonical.StatusReady, Evidence: canonical.EvidenceFound, Raw: []byte(`{}`), Result: []byte(`{}`)})
					return err
				}, observe.StoreOp{Method: "Complete", Script: "complete", Command: "EVALSHA", RunID: run, ToolCallID: "call_1", Items: 1}},
				{func() error { _, err := s.Get(ctx, run, "call_1"); return err },
					observe.StoreOp{Method: "Get", Command: "HMGET", RunID: run, ToolCallID: "call_1", Items: 1}},
				{func() error { _, err := s.Get(ctx, run, "call_2"); return err },
					observe.StoreOp{Method: "Get", Command: "HMGET", RunID: run, ToolCallID: "call_2", Items: 1, Code: canonical.CodeNotFound}},
				{func() error {
					_, err := s.GetMany(ctx, run, []string{"call_1", "call_2", "call_3"}, canonical.ReadOptions{})
					return err
				},
					observe.StoreOp{Method: "GetMany", Command: "HMGET", RunID: run, Items: 3}},
				{func() error { _, _, err := s.Completed(ctx, run, 10); return err },
					observe.StoreOp{Method: "Completed", Command: "ZRANGE", RunID: run}},
				{func() error { _, err := s.Abandon(ctx, run, "call_1"); return err },
					observe.StoreOp{Method: "Abandon", Script: "abandon", Command: "EVALSHA", RunID: run, ToolCallID: "call_1", Items: 1,
						Code: canonical.CodeInvalidTransition}},
				{func() error { _, err := s.ExpiredLeases(ctx, run, 10); return err },
					observe.StoreOp{Method: "ExpiredLeases", Command: "ZRANGE", RunID: run}},
				// Refused before it sweeps anything: a pass would reach other tests' runs.
				{func() error { _, err := s.Reap(ctx, canonical.ReapOptions{Batch: -1}); return err },
					observe.StoreOp{Method: "Reap", Command: "ZRANGE", Code: canonical.CodeInvalidArgument}},
				{func() error { _, err := s.Usage(ctx, run); return err },
					observe.StoreOp{Method: "Usage", Command: "HGETALL", RunID: run}},
				{func() error { return s.CheckPrincipal(ctx, run, "someone else") },
					observe.StoreOp{Method: "CheckPrincipal", Command: "HGET", RunID: run, Code: canonical.CodeRunForbidden}},
				{func() error {
					_, err := s.(canonical.ProgressObserver).ObserveProgress(ctx, run, "", false, 3)
					return err
				},
					observe.StoreOp{Method: "ObserveProgress", Script: "observe_progress", Command: "EVALSHA", RunID: run}},
				{func() error { return s.CloseRun(ctx, run, "") },
					observe.StoreOp{Method: "CloseRun", Script: "close_run", Command: "EVALSHA", RunID: run}},
				{func() error { return s.CloseRun(ctx, "bad run {id}", "") },
					observe.StoreOp{Method: "CloseRun", Script: "close_run", Command: "EVALSHA", Code: canonical.CodeInvalidRunID}},
				{func() error { _, err := s.Get(ctx, run, "bad id!"); return err },
					observe.StoreOp{Method: "Get", Command: "HMGET", RunID: run, Items: 1, Code: canonical.CodeInvalidToolCallID}},
			}
			for i, stp := range steps {
				before := time.Now()
				err := stp.do()
				after := time.Now()
				if got := canonical.CodeOf(err); got != stp.want.Code {
					t.Fatalf("step %d (%s): err = %v, want code %q", i, stp.want.Method, err, stp.want.Code)
				}
				ops := rec.take()
				if len(ops) != 1 {
					t.Fatalf("step %d (%s): %d operations reported, want 1", i, stp.want.Method, len(ops))
				}
				op := ops[0]
				if op.Start.Before(before) || op.Start.Add(op.Duration).After(after) || op.Duration <= 0 {
					t.Errorf("step %d: op ran %v+%v, outside the call's [%v, %v]", i, op.Start, op.Duration, before, after)
				}
				op.Start, op.Duration = time.Time{}, 0
				if op != stp.want {
					t.Errorf("step %d:\n got %+v\nwant %+v", i, op, stp.want)
				}
			}
			// The decorated store answers what the store answers.
			want, err1 := raw.Get(ctx, run, "call_1")
			got, err2 := s.Get(ctx, run, "call_1")
			if err1 != nil || err2 != nil || string(got.Result) != string(want.Result) || got.Status != want.Status ||
				string(got.Request) != string(want.Request) || got.Owner != want.Owner {
				t.Errorf("decorated Get = %+v, %v; store's = %+v, %v", got, err2, want, err1)
			}
		})
	}
}

// hostileStore fails in ways that carry text: an unclassified error, a
// typed error whose code is free text, and a panic.
type hostileStore struct {
	canonical.Store
	secret string
}

func (h hostileStore) Begin(context.Context, canonical.BeginRequest) (canonical.Record, error) {
	return canonical.Record{}, errors.New("ERR " + h.secret + " tc:{run}:call:x")
}

func (h hostileStore) Complete(context.Context, canonical.Completion) (canonical.Record, error) {
	return canonical.Record{}, &canonical.Error{Code: canonical.Code(h.secret)}
}

func (h hostileStore) Usage(context.Context, string) (canonical.RunUsage, error) {
	panic(h.secret)
}

func TestObservedStoreReportsOnlyStableCodes(t *testing.T) {
	rec := &opRecorder{}
	secret := "SECRET" + canonical.NewOwner()
	s := observe.Store(hostileStore{Store: memstore.New(), secret: secret}, rec)
	ctx := context.Background()
	_, err := s.Begin(ctx, canonical.BeginRequest{RunID: "r1", ToolCallID: "c1"})
	if err == nil || !strings.Contains(err.Error(), secret) {
		t.Fatalf("the caller must still get the store's own error, got %v", err)
	}
	_, _ = s.Complete(ctx, canonical.Completion{RunID: "r1", ToolCallID: "c1"})
	func() {
		defer func() {
			if v := recover(); v != secret {
				t.Errorf("the store's panic must go on to the caller, got %v", v)
			}
		}()
		_, _ = s.Usage(ctx, "r1")
	}()
	ops := rec.take()
	if len(ops) != 3 {
		t.Fatalf("%d operations reported, want 3", len(ops))
	}
	for _, op := range ops {
		if op.Code != canonical.CodeStoreUnavailable {
			t.Errorf("%s reported code %q, want STORE_UNAVAILABLE", op.Method, op.Code)
		}
	}
}

type panickingObserver struct{ calls int }

func (p *panickingObserver) StoreOp(context.Context, observe.StoreOp) {
	p.calls++
	panic("observer bug")
}

func TestObservedStoreIgnoresObserverPanic(t *testing.T) {
	p := &panickingObserver{}
	s := observe.Store(memstore.New(), p)
	if _, err := s.Begin(context.Background(), canonical.BeginRequest{RunID: "r1", ToolCallID: "c1", Tool: "t",
		Owner: canonical.NewOwner(), Request: []byte(`{}`), TTL: time.Minute}); err != nil {
		t.Fatalf("Begin through a panicking observer: %v", err)
	}
	if err := s.CloseRun(context.Background(), "r1", ""); err != nil {
		t.Fatalf("CloseRun through a panicking observer: %v", err)
	}
	if u, err := s.Usage(context.Background(), "r1"); err != nil || !u.Closed {
		t.Fatalf("the store did not close the run: %+v, %v", u, err)
	}
	if p.calls != 3 {
		t.Errorf("observer called %d times, want 3", p.calls)
	}
	m := memstore.New()
	if got := observe.Store(m, nil); got != canonical.Store(m) {
		t.Errorf("a nil observer must leave the store as it is, got %T", got)
	}
}
