package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// shortLease is a lease that h.Wait(2*shortLease) outlives.
const shortLease = 50 * time.Millisecond

func testLease(t *testing.T, f Factory) {
	t.Run("DuplicateOfProjectingCallIsInProgress", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		first := mustBegin(t, h.Store, beginReq(run, "c1"))
		same := beginReq(run, "c1")
		same.Owner = "another-invocation"
		_, err := h.Store.Begin(ctx(), same)
		wantCode(t, err, canonical.CodeToolCallInProgress)
		changed := same
		changed.Request = []byte(`{"another":"request"}`)
		_, err = h.Store.Begin(ctx(), changed)
		wantCode(t, err, canonical.CodeToolCallInProgress)
		if got := mustGet(t, h.Store, run, "c1"); got.Owner != first.Owner || got.Status != canonical.StatusProjecting {
			t.Fatalf("record = %+v", brief(got))
		}
		// Once the first call is over, a second one is a plain duplicate.
		mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
		_, err = h.Store.Begin(ctx(), same)
		wantCode(t, err, canonical.CodeDuplicateToolCall)
		if u, _ := h.Store.Usage(ctx(), run); u.Calls != 1 {
			t.Fatalf("calls = %d, want 1", u.Calls)
		}
	})

	t.Run("LeaseIsKeptWithTheRecord", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "c1")
		req.Lease = 90 * time.Second
		rec := mustBegin(t, h.Store, req)
		if d := rec.LeaseUntil.Sub(rec.CreatedAt); d != req.Lease {
			t.Fatalf("lease until created+%v, want +%v", d, req.Lease)
		}
		if got := mustGet(t, h.Store, run, "c1"); !got.LeaseUntil.Equal(rec.LeaseUntil) {
			t.Fatalf("stored lease %v, begin said %v", got.LeaseUntil, rec.LeaseUntil)
		}
		// No lease means the record's whole TTL; a longer one is cut to it.
		for name, lease := range map[string]time.Duration{"none": 0, "longer than the TTL": 3 * recordTTL} {
			req := beginReq(run, "c-"+fmt.Sprint(lease.Milliseconds()))
			req.Lease = lease
			rec := mustBegin(t, h.Store, req)
			if d := rec.LeaseUntil.Sub(rec.CreatedAt); d != recordTTL {
				t.Fatalf("%s: lease until created+%v, want the TTL %v", name, d, recordTTL)
			}
		}
		for name, lease := range map[string]time.Duration{"negative": -time.Second, "sub-millisecond": time.Microsecond} {
			req := beginReq(run, "bad")
			req.Lease = lease
			_, err := h.Store.Begin(ctx(), req)
			if canonical.CodeOf(err) != canonical.CodeInvalidArgument {
				t.Errorf("%s lease: got %v, want INVALID_ARGUMENT", name, err)
			}
		}
	})

	t.Run("AbandonRefusedWhileTheLeaseRuns", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "c1")
		req.Lease = 10 * time.Minute
		mustBegin(t, h.Store, req)
		want := mustGet(t, h.Store, run, "c1")
		_, err := h.Store.Abandon(ctx(), run, "c1")
		wantCode(t, err, canonical.CodeInvalidTransition)
		sameRecord(t, mustGet(t, h.Store, run, "c1"), want)
		if idx, n, err := h.Store.Completed(ctx(), run, 10); err != nil || len(idx) != 0 || n != 0 {
			t.Fatalf("index = %v (%d), %v", idx, n, err)
		}
		// The owner completes as usual.
		mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
	})

	t.Run("AbandonAfterTheLeaseClosesTheCall", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "c1")
		req.Lease = shortLease
		req.TTL = 10 * time.Minute
		begun := mustBegin(t, h.Store, req)
		h.Wait(2 * shortLease)
		before := mustGet(t, h.Store, run, "c1")
		got, err := h.Store.Abandon(ctx(), run, "c1")
		if err != nil {
			t.Fatal(err)
		}
		stored := mustGet(t, h.Store, run, "c1")
		for _, r := range []canonical.Record{got, stored} {
			if r.Status != canonical.StatusError || r.Evidence != canonical.EvidenceError || r.Error != canonical.CodeExecutionAbandoned ||
				r.Result != nil || r.Raw != nil || r.Referencable() {
				t.Fatalf("abandoned record = %+v", brief(r))
			}
			if r.Owner != begun.Owner || r.Tool != begun.Tool || !r.CreatedAt.Equal(begun.CreatedAt) || r.RequestLen != len(req.Request) ||
				r.UpdatedAt.Before(begun.CreatedAt) || !r.LeaseUntil.Equal(begun.LeaseUntil) {
				t.Fatalf("abandoned record = %+v, begun %+v", brief(r), brief(begun))
			}
			if r.TTL > before.TTL || r.TTL < before.TTL-5*time.Second {
				t.Fatalf("TTL %v after abandon, %v before: the remaining TTL must be kept", r.TTL, before.TTL)
			}
		}
		if string(stored.Request) != string(req.Request) {
			t.Fatal("abandon changed the request")
		}
		if idx, n, _ := h.Store.Completed(ctx(), run, 10); len(idx) != 1 || idx[0] != "c1" || n != 1 {
			t.Fatalf("index = %v (%d), want [c1]", idx, n)
		}

		// The owner's late completion is refused and changes nothing.
		_, err = h.Store.Complete(ctx(), ready(run, "c1", canonical.EvidenceFound))
		wantCode(t, err, canonical.CodeInvalidTransition)
		_, err = h.Store.Complete(ctx(), failed(run, "c1", canonical.CodeExecutionAbandoned))
		wantCode(t, err, canonical.CodeInvalidTransition)
		sameRecord(t, mustGet(t, h.Store, run, "c1"), stored)

		// Abandoning again returns the outcome and appends nothing.
		again, err := h.Store.Abandon(ctx(), run, "c1")
		if err != nil || again.Error != canonical.CodeExecutionAbandoned || !again.UpdatedAt.Equal(stored.UpdatedAt) {
			t.Fatalf("second abandon = %+v, %v", brief(again), err)
		}
		if idx, _, _ := h.Store.Completed(ctx(), run, 10); len(idx) != 1 {
			t.Fatalf("index = %v after a second abandon", idx)
		}
		u, err := h.Store.Usage(ctx(), run)
		if err != nil || u.Calls != 1 || u.InFlight != 0 || u.Completed != 1 {
			t.Fatalf("usage = %+v, %v: an abandoned call stays counted and is no longer in flight", u, err)
		}
		// A same-owner Begin retry sees the abandoned record as it is.
		if late := mustBegin(t, h.Store, req); late.Error != canonical.CodeExecutionAbandoned {
			t.Fatalf("late begin retry = %+v", brief(late))
		}
		// A duplicate of it is a plain duplicate.
		other := req
		other.Owner = "someone-else"
		_, err = h.Store.Begin(ctx(), other)
		wantCode(t, err, canonical.CodeDuplicateToolCall)
	})

	t.Run("AbandonRefusals", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		_, err := h.Store.Abandon(ctx(), run, "nope")
		wantCode(t, err, canonical.CodeNotFound)
		assertNothingStored(t, h, run, "nope")
		_, err = h.Store.Abandon(ctx(), "bad:run", "c1")
		wantCode(t, err, canonical.CodeInvalidRunID)
		_, err = h.Store.Abandon(ctx(), run, "bad id")
		wantCode(t, err, canonical.CodeInvalidToolCallID)

		// A completed call is never abandoned, whatever its lease.
		req := beginReq(run, "c1")
		req.Lease = shortLease
		mustBegin(t, h.Store, req)
		mustComplete(t, h.Store, ready(run, "c1", canonical.NoEvidence))
		want := mustGet(t, h.Store, run, "c1")
		h.Wait(2 * shortLease)
		_, err = h.Store.Abandon(ctx(), run, "c1")
		wantCode(t, err, canonical.CodeInvalidTransition)
		sameRecord(t, mustGet(t, h.Store, run, "c1"), want)
	})

	t.Run("ExpiredLeasesListsOnlyPassedLeases", func(t *testing.T) {
		h := f(t)
		// "Nothing has expired yet" can only be judged while the shortest
		// lease runs: on a machine too slow to begin four calls within it,
		// the leases are made longer until it can.
		var run string
		lease := shortLease
		for ; ; lease *= 4 {
			run = newRunID(t)
			start := time.Now()
			for _, c := range []struct {
				id       string
				lease    time.Duration
				complete bool
			}{{"late2", 2 * lease, false}, {"late1", lease, false}, {"long", time.Hour, false}, {"done", lease, true}} {
				req := beginReq(run, c.id)
				req.Lease = c.lease
				mustBegin(t, h.Store, req)
				if c.complete {
					mustComplete(t, h.Store, ready(run, c.id, canonical.EvidenceFound))
				}
			}
			ids, err := h.Store.ExpiredLeases(ctx(), run, 10)
			if time.Since(start) >= lease && lease < 5*time.Second {
				continue // too slow to judge: again with longer leases
			}
			if err != nil || len(ids) != 0 {
				t.Fatalf("expired before any lease passed: %v, %v", ids, err)
			}
			break
		}
		h.Wait(3 * lease)
		ids, err := h.Store.ExpiredLeases(ctx(), run, 10)
		if err != nil || fmt.Sprint(ids) != "[late1 late2]" {
			t.Fatalf("expired = %v, %v; want [late1 late2], earliest first", ids, err)
		}
		if ids, _ := h.Store.ExpiredLeases(ctx(), run, 1); fmt.Sprint(ids) != "[late1]" {
			t.Fatalf("expired with max 1 = %v", ids)
		}
		if _, err := h.Store.Abandon(ctx(), run, "late1"); err != nil {
			t.Fatal(err)
		}
		if ids, _ := h.Store.ExpiredLeases(ctx(), run, 10); fmt.Sprint(ids) != "[late2]" {
			t.Fatalf("expired after abandoning late1 = %v", ids)
		}
		u, _ := h.Store.Usage(ctx(), run)
		if u.InFlight != 2 {
			t.Fatalf("in flight = %d, want 2 (late2, long)", u.InFlight)
		}
		for _, max := range []int{0, -1, canonical.MaxIndexRead + 1} {
			_, err := h.Store.ExpiredLeases(ctx(), run, max)
			wantCode(t, err, canonical.CodeInvalidArgument)
		}
		if ids, err := h.Store.ExpiredLeases(ctx(), newRunID(t), 10); err != nil || len(ids) != 0 {
			t.Fatalf("unknown run: %v, %v", ids, err)
		}
	})

	t.Run("AbandonRacesTheOwnersCompletion", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		const calls = 20
		for i := 0; i < calls; i++ {
			req := beginReq(run, fmt.Sprintf("c%d", i))
			req.Lease = shortLease
			mustBegin(t, h.Store, req)
		}
		h.Wait(2 * shortLease)
		var wg sync.WaitGroup
		completed := make([]error, calls)
		abandoned := make([][4]error, calls)
		start := make(chan struct{})
		for i := 0; i < calls; i++ {
			id := fmt.Sprintf("c%d", i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, completed[i] = h.Store.Complete(ctx(), ready(run, id, canonical.EvidenceFound))
			}()
			for j := range abandoned[i] {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, abandoned[i][j] = h.Store.Abandon(ctx(), run, id)
				}()
			}
		}
		close(start)
		wg.Wait()
		for i := 0; i < calls; i++ {
			id := fmt.Sprintf("c%d", i)
			rec := mustGet(t, h.Store, run, id)
			switch {
			case completed[i] == nil:
				if rec.Status != canonical.StatusReady {
					t.Fatalf("%s: completion succeeded but the record is %+v", id, brief(rec))
				}
				for _, err := range abandoned[i] {
					wantCode(t, err, canonical.CodeInvalidTransition)
				}
			default:
				wantCode(t, completed[i], canonical.CodeInvalidTransition)
				if rec.Error != canonical.CodeExecutionAbandoned {
					t.Fatalf("%s: completion refused but the record is %+v", id, brief(rec))
				}
				for _, err := range abandoned[i] {
					if err != nil {
						t.Fatalf("%s: abandon of an abandoned call: %v", id, err)
					}
				}
			}
		}
		if idx, n, _ := h.Store.Completed(ctx(), run, 100); len(idx) != calls || n != calls {
			t.Fatalf("index has %d entries (%d), want one per call (%d)", len(idx), n, calls)
		}
	})
}
