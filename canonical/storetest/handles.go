package storetest

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// testHandles covers the run's secret and its handle index
// (canonical.HandleIndex), for a store that keeps one.
func testHandles(t *testing.T, f Factory) {
	if _, ok := f(t).Store.(canonical.HandleIndex); !ok {
		t.Fatalf("%T keeps no handle index (canonical.HandleIndex)", f(t).Store)
	}
	sources := func(t *testing.T, h Harness, run, principal string, ids ...string) (canonical.HandleSources, error) {
		t.Helper()
		return h.Store.(canonical.HandleIndex).HandleSources(ctx(), run, principal, ids)
	}

	t.Run("OneSecretPerRun", func(t *testing.T) {
		h := f(t)
		run, other := newRunID(t), newRunID(t)
		a := mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
		b := mustBegin(t, h.Store, asPrincipal(beginReq(run, "c2"), alice))
		c := mustBegin(t, h.Store, asPrincipal(beginReq(other, "c1"), alice))
		if len(a.RunSecret) < 16 {
			t.Fatalf("Begin returned a run secret of %d bytes, want at least 16", len(a.RunSecret))
		}
		if !bytes.Equal(a.RunSecret, b.RunSecret) {
			t.Fatalf("two calls of one run got different secrets")
		}
		if bytes.Equal(a.RunSecret, c.RunSecret) {
			t.Fatalf("two runs got the same secret")
		}
		again := mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice)) // the same owner's retry
		if !bytes.Equal(again.RunSecret, a.RunSecret) {
			t.Fatalf("a retried Begin returned another secret")
		}
		got, err := sources(t, h, run, alice)
		if err != nil || !bytes.Equal(got.RunSecret, a.RunSecret) {
			t.Fatalf("HandleSources read secret %q, %v; Begin returned %q", got.RunSecret, err, a.RunSecret)
		}
		if out, _ := mustGet(t, h.Store, run, "c1").MarshalJSON(); bytes.Contains(out, a.RunSecret) {
			t.Fatalf("the record's export holds the run's secret: %s", out)
		}
	})

	t.Run("IndexNamesTheMintingCall", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		for _, id := range []string{"c1", "c2", "c3"} {
			mustBegin(t, h.Store, asPrincipal(beginReq(run, id), alice))
		}
		c1 := ready(run, "c1", canonical.EvidenceFound)
		c1.Handles = []string{"AAAAAAAA", "b-b_bbbb"}
		mustComplete(t, h.Store, c1)
		c2 := ready(run, "c2", canonical.EvidenceFound)
		c2.Handles = []string{"CCCCCCCC"}
		mustComplete(t, h.Store, c2)
		mustComplete(t, h.Store, c2) // a retry indexes nothing twice
		// An ERROR completion carries no handles and indexes none.
		bad := failed(run, "c3", canonical.CodeExecutionFailed)
		bad.Handles = []string{"DDDDDDDD"}
		if _, err := h.Store.Complete(ctx(), bad); canonical.CodeOf(err) != canonical.CodeInvalidTransition {
			t.Fatalf("an ERROR completion with handles: %v, want INVALID_TRANSITION", err)
		}
		mustComplete(t, h.Store, failed(run, "c3", canonical.CodeExecutionFailed))

		got, err := sources(t, h, run, alice, "b-b_bbbb", "CCCCCCCC", "DDDDDDDD", "AAAAAAAA", "zzzzzzzz")
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"c1", "c2", "", "c1", ""}; !slices.Equal(got.Calls, want) {
			t.Fatalf("HandleSources = %q, want %q", got.Calls, want)
		}
		if keys := runKeys(t, h, run); h.AllKeys != nil {
			for k, ttl := range keys {
				if ttl <= 0 || ttl > recordTTL+time.Minute {
					t.Fatalf("key %s has TTL %v: the index must expire with the records it names", k, ttl)
				}
			}
		}
	})

	t.Run("OwnerCheckedInTheRead", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
		c := ready(run, "c1", canonical.EvidenceFound)
		c.Handles = []string{"AAAAAAAA"}
		mustComplete(t, h.Store, c)
		_, err := sources(t, h, run, bob, "AAAAAAAA")
		wantCode(t, err, canonical.CodeRunForbidden)
		_, err = sources(t, h, newRunID(t), alice, "AAAAAAAA")
		wantCode(t, err, canonical.CodeNotFound)
	})

	t.Run("BadInput", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
		for _, ids := range [][]string{{"short"}, {"AAAA AAA"}, {"AAAAAAAAA"}, make([]string, canonical.MaxHandlesPerCall+1)} {
			_, err := sources(t, h, run, alice, ids...)
			wantCode(t, err, canonical.CodeInvalidArgument)
			c := ready(run, "c1", canonical.EvidenceFound)
			c.Handles = ids
			_, err = h.Store.Complete(ctx(), c)
			wantCode(t, err, canonical.CodeInvalidArgument)
		}
		if _, err := h.Store.Get(ctx(), run, "c1"); err != nil || mustGet(t, h.Store, run, "c1").Status != canonical.StatusProjecting {
			t.Fatalf("a refused completion changed the record: %v", err)
		}
	})
}
