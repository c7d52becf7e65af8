package storetest

import (
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

const (
	alice = "user:alice"
	bob   = "user:bob"
)

// asPrincipal returns the request of beginReq made for principal.
func asPrincipal(req canonical.BeginRequest, principal string) canonical.BeginRequest {
	req.Principal = principal
	return req
}

// runView is everything of a run a principal's attempt could change.
type runView struct {
	usage   canonical.RunUsage
	records map[string]canonical.Record
	index   []string
	keys    map[string]bool
}

func viewRun(t *testing.T, h Harness, run string, ids ...string) runView {
	t.Helper()
	u, err := h.Store.Usage(ctx(), run)
	if err != nil {
		t.Fatalf("Usage(%s): %v", run, err)
	}
	u.TTL = 0 // time passes
	v := runView{usage: u, records: map[string]canonical.Record{}, index: index(t, h, run), keys: map[string]bool{}}
	for _, id := range ids {
		if rec, err := h.Store.Get(ctx(), run, id); err == nil {
			rec.TTL = 0
			v.records[id] = rec
		}
	}
	for k := range runKeys(t, h, run) {
		v.keys[k] = true
	}
	return v
}

func sameRun(t *testing.T, got, want runView) {
	t.Helper()
	if !reflect.DeepEqual(got.usage, want.usage) {
		t.Fatalf("run usage changed:\n got %+v\nwant %+v", got.usage, want.usage)
	}
	if !reflect.DeepEqual(got.index, want.index) {
		t.Fatalf("completion index changed: %v, was %v", got.index, want.index)
	}
	if !maps.Equal(got.keys, want.keys) {
		t.Fatalf("backend keys changed: %v, were %v", got.keys, want.keys)
	}
	if len(got.records) != len(want.records) {
		t.Fatalf("records: %d, were %d", len(got.records), len(want.records))
	}
	for id, w := range want.records {
		sameRecord(t, got.records[id], w)
	}
}

func testPrincipal(t *testing.T, f Factory) {
	t.Run("AnotherPrincipalChangesNothing", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
		mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c2"), alice)) // still PROJECTING
		if _, err := h.progress(t).ObserveProgress(ctx(), run, alice, false, 3); err != nil {
			t.Fatal(err)
		}
		before := viewRun(t, h, run, "c1", "c2", "c3")

		// Every refusal is RUN_FORBIDDEN, whatever the run would have said:
		// a finished id (DUPLICATE_TOOL_CALL), a running one
		// (TOOL_CALL_IN_PROGRESS), other limits (INVALID_ARGUMENT), a
		// future id (created), or the same owner token and request.
		for _, id := range []string{"c1", "c2", "c3"} {
			_, err := h.Store.Begin(ctx(), asPrincipal(beginReq(run, id), bob))
			wantCode(t, err, canonical.CodeRunForbidden)
		}
		other := asPrincipal(beginReq(run, "c3"), bob)
		other.Limits = canonical.Limits{MaxCallsPerRun: 1}
		_, err := h.Store.Begin(ctx(), other)
		wantCode(t, err, canonical.CodeRunForbidden)
		for range 4 {
			_, err := h.progress(t).ObserveProgress(ctx(), run, bob, false, 3)
			wantCode(t, err, canonical.CodeRunForbidden)
		}
		wantCode(t, h.Store.CloseRun(ctx(), run, bob), canonical.CodeRunForbidden)
		wantCode(t, h.Store.CheckPrincipal(ctx(), run, bob), canonical.CodeRunForbidden)
		// The empty principal is a principal too, not a wildcard.
		wantCode(t, h.Store.CheckPrincipal(ctx(), run, ""), canonical.CodeRunForbidden)
		sameRun(t, viewRun(t, h, run, "c1", "c2", "c3"), before)

		// The owner is unaffected: its future id is still its own, its
		// protocol counters count only its own reports.
		if err := h.Store.CheckPrincipal(ctx(), run, alice); err != nil {
			t.Fatalf("CheckPrincipal(owner) = %v", err)
		}
		rec := mustBegin(t, h.Store, asPrincipal(beginReq(run, "c3"), alice))
		if rec.Status != canonical.StatusProjecting || rec.Owner != "owner-c3" {
			t.Fatalf("the owner's Begin of c3 = %+v", rec)
		}
		st, err := h.progress(t).ObserveProgress(ctx(), run, alice, true, 3)
		if err != nil || st != (canonical.ProtocolState{Reports: 2, Pending: 0, Violations: 1}) {
			t.Fatalf("the owner's report: %+v, %v", st, err)
		}
		if err := h.Store.CloseRun(ctx(), run, alice); err != nil {
			t.Fatalf("the owner's CloseRun: %v", err)
		}
		u, _ := h.Store.Usage(ctx(), run)
		if u.Calls != 3 || !u.Closed {
			t.Fatalf("usage after the owner's calls = %+v", u)
		}
	})

	t.Run("ClosedRunSaysNothingToOthers", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
		if err := h.Store.CloseRun(ctx(), run, alice); err != nil {
			t.Fatal(err)
		}
		_, err := h.Store.Begin(ctx(), asPrincipal(beginReq(run, "c2"), bob))
		wantCode(t, err, canonical.CodeRunForbidden)
		_, err = h.Store.Begin(ctx(), asPrincipal(beginReq(run, "c2"), alice))
		wantCode(t, err, canonical.CodeRunInactive)
	})

	t.Run("OnlyABeginClaimsTheRun", func(t *testing.T) {
		h := f(t)
		closed, observed, begun := newRunID(t), newRunID(t)+"o", newRunID(t)+"b"
		// A run nobody wrote has nothing to read, for anybody.
		wantCode(t, h.Store.CheckPrincipal(ctx(), closed, bob), canonical.CodeNotFound)
		// A close or a progress report of a run nobody began claims
		// nothing: it is NOT_FOUND and writes nothing, so that a cheap
		// write cannot squat a run its intended owner begins later.
		wantCode(t, h.Store.CloseRun(ctx(), closed, bob), canonical.CodeNotFound)
		_, err := h.progress(t).ObserveProgress(ctx(), observed, bob, true, 3)
		wantCode(t, err, canonical.CodeNotFound)
		assertNothingStored(t, h, closed)
		assertNothingStored(t, h, observed)
		for _, run := range []string{closed, observed} {
			mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
			if err := h.Store.CheckPrincipal(ctx(), run, alice); err != nil {
				t.Fatalf("the first Begin's principal does not own the run: %v", err)
			}
			_, err := h.Store.Begin(ctx(), asPrincipal(beginReq(run, "c2"), bob))
			wantCode(t, err, canonical.CodeRunForbidden)
		}
		mustBegin(t, h.Store, beginReq(begun, "c1")) // the empty principal
		for _, run := range []string{begun} {
			_, err := h.Store.Begin(ctx(), asPrincipal(beginReq(run, "c9"), alice))
			wantCode(t, err, canonical.CodeRunForbidden)
			_, err = h.progress(t).ObserveProgress(ctx(), run, alice, true, 3)
			wantCode(t, err, canonical.CodeRunForbidden)
			wantCode(t, h.Store.CloseRun(ctx(), run, alice), canonical.CodeRunForbidden)
			wantCode(t, h.Store.CheckPrincipal(ctx(), run, alice), canonical.CodeRunForbidden)
		}
		if err := h.Store.CheckPrincipal(ctx(), begun, ""); err != nil {
			t.Fatalf("CheckPrincipal of the empty principal's run = %v", err)
		}
	})

	t.Run("PrincipalIsBounded", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		long := strings.Repeat("p", canonical.MaxPrincipalLen+1)
		_, err := h.Store.Begin(ctx(), asPrincipal(beginReq(run, "c1"), long))
		wantCode(t, err, canonical.CodeInvalidArgument)
		_, err = h.progress(t).ObserveProgress(ctx(), run, long, true, 3)
		wantCode(t, err, canonical.CodeInvalidArgument)
		wantCode(t, h.Store.CloseRun(ctx(), run, long), canonical.CodeInvalidArgument)
		wantCode(t, h.Store.CheckPrincipal(ctx(), run, "\xff"), canonical.CodeInvalidArgument)
		assertNothingStored(t, h, run, "c1")
		// The longest principal is stored as a tag of fixed size.
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), long[1:]))
		if err := h.Store.CheckPrincipal(ctx(), run, long[1:]); err != nil {
			t.Fatal(err)
		}
	})
}

// testLostState: the cases of a run whose state is lost while its records
// live, for a harness that can drop a run's state (Harness.DropRunState).
func testLostState(t *testing.T, f Factory) {
	t.Run("LostRunHasNoOwner", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
		mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
		h.DropRunState(t, run)
		// Its records live, its owner is gone: nobody may read them.
		for _, p := range []string{alice, bob} {
			wantCode(t, h.Store.CheckPrincipal(ctx(), run, p), canonical.CodeRunForbidden)
		}
	})

	// A lost run counts no progress report: the counters would live on
	// in a state without owner, and the next run of that id would inherit
	// them (a Violated it never earned).
	t.Run("LostRunCountsNoProgress", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
		mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
		h.DropRunState(t, run)
		keys := runKeys(t, h, run)
		for _, p := range []string{alice, bob} {
			for range 3 {
				// No state: NOT_FOUND, as for a run nobody began; either way
				// refused, counting nothing.
				_, err := h.progress(t).ObserveProgress(ctx(), run, p, false, 2)
				if c := canonical.CodeOf(err); c != canonical.CodeNotFound && c != canonical.CodeRunInactive {
					t.Fatalf("a report on the lost run: %v, want NOT_FOUND or RUN_INACTIVE", err)
				}
			}
		}
		if got := runKeys(t, h, run); len(got) != len(keys) {
			t.Fatalf("a refused report wrote: keys %v -> %v", keys, got)
		}
		u, err := h.Store.Usage(ctx(), run)
		if err != nil || !u.Lost || u.Protocol != (canonical.ProtocolState{}) {
			t.Fatalf("usage of the lost run: %+v, %v", u, err)
		}
	})
}
