package storetest

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// continuer returns h.Store as a canonical.Continuer; the cases of
// Continue run only for stores that implement it.
func (h Harness) continuer(t *testing.T) canonical.Continuer {
	t.Helper()
	c, ok := h.Store.(canonical.Continuer)
	if !ok {
		t.Fatalf("%T is no canonical.Continuer", h.Store)
	}
	return c
}

// awaitReq is the await of beginReq(run, id)'s invocation, under token.
func awaitReq(run, id, token string) canonical.AwaitInput {
	return canonical.AwaitInput{RunID: run, ToolCallID: id, Owner: "owner-" + id, Token: token,
		State: []byte("state of " + id), Wait: 10 * time.Minute}
}

// continueReq continues beginReq(run, id) as alice, for the invocation owner.
func continueReq(run, id, owner, token string) canonical.ContinueCall {
	return canonical.ContinueCall{RunID: run, ToolCallID: id, Owner: owner, Principal: alice,
		RequestDigest: canonical.RequestDigest(beginReq(run, id).Request), Token: token, Lease: time.Minute}
}

// leaseFor fails unless rec is PROJECTING with a lease of d from its update.
func leaseFor(t *testing.T, rec canonical.Record, d time.Duration) {
	t.Helper()
	if rec.Status != canonical.StatusProjecting {
		t.Fatalf("record is %s, want PROJECTING", rec.Status)
	}
	if got := rec.LeaseUntil.Sub(rec.UpdatedAt); got != d {
		t.Fatalf("lease until updated+%v, want +%v", got, d)
	}
}

func testContinue(t *testing.T, f Factory) {
	t.Run("AwaitThenContinueThenComplete", func(t *testing.T) {
		h := f(t)
		c := h.continuer(t)
		run := newRunID(t)
		begun := mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
		token := canonical.NewOwner()
		rec, err := c.AwaitInput(ctx(), awaitReq(run, "c1", token))
		if err != nil {
			t.Fatalf("AwaitInput: %v", err)
		}
		leaseFor(t, rec, 10*time.Minute)
		if rec.Owner != "owner-c1" || rec.TTL <= 0 || rec.TTL > recordTTL {
			t.Fatalf("waiting record = %+v (TTL %v)", brief(rec), rec.TTL)
		}
		got := mustGet(t, h.Store, run, "c1")
		leaseFor(t, got, 10*time.Minute)

		next := canonical.NewOwner()
		cont, err := c.ContinueCall(ctx(), continueReq(run, "c1", next, token))
		if err != nil {
			t.Fatalf("ContinueCall: %v", err)
		}
		if cont.Record.Owner != next || string(cont.State) != "state of c1" || cont.Record.Tool != "kb.search" {
			t.Fatalf("continued = %+v, state %q", brief(cont.Record), cont.State)
		}
		leaseFor(t, cont.Record, time.Minute)
		leaseFor(t, mustGet(t, h.Store, run, "c1"), time.Minute)
		// The continuing invocation gets the run's limits and secret, as
		// the one that began the call did.
		if cont.Record.Limits != begun.Limits || string(cont.Record.RunSecret) != string(begun.RunSecret) || len(begun.RunSecret) == 0 {
			t.Fatalf("continued with limits %+v and secret %q, begun with %+v and %q",
				cont.Record.Limits, cont.Record.RunSecret, begun.Limits, begun.RunSecret)
		}

		// The first invocation holds the call no more; the continuing one
		// completes it, and the run counted one call.
		first := ready(run, "c1", canonical.EvidenceFound)
		_, err = h.Store.Complete(ctx(), first)
		wantCode(t, err, canonical.CodeInvalidTransition)
		done := first
		done.Owner = next
		if rec := mustComplete(t, h.Store, done); rec.Status != canonical.StatusReady {
			t.Fatalf("completed = %+v", brief(rec))
		}
		if u, _ := h.Store.Usage(ctx(), run); u.Calls != 1 {
			t.Fatalf("calls = %d, want 1", u.Calls)
		}
		if ids := index(t, h, run); len(ids) != 1 || ids[0] != "c1" {
			t.Fatalf("completion index = %v", ids)
		}
		// Finished: no continuation, no await.
		_, err = c.ContinueCall(ctx(), continueReq(run, "c1", next, token))
		wantCode(t, err, canonical.CodeDuplicateToolCall)
		again := awaitReq(run, "c1", token)
		again.Owner = next
		_, err = c.AwaitInput(ctx(), again)
		wantCode(t, err, canonical.CodeInvalidTransition)
	})

	t.Run("RetriesFindTheirOwn", func(t *testing.T) {
		h := f(t)
		c := h.continuer(t)
		run := newRunID(t)
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
		token := canonical.NewOwner()
		for range 2 {
			if _, err := c.AwaitInput(ctx(), awaitReq(run, "c1", token)); err != nil {
				t.Fatalf("AwaitInput (resent): %v", err)
			}
		}
		next := canonical.NewOwner()
		for range 2 {
			cont, err := c.ContinueCall(ctx(), continueReq(run, "c1", next, token))
			if err != nil || cont.Record.Owner != next || string(cont.State) != "state of c1" {
				t.Fatalf("ContinueCall (resent) = %+v %q, %v", brief(cont.Record), cont.State, err)
			}
		}
		// The token is taken: another invocation presenting it is refused
		// as a second Begin of a running call would be.
		before := mustGet(t, h.Store, run, "c1")
		_, err := c.ContinueCall(ctx(), continueReq(run, "c1", canonical.NewOwner(), token))
		wantCode(t, err, canonical.CodeToolCallInProgress)
		sameRecord(t, mustGet(t, h.Store, run, "c1"), before)

		// The continuing invocation may ask for input again, under a new
		// token; the old token continues nothing any more.
		second := awaitReq(run, "c1", canonical.NewOwner())
		second.Owner, second.State = next, nil
		if _, err := c.AwaitInput(ctx(), second); err != nil {
			t.Fatalf("AwaitInput (second round): %v", err)
		}
		_, err = c.ContinueCall(ctx(), continueReq(run, "c1", next, token))
		wantCode(t, err, canonical.CodeToolCallInProgress)
		last := canonical.NewOwner()
		cont, err := c.ContinueCall(ctx(), continueReq(run, "c1", last, second.Token))
		if err != nil || cont.Record.Owner != last || len(cont.State) != 0 {
			t.Fatalf("second round = %+v %q, %v", brief(cont.Record), cont.State, err)
		}
	})

	t.Run("AwaitRefusals", func(t *testing.T) {
		h := f(t)
		c := h.continuer(t)
		run := newRunID(t)
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "done"), alice))
		mustComplete(t, h.Store, ready(run, "done", canonical.EvidenceFound))
		before := viewRun(t, h, run, "c1", "done")
		beforeLease := mustGet(t, h.Store, run, "c1").LeaseUntil

		other := awaitReq(run, "c1", canonical.NewOwner())
		other.Owner = "another-invocation"
		_, err := c.AwaitInput(ctx(), other)
		wantCode(t, err, canonical.CodeInvalidTransition)
		_, err = c.AwaitInput(ctx(), awaitReq(run, "done", canonical.NewOwner()))
		wantCode(t, err, canonical.CodeInvalidTransition)
		_, err = c.AwaitInput(ctx(), awaitReq(run, "never", canonical.NewOwner()))
		wantCode(t, err, canonical.CodeNotFound)
		for name, a := range map[string]canonical.AwaitInput{
			"token with a space": {RunID: run, ToolCallID: "c1", Owner: "owner-c1", Token: "a b", Wait: time.Minute},
			"no token":           {RunID: run, ToolCallID: "c1", Owner: "owner-c1", Wait: time.Minute},
			"state too large": {RunID: run, ToolCallID: "c1", Owner: "owner-c1", Token: "t",
				State: []byte(strings.Repeat("s", canonical.MaxInputState+1)), Wait: time.Minute},
			"no wait": {RunID: run, ToolCallID: "c1", Owner: "owner-c1", Token: "t"},
		} {
			if _, err := c.AwaitInput(ctx(), a); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
				t.Errorf("%s: got %v, want INVALID_ARGUMENT", name, err)
			}
		}
		sameRun(t, viewRun(t, h, run, "c1", "done"), before)
		if got := mustGet(t, h.Store, run, "c1").LeaseUntil; !got.Equal(beforeLease) {
			t.Fatalf("lease moved to %v, was %v", got, beforeLease)
		}

		// Waiting under one token, the owner cannot wait under another.
		token := canonical.NewOwner()
		if _, err := c.AwaitInput(ctx(), awaitReq(run, "c1", token)); err != nil {
			t.Fatal(err)
		}
		_, err = c.AwaitInput(ctx(), awaitReq(run, "c1", canonical.NewOwner()))
		wantCode(t, err, canonical.CodeInvalidTransition)
		if _, err := c.ContinueCall(ctx(), continueReq(run, "c1", canonical.NewOwner(), token)); err != nil {
			t.Fatalf("the first token no longer continues: %v", err)
		}
	})

	t.Run("ContinueRefusalsChangeNothing", func(t *testing.T) {
		h := f(t)
		c := h.continuer(t)
		run := newRunID(t)
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "running"), alice))
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "done"), alice))
		mustComplete(t, h.Store, ready(run, "done", canonical.EvidenceFound))
		token := canonical.NewOwner()
		if _, err := c.AwaitInput(ctx(), awaitReq(run, "c1", token)); err != nil {
			t.Fatal(err)
		}
		before := viewRun(t, h, run, "running", "c1", "done")
		beforeLease := mustGet(t, h.Store, run, "c1").LeaseUntil

		next := canonical.NewOwner()
		wrongDigest := continueReq(run, "c1", next, token)
		wrongDigest.RequestDigest = canonical.RequestDigest([]byte(`{"another":"request"}`))
		byBob := continueReq(run, "c1", next, token)
		byBob.Principal = bob
		for _, tc := range []struct {
			name string
			c    canonical.ContinueCall
			want canonical.Code
		}{
			{"another principal", byBob, canonical.CodeRunForbidden},
			{"another token", continueReq(run, "c1", next, canonical.NewOwner()), canonical.CodeToolCallInProgress},
			{"another request", wrongDigest, canonical.CodeToolCallInProgress},
			{"a running call", continueReq(run, "running", next, token), canonical.CodeToolCallInProgress},
			{"a finished call", continueReq(run, "done", next, token), canonical.CodeDuplicateToolCall},
			{"no call", continueReq(run, "never", next, token), canonical.CodeNotFound},
		} {
			_, err := c.ContinueCall(ctx(), tc.c)
			if canonical.CodeOf(err) != tc.want {
				t.Errorf("%s: got %v, want %s", tc.name, err, tc.want)
			}
		}
		for name, cc := range map[string]canonical.ContinueCall{
			"short digest": {RunID: run, ToolCallID: "c1", Owner: next, Token: token, RequestDigest: "ab", Lease: time.Minute},
			"no token": {RunID: run, ToolCallID: "c1", Owner: next, Lease: time.Minute,
				RequestDigest: canonical.RequestDigest(beginReq(run, "c1").Request)},
			"no lease": {RunID: run, ToolCallID: "c1", Owner: next, Token: token,
				RequestDigest: canonical.RequestDigest(beginReq(run, "c1").Request)},
		} {
			if _, err := c.ContinueCall(ctx(), cc); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
				t.Errorf("%s: got %v, want INVALID_ARGUMENT", name, err)
			}
		}
		sameRun(t, viewRun(t, h, run, "running", "c1", "done"), before)
		if got := mustGet(t, h.Store, run, "c1").LeaseUntil; !got.Equal(beforeLease) {
			t.Fatalf("lease moved to %v, was %v", got, beforeLease)
		}
		// Still waiting for its own continuation.
		if _, err := c.ContinueCall(ctx(), continueReq(run, "c1", next, token)); err != nil {
			t.Fatalf("ContinueCall after the refusals: %v", err)
		}
	})

	t.Run("WaitIsTheLease", func(t *testing.T) {
		h := f(t)
		c := h.continuer(t)
		run := newRunID(t)
		// Begun with a short lease, the call is not reaped while it waits
		// for its input.
		req := asPrincipal(beginReq(run, "c1"), alice)
		req.Lease = shortLease
		mustBegin(t, h.Store, req)
		if _, err := c.AwaitInput(ctx(), awaitReq(run, "c1", canonical.NewOwner())); err != nil {
			t.Fatal(err)
		}
		h.Wait(2 * shortLease)
		if ids, err := h.Store.ExpiredLeases(ctx(), run, 10); err != nil || len(ids) != 0 {
			t.Fatalf("ExpiredLeases while waiting = %v, %v", ids, err)
		}
		_, err := h.Store.Abandon(ctx(), run, "c1")
		wantCode(t, err, canonical.CodeInvalidTransition)

		// A wait longer than the record lives is cut to its TTL.
		long := awaitReq(run, "c1", canonical.NewOwner())
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c2"), alice))
		long.ToolCallID, long.Owner, long.Wait = "c2", "owner-c2", 3*recordTTL
		rec, err := c.AwaitInput(ctx(), long)
		if err != nil {
			t.Fatal(err)
		}
		if d := rec.LeaseUntil.Sub(rec.UpdatedAt); d <= 0 || d > recordTTL {
			t.Fatalf("lease until updated+%v, want at most the TTL %v", d, recordTTL)
		}

		// Once the wait passes, the call is abandoned as any other, and a
		// late continuation finds it finished.
		short := awaitReq(run, "c3", canonical.NewOwner())
		short.Wait = shortLease
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c3"), alice))
		if _, err := c.AwaitInput(ctx(), short); err != nil {
			t.Fatal(err)
		}
		h.Wait(2 * shortLease)
		if ids, err := h.Store.ExpiredLeases(ctx(), run, 10); err != nil || len(ids) != 1 || ids[0] != "c3" {
			t.Fatalf("ExpiredLeases after the wait = %v, %v", ids, err)
		}
		if rec, err := h.Store.Abandon(ctx(), run, "c3"); err != nil || rec.Error != canonical.CodeExecutionAbandoned {
			t.Fatalf("Abandon = %+v, %v", brief(rec), err)
		}
		_, err = c.ContinueCall(ctx(), continueReq(run, "c3", canonical.NewOwner(), short.Token))
		wantCode(t, err, canonical.CodeDuplicateToolCall)
	})

	t.Run("AnEarlierLeaseIsReapedInTime", func(t *testing.T) {
		// A wait, or a continuation's lease, earlier than the lease the
		// call began with is found by a reap pass once it passes: a store
		// that schedules its passes (redisstore's due sets) moves the run.
		h := isolated(t, f)
		c := h.continuer(t)
		waiting, continued := newRunID(t), newRunID(t)
		for _, run := range []string{waiting, continued} {
			req := asPrincipal(beginReq(run, "c1"), alice)
			req.Lease = 10 * time.Minute
			mustBegin(t, h.Store, req)
		}
		short := awaitReq(waiting, "c1", canonical.NewOwner())
		short.Wait = shortLease
		if _, err := c.AwaitInput(ctx(), short); err != nil {
			t.Fatal(err)
		}
		token := canonical.NewOwner()
		if _, err := c.AwaitInput(ctx(), awaitReq(continued, "c1", token)); err != nil {
			t.Fatal(err)
		}
		next := continueReq(continued, "c1", canonical.NewOwner(), token)
		next.Lease = shortLease
		if _, err := c.ContinueCall(ctx(), next); err != nil {
			t.Fatal(err)
		}
		h.Wait(2 * shortLease)
		rep, err := h.Store.Reap(ctx(), canonical.ReapOptions{})
		if err != nil {
			t.Fatalf("Reap: %+v, %v", rep, err)
		}
		got := reaped(rep)
		sort.Strings(got)
		want := []string{call{continued, "c1"}.String(), call{waiting, "c1"}.String()}
		sort.Strings(want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("abandoned %v, want %v", got, want)
		}
	})

	t.Run("LostRunStateContinuesNothing", func(t *testing.T) {
		h := f(t)
		if h.DropRunState == nil {
			return
		}
		c := h.continuer(t)
		run := newRunID(t)
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
		token := canonical.NewOwner()
		if _, err := c.AwaitInput(ctx(), awaitReq(run, "c1", token)); err != nil {
			t.Fatal(err)
		}
		h.DropRunState(t, run)
		_, err := c.ContinueCall(ctx(), continueReq(run, "c1", canonical.NewOwner(), token))
		wantCode(t, err, canonical.CodeRunForbidden)
	})
}
