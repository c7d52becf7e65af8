package storetest

import (
	"fmt"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

func testIndex(t *testing.T, f Factory) {
	t.Run("CompletionOrder", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		for i := 0; i < 5; i++ {
			mustBegin(t, h.Store, beginReq(run, fmt.Sprintf("c%d", i)))
		}
		// Complete in an order unlike the begin order; PROJECTING c2 stays out.
		order := []string{"c3", "c0", "c4", "c1"}
		for i, id := range order {
			if i%2 == 0 {
				mustComplete(t, h.Store, ready(run, id, canonical.EvidenceFound))
			} else {
				mustComplete(t, h.Store, failed(run, id, canonical.CodeExecutionFailed))
			}
			idx, err := h.Store.Completed(ctx(), run)
			if err != nil || fmt.Sprint(idx) != fmt.Sprint(order[:i+1]) {
				t.Fatalf("after completing %s: index = %v, %v; want %v", id, idx, err, order[:i+1])
			}
		}
		u, _ := h.Store.Usage(ctx(), run)
		if u.Completed != 4 || u.Calls != 5 {
			t.Fatalf("usage = %+v", u)
		}
	})

	t.Run("UnknownRunHasEmptyIndex", func(t *testing.T) {
		h := f(t)
		idx, err := h.Store.Completed(ctx(), newRunID(t))
		if err != nil || len(idx) != 0 {
			t.Fatalf("index = %v, %v", idx, err)
		}
	})

	t.Run("ClosedRunRefusesBegin", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, beginReq(run, "c1"))
		if err := h.Store.CloseRun(ctx(), run); err != nil {
			t.Fatal(err)
		}
		if err := h.Store.CloseRun(ctx(), run); err != nil {
			t.Fatalf("second close: %v", err)
		}
		_, err := h.Store.Begin(ctx(), beginReq(run, "c2"))
		wantCode(t, err, canonical.CodeRunInactive)
		if _, err := h.Store.Get(ctx(), run, "c2"); canonical.CodeOf(err) != canonical.CodeNotFound {
			t.Fatalf("refused begin left a record: %v", err)
		}
		// A call begun before the close may still finish.
		mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
		u, err := h.Store.Usage(ctx(), run)
		if err != nil || !u.Closed || u.Calls != 1 || u.Completed != 1 {
			t.Fatalf("usage = %+v, %v", u, err)
		}
		// Even the owner's retry of a new call is refused.
		_, err = h.Store.Begin(ctx(), beginReq(run, "c2"))
		wantCode(t, err, canonical.CodeRunInactive)
	})

	t.Run("CloseBeforeAnyCall", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		if err := h.Store.CloseRun(ctx(), run); err != nil {
			t.Fatal(err)
		}
		_, err := h.Store.Begin(ctx(), beginReq(run, "c1"))
		wantCode(t, err, canonical.CodeRunInactive)
		u, err := h.Store.Usage(ctx(), run)
		if err != nil || !u.Closed || u.Calls != 0 || u.TTL <= 0 {
			t.Fatalf("usage = %+v, %v", u, err)
		}
	})
}
