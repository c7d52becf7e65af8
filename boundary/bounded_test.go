package boundary_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
	"github.com/toolcanon/toolcanon/observe"
)

// Nothing in the boundary runs unbounded: the tool and the projector each
// run under a deadline, and a record cannot expire while its call runs.

// A projector that ignores its context and sleeps past the run's deadline
// used to return READY. It is cut off at the deadline: the call is
// ERROR/PROJECTION_FAILED, raw kept as harness-only data.
func TestProjectorOverrunningRunDeadlineIsProjectionFailed(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		release := make(chan struct{})
		defer close(release)
		fx.run.Deadline = time.Now().Add(100 * time.Millisecond)
		fx.proj.fn = func(ctx context.Context, call canonical.Call, raw []byte) (canonical.Projection, error) {
			select { // ignores ctx: sleeps 2 s, or until the test ends
			case <-time.After(2 * time.Second):
			case <-release:
			}
			return fx.project(ctx, call, raw)
		}
		start := time.Now()
		res := fx.invoke("call_projslow")
		if d := time.Since(start); d > 1500*time.Millisecond {
			t.Errorf("Invoke waited %v for a projector past a 100 ms deadline", d)
		}
		fx.checkError(t, res, "call_projslow", canonical.CodeProjectionFailed, true)
		fx.calls(t, 1, 1)
		fx.checkRecord(t, "call_projslow", errRec(canonical.CodeProjectionFailed, fx.raw()))
	})
}

// The projection timeout bounds a projector when the run has no deadline,
// whether the projector honours its context or not.
func TestProjectionTimeout(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		release := make(chan struct{})
		defer close(release)
		fx.rebuild(nil, boundary.WithProjectionTimeout(50*time.Millisecond))
		var sawDeadline atomic.Bool
		exited := make(chan struct{})
		fx.proj.fn = func(ctx context.Context, _ canonical.Call, _ []byte) (canonical.Projection, error) {
			defer close(exited)
			_, ok := ctx.Deadline()
			sawDeadline.Store(ok)
			<-ctx.Done()
			return canonical.Projection{}, ctx.Err()
		}
		fx.checkError(t, fx.invoke("call_pt1"), "call_pt1", canonical.CodeProjectionFailed, true)
		fx.checkRecord(t, "call_pt1", errRec(canonical.CodeProjectionFailed, fx.raw()))
		<-exited // the abandoned projector is done before the next one is set
		if !sawDeadline.Load() {
			t.Error("the projector's context carries no deadline")
		}
		fx.proj.fn = func(ctx context.Context, call canonical.Call, raw []byte) (canonical.Projection, error) {
			<-release // ignores ctx
			return fx.project(ctx, call, raw)
		}
		start := time.Now()
		fx.checkError(t, fx.invoke("call_pt2"), "call_pt2", canonical.CodeProjectionFailed, true)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Invoke waited %v for a projector past a 50 ms projection timeout", d)
		}
		fx.checkRecord(t, "call_pt2", errRec(canonical.CodeProjectionFailed, fx.raw()))
		fx.calls(t, 2, 2)
	})
}

// A tool that ends its goroutine with runtime.Goexit returns nothing: that
// is a failure, not a success with an empty response.
func TestToolGoexitIsExecutionFailed(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
			runtime.Goexit()
			return fx.raw(), nil
		}
		res := fx.invoke("call_goexit")
		fx.checkError(t, res, "call_goexit", canonical.CodeExecutionFailed, true)
		fx.calls(t, 1, 0)
		fx.checkRecord(t, "call_goexit", errRec(canonical.CodeExecutionFailed, nil))
	})
}

func TestProjectorGoexitIsProjectionFailed(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.proj.fn = func(context.Context, canonical.Call, []byte) (canonical.Projection, error) {
			runtime.Goexit()
			return canonical.Projection{}, nil
		}
		res := fx.invoke("call_pgoexit")
		fx.checkError(t, res, "call_pgoexit", canonical.CodeProjectionFailed, true)
		fx.calls(t, 1, 1)
		fx.checkRecord(t, "call_pgoexit", errRec(canonical.CodeProjectionFailed, fx.raw()))
	})
}

// A record TTL of 100 ms with a 150 ms tool: the record expired while the
// tool ran, Complete found nothing, and a second Invoke of the same id ran
// the tool again. Preflight now refuses such a TTL: INVALID_ARGUMENT,
// nothing written, the tool never runs, however often it is asked.
func TestRecordTTLShorterThanTheCallIsRefused(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.TTL = 100 * time.Millisecond
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
			time.Sleep(150 * time.Millisecond)
			return fx.raw(), nil
		}
		for range 2 {
			res := fx.invoke("call_shortttl")
			fx.checkError(t, res, "call_shortttl", canonical.CodeInvalidArgument, false)
		}
		fx.calls(t, 0, 0)
		fx.checkNothingWritten(t)

		// The bound: kb.slow (1 s) + projection 6 s + store 2 x 100 ms + 10 ms.
		fx.rebuild(nil, boundary.WithProjectionTimeout(6*time.Second), boundary.WithStoreAttempts(2),
			boundary.WithStoreTimeout(100*time.Millisecond))
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) { return fx.raw(), nil }
		fx.run.TTL = 7210*time.Millisecond - time.Millisecond
		res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_under", "kb.slow", okInput))
		fx.checkError(t, res, "call_under", canonical.CodeInvalidArgument, false)
		fx.run.TTL = 7210 * time.Millisecond
		fx.checkReady(t, fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_at", "kb.slow", okInput)), canonical.EvidenceFound)
		fx.calls(t, 1, 1)
	})
}

// The same bound holds for a TTL the run does not give: the store's default
// is the record's TTL then. With a store default of 100 ms and a 300 ms
// tool, the first Invoke used to run the tool, fail to complete the expired
// record (STORE_UNAVAILABLE, executed) and run it again on the agent's
// retry. Now preflight refuses it, through an observing decorator too, and
// the tool never runs; a default long enough lets the call through.
func TestStoreDefaultTTLShorterThanTheCallIsRefused(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T, ttl time.Duration) canonical.Store{
		"memstore": func(_ *testing.T, ttl time.Duration) canonical.Store {
			return memstore.New(memstore.WithDefaultTTL(ttl))
		},
		"redisstore": func(t *testing.T, ttl time.Duration) canonical.Store {
			s, err := redisstore.New(redisstore.Options{Addrs: []string{redistest.Addr(t)}, DefaultTTL: ttl})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
	for name, open := range stores {
		for _, observed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/observed=%v", name, observed), func(t *testing.T) {
				t.Parallel()
				addr := func(testing.TB) string { return "" }
				if name == "redisstore" {
					addr = redistest.Addr
				}
				fx := newFixture(t, factory{name: name, open: func(testing.TB) canonical.Store { return open(t, 100*time.Millisecond) }, addr: addr})
				wrap := func(s canonical.Store) canonical.Store { return s }
				if observed {
					wrap = func(s canonical.Store) canonical.Store { return observe.Store(s, nopStoreObserver{}) }
				}
				fx.rebuild(wrap)
				fx.run.TTL = 0
				fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
					time.Sleep(300 * time.Millisecond)
					return fx.raw(), nil
				}
				for range 2 {
					fx.checkError(t, fx.invoke("call_defttl"), "call_defttl", canonical.CodeInvalidArgument, false)
				}
				fx.calls(t, 0, 0)
				fx.checkNothingWritten(t)

				fx.store = open(t, time.Hour)
				fx.rebuild(wrap)
				fx.checkReady(t, fx.invoke("call_longttl"), canonical.EvidenceFound)
				if rec, err := fx.store.Get(context.Background(), fx.run.ID, "call_longttl"); err != nil || rec.TTL <= 59*time.Minute {
					t.Fatalf("record %+v, %v: want the store's default TTL of 1h", rec.TTL, err)
				}
				fx.calls(t, 1, 1)
			})
		}
	}
}

type nopStoreObserver struct{}

func (nopStoreObserver) StoreOp(context.Context, observe.StoreOp) {}
