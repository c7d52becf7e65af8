package boundary_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
)

// Begin's lease is the tool's timeout plus the boundary's margin.
func TestLeaseIsToolTimeoutPlusMargin(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.TTL = time.Hour
		fx.checkReady(t, fx.invoke("call_l1"), canonical.EvidenceFound)
		rec, err := fx.store.Get(context.Background(), fx.run.ID, "call_l1")
		if err != nil || rec.LeaseUntil.Sub(rec.CreatedAt) != 30*time.Second+boundary.DefaultLeaseMargin {
			t.Fatalf("lease until created+%v, %v; want the 30s timeout + %v", rec.LeaseUntil.Sub(rec.CreatedAt), err, boundary.DefaultLeaseMargin)
		}
		fx.rebuild(nil, boundary.WithLeaseMargin(25*time.Second))
		fx.checkReady(t, fx.invoke("call_l2"), canonical.EvidenceFound)
		rec, err = fx.store.Get(context.Background(), fx.run.ID, "call_l2")
		if err != nil || rec.LeaseUntil.Sub(rec.CreatedAt) != 55*time.Second {
			t.Fatalf("lease until created+%v, %v; want 55s", rec.LeaseUntil.Sub(rec.CreatedAt), err)
		}
	})
}

func TestLeaseMarginMustBePositive(t *testing.T) {
	fx := newFixture(t, factories[0])
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := boundary.New(fx.store, fx.reg, testPolicy(fx.marker), boundary.WithLeaseMargin(d))
		if canonical.CodeOf(err) != canonical.CodeInvalidArgument {
			t.Errorf("margin %v: %v, want INVALID_ARGUMENT", d, err)
		}
	}
}

// WithLeaseMargin(1ms) used to be accepted: every call whose projection and
// recording took longer than a millisecond past the tool's timeout could be
// abandoned while its worker was still recording it. The margin must cover
// the projection timeout and the store's retry budget, whatever the order
// of the options.
func TestLeaseMarginMustCoverProjectionAndStoreRetries(t *testing.T) {
	fx := newFixture(t, factories[0])
	build := func(opts ...boundary.Option) error {
		_, err := boundary.New(fx.store, fx.reg, testPolicy(fx.marker), opts...)
		return err
	}
	// Defaults: projection 5s + 3 attempts of 5s + pauses of 10ms and 20ms.
	if err := build(boundary.WithLeaseMargin(time.Millisecond)); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
		t.Fatalf("margin 1ms: %v, want INVALID_ARGUMENT", err)
	}
	need := 5*time.Second + 15*time.Second + 30*time.Millisecond
	if err := build(boundary.WithLeaseMargin(need - time.Millisecond)); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
		t.Fatalf("margin %v: %v, want INVALID_ARGUMENT", need-time.Millisecond, err)
	}
	if err := build(boundary.WithLeaseMargin(need)); err != nil {
		t.Fatalf("margin %v: %v", need, err)
	}
	// The same bound with the other options given after the margin.
	small := []boundary.Option{boundary.WithProjectionTimeout(20 * time.Millisecond), boundary.WithStoreAttempts(2),
		boundary.WithStoreTimeout(10 * time.Millisecond)}
	// A projection timeout under the 5s a cancelled tool may take to
	// return: the grace is what the margin must cover then.
	if err := build(append([]boundary.Option{boundary.WithLeaseMargin(50 * time.Millisecond)}, small...)...); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
		t.Fatalf("margin 50ms under a 5s cancel grace: %v, want INVALID_ARGUMENT", err)
	}
	if err := build(append([]boundary.Option{boundary.WithLeaseMargin(5*time.Second + 29*time.Millisecond)}, small...)...); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
		t.Fatalf("margin 5.029s over a 5.03s need: %v, want INVALID_ARGUMENT", err)
	}
	if err := build(append([]boundary.Option{boundary.WithLeaseMargin(5*time.Second + 30*time.Millisecond)}, small...)...); err != nil {
		t.Fatalf("margin 5.03s: %v", err)
	}
}

// A cancelled tool may take 5s to return: a record TTL must outlive that
// too when the projection timeout is shorter, or a record could expire
// while its call still runs.
func TestRecordLifeCountsTheCancelGrace(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.rebuild(nil, boundary.WithProjectionTimeout(20*time.Millisecond), boundary.WithStoreAttempts(2),
			boundary.WithStoreTimeout(10*time.Millisecond), boundary.WithLeaseMargin(10*time.Second))
		// The 30s tool, 20ms of projection and 30ms of store retries fit
		// in 31s; with the 5s grace they do not.
		fx.run.TTL = 31 * time.Second
		fx.checkError(t, fx.invoke("call_g1"), "call_g1", canonical.CodeInvalidArgument, false)
		fx.run.TTL = 35*time.Second + 30*time.Millisecond
		fx.checkReady(t, fx.invoke("call_g2"), canonical.EvidenceFound)
	})
}

// A worker that joins a run without knowing its limits is held to the
// run's, not to the defaults: here its projection is over the run's agent
// limit, so it is refused before the store, with the raw response kept.
func TestJoiningWorkerUsesTheRunsLimits(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.Limits = canonical.Limits{MaxResultBytes: 1024}
		fx.checkReady(t, fx.invoke("call_j1"), canonical.EvidenceFound)

		fx.run.Limits = canonical.Limits{} // another worker: "the run's"
		fx.proj.fn = func(context.Context, canonical.Call, []byte) (canonical.Projection, error) {
			return canonical.Projection{Evidence: canonical.EvidenceFound,
				Result: []byte(`{"excerpt":"` + strings.Repeat("x", 2000) + `"}`)}, nil
		}
		fx.checkError(t, fx.invoke("call_j2"), "call_j2", canonical.CodeResultTooLarge, true)
		fx.checkRecord(t, "call_j2", errRec(canonical.CodeResultTooLarge, fx.raw()))
		u, err := fx.store.Usage(context.Background(), fx.run.ID)
		if err != nil || u.Limits.MaxResultBytes != 1024 || u.Calls != 2 {
			t.Fatalf("usage = %+v, %v", u, err)
		}
	})
}

// A worker that brings other limits to a run is refused before anything runs.
func TestWorkerWithOtherLimitsIsRefused(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.Limits = canonical.Limits{MaxCallsPerRun: 5}
		fx.checkReady(t, fx.invoke("call_w1"), canonical.EvidenceFound)
		fx.run.Limits = canonical.Limits{MaxCallsPerRun: 6}
		fx.checkError(t, fx.invoke("call_w2"), "call_w2", canonical.CodeInvalidArgument, false)
		fx.calls(t, 1, 1)
		fx.checkAbsent(t, "call_w2")
	})
}

// A call whose completion never reached the store stays PROJECTING until its
// lease passes; then Abandon closes it, and a replay answers with the stored
// EXECUTION_ABANDONED instead of inviting a second execution.
func TestAbandonedCallIsClosedAndReplayed(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fs := &failingStore{marker: fx.marker}
		fs.completeFails.Store(-1)
		// The lease is kb.slow's 1s timeout and 50ms, shorter than any
		// margin the boundary accepts (which covers a cancelled tool's 5s
		// grace), so that the test need not wait for it.
		fx.rebuild(func(s canonical.Store) canonical.Store {
			fs.Store = leaseOf{s, time.Second + 50*time.Millisecond}
			return fs
		},
			boundary.WithReplay(),
			boundary.WithProjectionTimeout(20*time.Millisecond), boundary.WithStoreAttempts(1), boundary.WithStoreTimeout(20*time.Millisecond))
		res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_ab", "kb.slow", okInput))
		fx.checkError(t, res, "call_ab", canonical.CodeStoreUnavailable, true)
		if _, err := fx.store.Abandon(context.Background(), fx.run.ID, "call_ab"); canonical.CodeOf(err) != canonical.CodeInvalidTransition {
			t.Fatalf("abandon while the lease runs: %v", err)
		}
		again := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_ab", "kb.slow", okInput))
		fx.checkError(t, again, "call_ab", canonical.CodeToolCallInProgress, false)

		time.Sleep(time.Second + 100*time.Millisecond) // kb.slow's 1s timeout + the margin
		ids, err := fx.store.ExpiredLeases(context.Background(), fx.run.ID, 10)
		if err != nil || len(ids) != 1 || ids[0] != "call_ab" {
			t.Fatalf("expired leases = %v, %v", ids, err)
		}
		if _, err := fx.store.Abandon(context.Background(), fx.run.ID, "call_ab"); err != nil {
			t.Fatal(err)
		}
		replayed := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_ab", "kb.slow", okInput))
		fx.checkError(t, replayed, "call_ab", canonical.CodeExecutionAbandoned, false)
		if !replayed.Replayed() {
			t.Error("the stored EXECUTION_ABANDONED was not marked replayed")
		}
		fx.calls(t, 1, 1)
		w := errRec(canonical.CodeExecutionAbandoned, nil)
		w.tool = "kb.slow"
		fx.checkRecord(t, "call_ab", w)
	})
}

// leaseOf begins every call with the lease d.
type leaseOf struct {
	canonical.Store
	d time.Duration
}

func (s leaseOf) Begin(ctx context.Context, req canonical.BeginRequest) (canonical.Record, error) {
	req.Lease = s.d
	return s.Store.Begin(ctx, req)
}

// shortLease begins every call with a lease of 1 ms, so that a test can
// abandon a call while its tool still runs, as a reaper does when a worker
// is slower than its lease.
type shortLease struct{ canonical.Store }

func (s shortLease) Begin(ctx context.Context, req canonical.BeginRequest) (canonical.Record, error) {
	req.Lease = time.Millisecond
	return s.Store.Begin(ctx, req)
}

// A call abandoned while its tool ran: the worker's completion is refused
// (INVALID_TRANSITION), and the agent used to be told STORE_UNAVAILABLE,
// which invites a retry with a new id. It is told what the record holds,
// EXECUTION_ABANDONED, and nothing the tool answered is shown.
func TestAbandonedWhileRunningReachesTheAgentAsAbandoned(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.rebuild(func(s canonical.Store) canonical.Store { return shortLease{s} })
		abandoned := make(chan error, 1)
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
			time.Sleep(20 * time.Millisecond)
			_, err := fx.store.Abandon(context.Background(), fx.run.ID, "call_reaped")
			abandoned <- err
			return fx.raw(), nil
		}
		res := fx.invoke("call_reaped")
		if err := <-abandoned; err != nil {
			t.Fatalf("abandon while the tool ran: %v", err)
		}
		fx.checkError(t, res, "call_reaped", canonical.CodeExecutionAbandoned, true)
		fx.checkRecord(t, "call_reaped", errRec(canonical.CodeExecutionAbandoned, nil))

		// A completion refused for another reason is not shown as abandoned:
		// the record, still PROJECTING, was not closed by a reaper.
		fx.rebuild(func(s canonical.Store) canonical.Store { return refusingComplete{s} })
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) { return fx.raw(), nil }
		fx.checkError(t, fx.invoke("call_refused"), "call_refused", canonical.CodeStoreUnavailable, true)
	})
}

// refusingComplete refuses every completion as INVALID_TRANSITION, writing
// nothing.
type refusingComplete struct{ canonical.Store }

func (refusingComplete) Complete(context.Context, canonical.Completion) (canonical.Record, error) {
	return canonical.Record{}, canonical.Errorf(canonical.CodeInvalidTransition, "complete: refused by the test")
}
