package storetest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

func testRunState(t *testing.T, f Factory) {
	t.Run("FirstBeginFixesTheRunsLimits", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		first := beginReq(run, "c0")
		first.Limits = canonical.Limits{MaxCallsPerRun: 2, MaxResultBytes: 64}
		mustBegin(t, h.Store, first)
		// A worker that joins without knowing the limits gets the run's.
		mustBegin(t, h.Store, beginReq(run, "c1"))
		_, err := h.Store.Begin(ctx(), beginReq(run, "c2"))
		wantCode(t, err, canonical.CodeBudgetExhausted)
		// Complete checks the run's limits, not the completer's idea of them.
		c := ready(run, "c1", canonical.EvidenceFound)
		c.Result = []byte(`{"e":"` + strings.Repeat("y", 64) + `"}`)
		_, err = h.Store.Complete(ctx(), c)
		wantCode(t, err, canonical.CodeResultTooLarge)
		u, err := h.Store.Usage(ctx(), run)
		want := canonical.Limits{MaxCallsPerRun: 2, MaxResultBytes: 64}.WithDefaults()
		if err != nil || u.Limits != want || u.Calls != 2 {
			t.Fatalf("usage = %+v, %v; want the first Begin's limits %+v", u, err, want)
		}
	})

	t.Run("DifferingLimitsRefusedAndWriteNothing", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		first := beginReq(run, "c0")
		first.Limits = canonical.Limits{MaxCallsPerRun: 5, MaxRunBytes: 4096}
		mustBegin(t, h.Store, first)
		before, _ := h.Store.Usage(ctx(), run)
		keysBefore := runKeys(t, h, run)
		for name, lim := range map[string]canonical.Limits{
			"calls per run":  {MaxCallsPerRun: 6},
			"calls per tool": {MaxCallsPerTool: 7},
			"run bytes":      {MaxCallsPerRun: 5, MaxRunBytes: 4097},
			"record bytes":   {MaxRecordBytes: 2 << 20},
			"result bytes":   {MaxResultBytes: 100},
		} {
			req := beginReq(run, "c1")
			req.Limits = lim
			_, err := h.Store.Begin(ctx(), req)
			if canonical.CodeOf(err) != canonical.CodeInvalidArgument {
				t.Errorf("%s: got %v, want INVALID_ARGUMENT", name, err)
			}
		}
		if _, err := h.Store.Get(ctx(), run, "c1"); canonical.CodeOf(err) != canonical.CodeNotFound {
			t.Fatalf("a refused Begin left a record: %v", err)
		}
		after, _ := h.Store.Usage(ctx(), run)
		if after.Calls != before.Calls || after.Bytes != before.Bytes || after.Limits != before.Limits {
			t.Fatalf("usage changed by refusals: %+v -> %+v", before, after)
		}
		if got := runKeys(t, h, run); len(got) != len(keysBefore) {
			t.Fatalf("keys changed by refusals: %v -> %v", keysBefore, got)
		}
		// The same non-zero limits, or some of them, join the run.
		same := beginReq(run, "c2")
		same.Limits = canonical.Limits{MaxCallsPerRun: 5}
		mustBegin(t, h.Store, same)
	})

	t.Run("ClosedRunStaysClosedAfterItsRecordsExpire", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "c1")
		req.TTL = 200 * time.Millisecond
		mustBegin(t, h.Store, req)
		if err := h.Store.CloseRun(ctx(), run, ""); err != nil {
			t.Fatal(err)
		}
		h.Wait(300 * time.Millisecond)
		if _, err := h.Store.Get(ctx(), run, "c1"); canonical.CodeOf(err) != canonical.CodeNotFound {
			t.Fatalf("the record outlived its TTL: %v", err)
		}
		_, err := h.Store.Begin(ctx(), beginReq(run, "c2"))
		wantCode(t, err, canonical.CodeRunInactive)
		u, err := h.Store.Usage(ctx(), run)
		if err != nil || !u.Closed {
			t.Fatalf("usage = %+v, %v; want a closed run", u, err)
		}
		ret := h.closedRetention()
		if slack := 5 * time.Second; u.TTL > ret || u.TTL < ret-slack {
			t.Fatalf("closed run's TTL %v, want about the retention %v", u.TTL, ret)
		}
	})

	t.Run("ClosedRunEndsWithItsRetention", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "c1")
		req.TTL = 200 * time.Millisecond
		mustBegin(t, h.Store, req)
		if err := h.Store.CloseRun(ctx(), run, ""); err != nil {
			t.Fatal(err)
		}
		if h.RealClock {
			// The retention is too long to wait for: its end is what the
			// state's TTL says.
			if u, err := h.Store.Usage(ctx(), run); err != nil || u.TTL > h.closedRetention() || u.TTL < h.closedRetention()-5*time.Second {
				t.Fatalf("closed run's TTL %v, %v; want the retention %v", u.TTL, err, h.closedRetention())
			}
			return
		}
		h.Wait(h.closedRetention() - time.Second)
		_, err := h.Store.Begin(ctx(), beginReq(run, "c2"))
		wantCode(t, err, canonical.CodeRunInactive)
		h.Wait(2 * time.Second)
		if _, err := h.Store.Usage(ctx(), run); canonical.CodeOf(err) != canonical.CodeNotFound {
			t.Fatalf("run state after its retention: %v, want NOT_FOUND", err)
		}
	})

	t.Run("CloseNeverShortensTheRunsTTL", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		long := beginReq(run, "c1")
		long.TTL = 2 * h.closedRetention()
		mustBegin(t, h.Store, long)
		if err := h.Store.CloseRun(ctx(), run, ""); err != nil {
			t.Fatal(err)
		}
		u, err := h.Store.Usage(ctx(), run)
		if err != nil || u.TTL <= h.closedRetention() {
			t.Fatalf("run TTL %v, %v: closing shortened it below its record's %v", u.TTL, err, long.TTL)
		}
	})

	// The cases of a lost run state need a harness that can lose it.
	if f(t).DropRunState != nil {
		testLostRunState(t, f)
	}

	t.Run("NoKeyWithoutTTLAfterAnyOutcome", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, beginReq(run, "a"))
		mustComplete(t, h.Store, ready(run, "a", canonical.EvidenceFound))
		mustBegin(t, h.Store, beginReq(run, "b"))
		big := failed(run, "b", canonical.CodeExecutionFailed)
		big.Raw = bytes.Repeat([]byte("r"), int(canonical.DefaultLimits.MaxRecordBytes))
		_, err := h.Store.Complete(ctx(), big)
		wantCode(t, err, canonical.CodeResultTooLarge)
		if _, err := h.progress(t).ObserveProgress(ctx(), run, "", false, 2); err != nil {
			t.Fatal(err)
		}
		if err := h.Store.CloseRun(ctx(), run, ""); err != nil {
			t.Fatal(err)
		}
		// A report or a close of a run nobody began writes no key at all.
		other := newRunID(t) + "x"
		_, err = h.progress(t).ObserveProgress(ctx(), other, "", true, 2)
		wantCode(t, err, canonical.CodeNotFound)
		wantCode(t, h.Store.CloseRun(ctx(), other+"y", ""), canonical.CodeNotFound)
		assertNothingStored(t, h, other)
		assertNothingStored(t, h, other+"y")
		for _, r := range []string{run, other, other + "y"} {
			for k, ttl := range runKeys(t, h, r) {
				if ttl <= 0 {
					t.Fatalf("key %s has no TTL (%v)", k, ttl)
				}
			}
		}
	})
}

// testLostRunState: a run whose state disappeared while its records live.
func testLostRunState(t *testing.T, f Factory) {
	t.Run("LostRunStateIsNotSilentlyReset", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		first := beginReq(run, "c1")
		first.Limits = canonical.Limits{MaxCallsPerRun: 1}
		first.TTL = 10 * time.Minute
		mustBegin(t, h.Store, first)
		h.DropRunState(t, run)

		// The outcome is still recorded: the record is the canonical one.
		c := ready(run, "c1", canonical.EvidenceFound)
		got := mustComplete(t, h.Store, c)
		rec := mustGet(t, h.Store, run, "c1")
		for _, r := range []canonical.Record{got, rec} {
			if r.Status != canonical.StatusReady || string(r.Result) != string(c.Result) {
				t.Fatalf("record after state loss = %+v", brief(r))
			}
		}
		if idx, _, err := h.Store.Completed(ctx(), run, 10); err != nil || len(idx) != 1 {
			t.Fatalf("index = %v, %v", idx, err)
		}
		// Whatever was recreated lives no longer than the record.
		for k, ttl := range runKeys(t, h, run) {
			if ttl <= 0 || ttl > rec.TTL+time.Second {
				t.Fatalf("key %s TTL %v after state loss; the record has %v left", k, ttl, rec.TTL)
			}
		}
		// The budget does not start again from zero.
		_, err := h.Store.Begin(ctx(), beginReq(run, "c2"))
		wantCode(t, err, canonical.CodeRunInactive)
		if !strings.Contains(err.Error(), "lost") {
			t.Fatalf("begin on a lost run: %v; want the operator told the run is lost", err)
		}
		u, err := h.Store.Usage(ctx(), run)
		if err != nil || !u.Lost || !u.Closed {
			t.Fatalf("usage after state loss = %+v, %v; want it marked lost and closed", u, err)
		}
	})

	t.Run("LostRunStateDetectedByBegin", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		for i, id := range []string{"done", "open"} {
			req := beginReq(run, id)
			req.Limits = canonical.Limits{MaxCallsPerRun: 3}
			mustBegin(t, h.Store, req)
			if i == 0 {
				mustComplete(t, h.Store, ready(run, id, canonical.EvidenceFound))
			}
		}
		h.DropRunState(t, run)
		_, err := h.Store.Begin(ctx(), beginReq(run, "c3"))
		wantCode(t, err, canonical.CodeRunInactive)
		if _, err := h.Store.Get(ctx(), run, "c3"); canonical.CodeOf(err) != canonical.CodeNotFound {
			t.Fatalf("a refused Begin left a record: %v", err)
		}
		// A progress report in between does not make the run new again: it
		// finds no state, and writes none.
		_, err = h.progress(t).ObserveProgress(ctx(), run, "", true, 3)
		wantCode(t, err, canonical.CodeNotFound)
		_, err = h.Store.Begin(ctx(), beginReq(run, "c3"))
		wantCode(t, err, canonical.CodeRunInactive)
		// The call in flight still completes.
		mustComplete(t, h.Store, ready(run, "open", canonical.NoEvidence))
	})
}

// runKeys returns the backend's keys of one run (with their TTLs), picked out
// of AllKeys by the run's hash tag; none when the harness has no AllKeys.
func runKeys(t *testing.T, h Harness, run string) map[string]time.Duration {
	t.Helper()
	out := map[string]time.Duration{}
	if h.AllKeys == nil {
		return out
	}
	tag := fmt.Sprintf("{%s}", run)
	for k, ttl := range h.AllKeys(t) {
		if strings.Contains(k, tag) {
			out[k] = ttl
		}
	}
	return out
}
