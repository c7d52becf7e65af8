package storetest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// isolated returns a harness whose store no other test writes to, for the
// cases of Reap, which sweep every run of a store.
func isolated(t *testing.T, f Factory) Harness {
	h := f(t)
	if h.Isolated == nil {
		return h
	}
	iso := h.Isolated(t)
	if iso.Store == nil || iso.Wait == nil {
		t.Fatal("storetest: Isolated must set Store and Wait")
	}
	if iso.AllKeys != nil {
		t.Cleanup(func() { assertEveryKeyHasTTL(t, iso) })
	}
	return iso
}

// call is one call of a reap case: run, id.
type call struct{ run, id string }

func (c call) String() string { return c.run + "/" + c.id }

// beginCalls begins n calls in each of runs with lease, completing every
// done-th (0: none), and returns the calls left in flight.
func beginCalls(t *testing.T, h Harness, runs []string, n int, lease time.Duration, done int) []call {
	t.Helper()
	var open []call
	for _, run := range runs {
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("c%03d", i)
			req := beginReq(run, id)
			req.Lease = lease
			mustBegin(t, h.Store, req)
			if done > 0 && i%done == done-1 {
				mustComplete(t, h.Store, ready(run, id, canonical.EvidenceFound))
				continue
			}
			open = append(open, call{run, id})
		}
	}
	return open
}

func reaped(rep canonical.ReapReport) []string {
	out := make([]string, 0, len(rep.Abandoned))
	for _, c := range rep.Abandoned {
		out = append(out, call{c.RunID, c.ToolCallID}.String())
	}
	sort.Strings(out)
	return out
}

func names(calls []call) []string {
	out := make([]string, 0, len(calls))
	for _, c := range calls {
		out = append(out, c.String())
	}
	sort.Strings(out)
	return out
}

func testReap(t *testing.T, f Factory) {
	t.Run("ClosesPassedLeasesOfEveryRunAndNothingElse", func(t *testing.T) {
		h := isolated(t, f)
		expired := []string{newRunID(t) + "-a", newRunID(t) + "-b"}
		live := []string{newRunID(t) + "-live"}
		stuck := beginCalls(t, h, expired, 4, shortLease, 4) // c003 completed
		running := beginCalls(t, h, live, 2, time.Hour, 0)
		// A run with both: one call stuck, one running.
		mixed := newRunID(t) + "-mixed"
		stuck = append(stuck, beginCalls(t, h, []string{mixed}, 1, shortLease, 0)...)
		req := beginReq(mixed, "long")
		req.Lease = time.Hour
		mustBegin(t, h.Store, req)
		running = append(running, call{mixed, "long"})
		h.Wait(2 * shortLease)

		before := map[string]canonical.Record{}
		for _, c := range running {
			before[c.String()] = mustGet(t, h.Store, c.run, c.id)
		}
		for _, run := range expired {
			before[run+"/c003"] = mustGet(t, h.Store, run, "c003")
		}
		rep, err := h.Store.Reap(ctx(), canonical.ReapOptions{})
		if err != nil {
			t.Fatalf("Reap: %+v, %v", rep, err)
		}
		if got, want := reaped(rep), names(stuck); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("abandoned %v, want %v", got, want)
		}
		if rep.Runs != 3 || rep.Expired != len(stuck) || rep.Errors != 0 || rep.Skipped != 0 || rep.Truncated || rep.Nodes < 1 || rep.Steps < rep.Nodes {
			t.Fatalf("report %+v", rep)
		}
		for _, c := range rep.Abandoned {
			rec := mustGet(t, h.Store, c.RunID, c.ToolCallID)
			if rec.Status != canonical.StatusError || rec.Error != canonical.CodeExecutionAbandoned || c.Tool != rec.Tool ||
				!c.LeaseUntil.Equal(rec.LeaseUntil) || !c.AbandonedAt.Equal(rec.UpdatedAt) || c.AbandonedAt.Before(c.LeaseUntil) {
				t.Fatalf("%s/%s: record %+v, reported %+v", c.RunID, c.ToolCallID, brief(rec), c)
			}
		}
		for k, want := range before {
			run, id, _ := strings.Cut(k, "/")
			sameRecord(t, mustGet(t, h.Store, run, id), want)
		}
		for _, run := range expired {
			u, err := h.Store.Usage(ctx(), run)
			if err != nil || u.Calls != 4 || u.InFlight != 0 || u.Completed != 4 {
				t.Fatalf("usage of %s = %+v, %v: abandoned calls stay counted, leave the leases, enter the index", run, u, err)
			}
		}
		// The owner of an abandoned call is refused; the running ones complete.
		_, err = h.Store.Complete(ctx(), ready(stuck[0].run, stuck[0].id, canonical.EvidenceFound))
		wantCode(t, err, canonical.CodeInvalidTransition)
		for _, c := range running {
			mustComplete(t, h.Store, ready(c.run, c.id, canonical.NoEvidence))
		}

		again, err := h.Store.Reap(ctx(), canonical.ReapOptions{})
		// (The runs may still be read: their leases are kept while they live.)
		if err != nil || len(again.Abandoned) != 0 || again.Expired != 0 || again.Skipped != 0 || again.Gone != 0 {
			t.Fatalf("second pass %+v, %v: nothing is left in flight", again, err)
		}
	})

	t.Run("ReapersAtOnceAbandonEachCallOnce", func(t *testing.T) {
		h := isolated(t, f)
		var runs []string
		for i := 0; i < 12; i++ {
			runs = append(runs, fmt.Sprintf("%s-%02d", newRunID(t), i))
		}
		stuck := beginCalls(t, h, runs, 9, shortLease, 3)
		var running []call
		for _, run := range runs[:3] {
			req := beginReq(run, "long")
			req.Lease = time.Hour
			mustBegin(t, h.Store, req)
			running = append(running, call{run, "long"})
		}
		h.Wait(2 * shortLease)

		const reapers = 8
		reps := make([]canonical.ReapReport, reapers)
		errs := make([]error, reapers)
		var wg sync.WaitGroup
		for i := range reapers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Small steps, so that the reapers meet on the same runs.
				reps[i], errs[i] = h.Store.Reap(ctx(), canonical.ReapOptions{Batch: 2})
			}()
		}
		wg.Wait()
		seen := map[string]int{}
		total := 0
		for i, rep := range reps {
			if errs[i] != nil || rep.Errors != 0 {
				t.Fatalf("reaper %d: %+v, %v", i, rep, errs[i])
			}
			for _, name := range reaped(rep) {
				seen[name]++
				total++
			}
		}
		if total != len(stuck) || len(seen) != len(stuck) {
			t.Fatalf("%d abandons reported for %d distinct calls; want each of the %d stuck calls once", total, len(seen), len(stuck))
		}
		for _, c := range stuck {
			if seen[c.String()] != 1 {
				t.Fatalf("%s reported %d times", c, seen[c.String()])
			}
			if rec := mustGet(t, h.Store, c.run, c.id); rec.Error != canonical.CodeExecutionAbandoned {
				t.Fatalf("%s: %+v", c, brief(rec))
			}
		}
		for _, c := range running {
			if rec := mustGet(t, h.Store, c.run, c.id); rec.Status != canonical.StatusProjecting {
				t.Fatalf("running call %s touched: %+v", c, brief(rec))
			}
		}
		for _, run := range runs {
			ids := index(t, h, run)
			if len(ids) != 9 {
				t.Fatalf("index of %s holds %d ids, want 9 (3 completed, 6 abandoned, each once): %v", run, len(ids), ids)
			}
		}
	})

	t.Run("DropsTheLeaseOfAnExpiredRecord", func(t *testing.T) {
		h := isolated(t, f)
		run := newRunID(t)
		short := beginReq(run, "short")
		short.TTL, short.Lease = 2*shortLease, shortLease
		mustBegin(t, h.Store, short)
		long := beginReq(run, "long")
		long.Lease = time.Hour
		mustBegin(t, h.Store, long)
		h.Wait(3 * shortLease) // the short call's record is gone; its lease entry lives with the run's leases
		rep, err := h.Store.Reap(ctx(), canonical.ReapOptions{})
		if err != nil || rep.Gone != 1 || len(rep.Abandoned) != 0 || rep.Expired != 1 {
			t.Fatalf("report %+v, %v; want the expired record's lease dropped, nothing abandoned", rep, err)
		}
		again, err := h.Store.Reap(ctx(), canonical.ReapOptions{})
		if err != nil || again.Gone != 0 || again.Expired != 0 || again.Runs != 0 {
			t.Fatalf("second pass %+v, %v", again, err)
		}
		if rec := mustGet(t, h.Store, run, "long"); rec.Status != canonical.StatusProjecting {
			t.Fatalf("running call touched: %+v", brief(rec))
		}
	})

	t.Run("OnePassPerLease", func(t *testing.T) {
		h := isolated(t, f)
		// An operator's pass (no lease) runs all the same.
		if rep, err := h.Store.Reap(ctx(), canonical.ReapOptions{}); err != nil || rep.Yielded {
			t.Fatalf("a pass without a lease: %+v, %v", rep, err)
		}
		// A pass takes the lease (longer than a pass lasts on a loaded
		// machine); once it has passed, the next pass runs.
		const lease = 10 * shortLease
		if rep, err := h.Store.Reap(ctx(), canonical.ReapOptions{Every: lease}); err != nil || rep.Yielded {
			t.Fatalf("a pass with a lease: %+v, %v", rep, err)
		}
		if rep, err := h.Store.Reap(ctx(), canonical.ReapOptions{Every: lease}); err != nil || !rep.Yielded {
			t.Fatalf("a pass within the lease: %+v, %v", rep, err)
		}
		h.Wait(lease + shortLease)
		if rep, err := h.Store.Reap(ctx(), canonical.ReapOptions{Every: shortLease}); err != nil || rep.Yielded {
			t.Fatalf("a pass after the lease: %+v, %v", rep, err)
		}
		stuck := beginCalls(t, h, []string{newRunID(t)}, 3, shortLease, 0)
		h.Wait(2 * shortLease)
		// Reapers that start together: one passes, the others yield and
		// look at nothing.
		const reapers = 4
		reps := make([]canonical.ReapReport, reapers)
		errs := make([]error, reapers)
		var wg sync.WaitGroup
		for i := range reapers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				reps[i], errs[i] = h.Store.Reap(ctx(), canonical.ReapOptions{Every: time.Hour})
			}()
		}
		wg.Wait()
		passed := 0
		for i, rep := range reps {
			if errs[i] != nil || rep.Errors != 0 {
				t.Fatalf("reaper %d: %+v, %v", i, rep, errs[i])
			}
			if rep.Yielded {
				if rep.Runs != 0 || rep.Expired != 0 || len(rep.Abandoned) != 0 || rep.Steps != 0 {
					t.Fatalf("a pass that yielded looked at something: %+v", rep)
				}
				continue
			}
			passed++
			if got, want := reaped(rep), names(stuck); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("the pass abandoned %v, want %v", got, want)
			}
		}
		if passed != 1 {
			t.Fatalf("%d of %d reapers passed within one lease, want 1", passed, reapers)
		}
		_, err := h.Store.Reap(ctx(), canonical.ReapOptions{Every: -time.Second})
		wantCode(t, err, canonical.CodeInvalidArgument)
	})

	t.Run("PassesAreBounded", func(t *testing.T) {
		h := isolated(t, f)
		run := newRunID(t)
		stuck := beginCalls(t, h, []string{run}, 7, shortLease, 0)
		h.Wait(2 * shortLease)
		// A run with more passed leases than a batch is read again.
		rep, err := h.Store.Reap(ctx(), canonical.ReapOptions{Batch: 2, MaxAbandon: 5})
		if err != nil || len(rep.Abandoned) != 5 || !rep.Truncated {
			t.Fatalf("pass with MaxAbandon 5: %+v, %v", rep, err)
		}
		rest, err := h.Store.Reap(ctx(), canonical.ReapOptions{Batch: 2})
		if err != nil || len(rest.Abandoned) != 2 || rest.Truncated {
			t.Fatalf("next pass: %+v, %v", rest, err)
		}
		rep.Abandoned = append(rep.Abandoned, rest.Abandoned...)
		if got, want := reaped(rep), names(stuck); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("abandoned %v, want %v", got, want)
		}
		for _, bad := range []canonical.ReapOptions{{Batch: -1}, {Batch: canonical.MaxReapBatch + 1}, {MaxAbandon: -1},
			{MaxAbandon: canonical.MaxIndexRead + 1}} {
			_, err := h.Store.Reap(ctx(), bad)
			wantCode(t, err, canonical.CodeInvalidArgument)
		}
	})
}
