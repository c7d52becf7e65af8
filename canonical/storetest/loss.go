package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// A run's keys besides its records, as Harness.Evict names them: its
// state, its calls (those in flight and the completion index) and its live
// marker.
const (
	keyRun   = "run"
	keyCalls = "calls"
	keyLive  = "live"
)

// lossSet is a set of a run's keys that disappeared.
type lossSet map[string]bool

func (l lossSet) String() string {
	var names []string
	for _, k := range []string{keyRun, keyCalls, keyLive} {
		if l[k] {
			names = append(names, k)
		}
	}
	return strings.Join(names, "+")
}

// subsets returns every non-empty subset of keys.
func subsets(keys ...string) []lossSet {
	var out []lossSet
	for mask := 1; mask < 1<<len(keys); mask++ {
		s := lossSet{}
		for i, k := range keys {
			if mask&(1<<i) != 0 {
				s[k] = true
			}
		}
		out = append(out, s)
	}
	return out
}

// testLoss: every subset of a run's keys disappears while its records live
// (and, in the first table, a call is in flight). The run is either detected
// as lost — Begin refused RUN_INACTIVE "lost", writing nothing; Usage Lost
// and Closed — or the subset is one the README states goes undetected:
//
//   - run state intact (only calls or live marker gone): the budgets are the
//     state's and hold; nothing is reported lost;
//   - run state, calls and live marker all gone: a new Begin cannot
//     know the surviving records and starts the run again; a call that was
//     in flight is then detected at its Complete (its record keeps the
//     generation of the lost state), which closes the run as lost.
func testLoss(t *testing.T, f Factory) {
	for _, lost := range subsets(keyRun, keyCalls, keyLive) {
		t.Run("InFlight/"+lost.String(), func(t *testing.T) {
			h := f(t)
			run := newRunID(t)
			limits := canonical.Limits{MaxCallsPerRun: 4}
			first := beginReq(run, "c1")
			first.Limits = limits
			mustBegin(t, h.Store, first)
			mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
			mustBegin(t, h.Store, beginReq(run, "c2")) // in flight
			for k := range lost {
				h.Evict(t, run, k)
			}
			all := len(lost) == 3
			detected := lost[keyRun] && !all

			u, err := h.Store.Usage(ctx(), run)
			switch {
			case all:
				if canonical.CodeOf(err) != canonical.CodeNotFound {
					t.Fatalf("usage with every key gone: %+v, %v; want NOT_FOUND", u, err)
				}
			case err != nil:
				t.Fatalf("usage: %v", err)
			case u.Lost != detected || detected && !u.Closed:
				t.Fatalf("usage = %+v; want Lost %v", u, detected)
			}

			keys := runKeys(t, h, run)
			rec, err := h.Store.Begin(ctx(), beginReq(run, "c3"))
			switch {
			case detected:
				wantLost(t, err)
				if got := runKeys(t, h, run); len(got) != len(keys) {
					t.Fatalf("a refused Begin wrote: keys %v -> %v", keys, got)
				}
			case err != nil:
				t.Fatalf("begin with %s gone: %v", lost, err)
			case all && rec.Limits != canonical.DefaultLimits:
				// The documented gap: the run starts again, with the defaults.
				t.Fatalf("begin after every key is gone: limits %+v, want the defaults", rec.Limits)
			case !all && rec.Limits != limits.WithDefaults():
				t.Fatalf("begin with %s gone: limits %+v, want the run's %+v", lost, rec.Limits, limits.WithDefaults())
			}

			// A lost run is refused to every principal: nobody can claim it.
			// One whose state lives keeps its owner.
			_, err = h.Store.Begin(ctx(), asPrincipal(beginReq(run, "c3-other"), "another-principal"))
			switch {
			case detected:
				wantLost(t, err)
				wantCode(t, h.Store.CheckPrincipal(ctx(), run, "another-principal"), canonical.CodeRunForbidden)
				// Nor does it tell anybody which ids it holds: a finished
				// id and one in flight are refused as the unused one is.
				for _, id := range []string{"c1", "c2"} {
					req := asPrincipal(beginReq(run, id), "another-principal")
					req.Owner = "owner-other-" + id
					_, err := h.Store.Begin(ctx(), req)
					wantLost(t, err)
				}
			case !lost[keyRun]:
				wantCode(t, err, canonical.CodeRunForbidden)
			}

			// The call in flight completes: its record is the canonical one.
			if got := mustComplete(t, h.Store, ready(run, "c2", canonical.NoEvidence)); got.Status != canonical.StatusReady {
				t.Fatalf("orphan's completion = %+v", brief(got))
			}
			// After it, a run that restarted is caught too.
			lostAfter := detected || all
			_, err = h.Store.Begin(ctx(), beginReq(run, "c4"))
			if lostAfter {
				wantLost(t, err)
			} else if err != nil {
				t.Fatalf("begin after the completion, %s gone: %v", lost, err)
			}
			if u, err := h.Store.Usage(ctx(), run); err != nil || u.Lost != lostAfter || lostAfter && !u.Closed {
				t.Fatalf("usage after the completion = %+v, %v; want Lost %v", u, err, lostAfter)
			}
		})
	}

	// No call in flight (the calls are kept while the run lives).
	// The run of the issue: one call, one refusal, then keys gone while the
	// record lives.
	for _, lost := range subsets(keyRun, keyCalls, keyLive) {
		t.Run("Completed/"+lost.String(), func(t *testing.T) {
			h := f(t)
			run := newRunID(t)
			first := beginReq(run, "c1")
			first.Limits = canonical.Limits{MaxCallsPerRun: 1}
			mustBegin(t, h.Store, first)
			mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
			_, err := h.Store.Begin(ctx(), beginReq(run, "c2"))
			wantCode(t, err, canonical.CodeBudgetExhausted)
			for k := range lost {
				h.Evict(t, run, k)
			}
			all := len(lost) == 3
			detected := lost[keyRun] && !all
			rec, err := h.Store.Begin(ctx(), beginReq(run, "c2"))
			switch {
			case detected:
				wantLost(t, err)
				if u, err := h.Store.Usage(ctx(), run); err != nil || !u.Lost || !u.Closed {
					t.Fatalf("usage = %+v, %v; want it lost and closed", u, err)
				}
				_, err = h.Store.Begin(ctx(), asPrincipal(beginReq(run, "c2"), "another-principal"))
				wantLost(t, err)
				wantCode(t, h.Store.CheckPrincipal(ctx(), run, "another-principal"), canonical.CodeRunForbidden)
			case !lost[keyRun]:
				wantCode(t, err, canonical.CodeBudgetExhausted) // the state holds the budget
			case err != nil || rec.Limits != canonical.DefaultLimits:
				// The documented gap: only the record survives, and no Begin
				// can know it.
				t.Fatalf("begin after state, calls and marker are gone: %+v, %v; want a new run with the defaults", rec.Limits, err)
			}
		})
	}

	t.Run("ClosedRunLosesItsState", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "c1")
		req.TTL = time.Minute
		mustBegin(t, h.Store, req)
		mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
		if err := h.Store.CloseRun(ctx(), run, ""); err != nil {
			t.Fatal(err)
		}
		// The live marker is kept as long as the closed state, past the
		// record: a close outlives its records even when its state is lost.
		if h.AllKeys != nil {
			var state, marker time.Duration
			for k, ttl := range runKeys(t, h, run) {
				switch {
				case strings.HasSuffix(k, ":run"):
					state = ttl
				case strings.HasSuffix(k, ":live"):
					marker = ttl
				}
			}
			// The two TTLs are read one after the other, so the one read
			// first may show a few milliseconds more of the same expiry.
			const readSkew = 100 * time.Millisecond
			if marker <= req.TTL || marker > state+readSkew || state-marker > 5*time.Second {
				t.Fatalf("after close: live marker TTL %v, state TTL %v, record TTL %v; want the marker with the state", marker, state, req.TTL)
			}
		}
		h.Evict(t, run, keyRun)
		_, err := h.Store.Begin(ctx(), beginReq(run, "c2"))
		wantLost(t, err)
	})

	// A lost run has no owner any more, and no principal makes itself its
	// owner by closing it or reporting progress on it: it stays refused to
	// everyone, its owner included, and its records unreadable.
	t.Run("LostRunIsClaimedByNobody", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		const alice, bob = "alice", "bob"
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
		mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
		h.Evict(t, run, keyRun)
		claimByNobody(t, h, run, bob, []string{alice, bob}, "c2-", func(t *testing.T, err error) {
			wantCode(t, err, canonical.CodeRunInactive) // closed, and lost
		})
	})

	// Every key but the records gone, with a call in flight: another
	// principal's Begin restarts the run, unknowing, and owns it. Once the
	// orphan's Complete finds the restart, the run is lost with no owner:
	// its new owner no more reads it (the orphan's outcome included) than
	// its old one, and nobody claims it back.
	t.Run("RestartedRunIsOwnedByNobodyOnceDetected", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		const alice, bob = "alice", "bob"
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
		mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c2"), alice)) // in flight
		for _, k := range []string{keyRun, keyCalls, keyLive} {
			h.Evict(t, run, k)
		}
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "b1"), bob))
		if err := h.Store.CheckPrincipal(ctx(), run, bob); err != nil {
			t.Fatalf("the restarted run before the orphan completes: %v; want bob its owner (the documented gap)", err)
		}
		mustComplete(t, h.Store, ready(run, "c2", canonical.NoEvidence))
		claimByNobody(t, h, run, bob, []string{alice, bob}, "c3-", wantLost)
		if u, err := h.Store.Usage(ctx(), run); err != nil || !u.Lost || !u.Closed {
			t.Fatalf("usage = %+v, %v; want it lost and closed", u, err)
		}
	})
}

// claimByNobody has claimant report progress on the lost run (refused:
// NOT_FOUND while the run has no state, RUN_INACTIVE once a complete left
// one without an owner; a lost run counts no report) and close it, which
// must make nobody its owner (NOT_FOUND while the run has no state, and
// writing nothing): each of principals is then refused the run
// (RUN_FORBIDDEN), and its Begin of a new id (prefix and the principal) is
// an error that refused accepts.
func claimByNobody(t *testing.T, h Harness, run, claimant string, principals []string, prefix string, refused func(*testing.T, error)) {
	t.Helper()
	if _, err := h.progress(t).ObserveProgress(ctx(), run, claimant, true, 3); canonical.CodeOf(err) != canonical.CodeNotFound &&
		canonical.CodeOf(err) != canonical.CodeRunInactive {
		t.Fatalf("a progress report on the lost run: %v, want NOT_FOUND or RUN_INACTIVE", err)
	}
	if err := h.Store.CloseRun(ctx(), run, claimant); err != nil && canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Fatalf("closing the lost run: %v", err)
	}
	for _, p := range principals {
		wantCode(t, h.Store.CheckPrincipal(ctx(), run, p), canonical.CodeRunForbidden)
		_, err := h.Store.Begin(ctx(), asPrincipal(beginReq(run, prefix+p), p))
		refused(t, err)
	}
}

// wantLost fails unless err is the RUN_INACTIVE of a lost run.
func wantLost(t *testing.T, err error) {
	t.Helper()
	wantCode(t, err, canonical.CodeRunInactive)
	if !strings.Contains(err.Error(), "lost") {
		t.Fatalf("begin on a lost run: %v; want the operator told the run is lost", err)
	}
}
