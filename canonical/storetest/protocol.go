package storetest

import (
	"sync"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

func testProtocol(t *testing.T, f Factory) {
	t.Run("RepairsNeverResetViolations", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, beginReq(run, "c1"))
		const threshold = 3
		steps := []struct {
			valid                        bool
			pending, violations, reports int64
			violated                     bool
		}{
			{false, 1, 1, 1, false}, // invalid: repairable observation
			{true, 0, 1, 2, false},  // repaired: pending reset, violations kept
			{false, 1, 2, 3, false},
			{false, 2, 3, 4, true}, // saturates exactly at the threshold
			{true, 0, 3, 5, true},  // a repair does not undo the violation
			{false, 1, 3, 6, true}, // saturated: stays at the threshold
		}
		for i, st := range steps {
			got, err := h.progress(t).ObserveProgress(ctx(), run, "", st.valid, threshold)
			want := canonical.ProtocolState{Reports: st.reports, Pending: st.pending, Violations: st.violations, Violated: st.violated}
			if err != nil || got != want {
				t.Fatalf("step %d (valid=%v): got %+v, %v; want %+v", i, st.valid, got, err, want)
			}
		}
		u, err := h.Store.Usage(ctx(), run)
		if err != nil || u.Protocol != (canonical.ProtocolState{Reports: 6, Pending: 1, Violations: 3, Violated: true}) || u.Calls != 1 {
			t.Fatalf("usage = %+v, %v", u, err)
		}
	})

	t.Run("ConcurrentReportsCountedExactly", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, beginReq(run, "c1"))
		const workers, each, threshold = 16, 10, 1000
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < each; i++ {
					if _, err := h.progress(t).ObserveProgress(ctx(), run, "", w%2 == 0, threshold); err != nil {
						t.Error(err)
					}
				}
			}(w)
		}
		wg.Wait()
		u, err := h.Store.Usage(ctx(), run)
		if err != nil || u.Protocol.Reports != workers*each || u.Protocol.Violations != workers/2*each || u.Protocol.Violated {
			t.Fatalf("protocol = %+v, %v; want %d reports, %d violations", u.Protocol, err, workers*each, workers/2*each)
		}
		if u.TTL <= 0 {
			t.Fatalf("run state created without a TTL: %v", u.TTL)
		}
	})

	t.Run("ReportOnARunNobodyBeganWritesNothing", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		for _, valid := range []bool{false, true} {
			_, err := h.progress(t).ObserveProgress(ctx(), run, alice, valid, 3)
			wantCode(t, err, canonical.CodeNotFound)
		}
		assertNothingStored(t, h, run)
		// Nobody claimed it: another principal begins it, and owns it.
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), bob))
		st, err := h.progress(t).ObserveProgress(ctx(), run, bob, true, 3)
		if err != nil || st != (canonical.ProtocolState{Reports: 1}) {
			t.Fatalf("the owner's first report: %+v, %v", st, err)
		}
	})

	t.Run("BadThreshold", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		for _, th := range []int64{0, -1} {
			_, err := h.progress(t).ObserveProgress(ctx(), run, "", false, th)
			wantCode(t, err, canonical.CodeInvalidArgument)
		}
		_, err := h.progress(t).ObserveProgress(ctx(), "bad:run", "", false, 3)
		wantCode(t, err, canonical.CodeInvalidRunID)
		assertNothingStored(t, h, run)
	})
}
