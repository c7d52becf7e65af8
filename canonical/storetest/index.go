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
			idx, _, err := h.Store.Completed(ctx(), run, 100)
			if err != nil || fmt.Sprint(idx) != fmt.Sprint(order[:i+1]) {
				t.Fatalf("after completing %s: index = %v, %v; want %v", id, idx, err, order[:i+1])
			}
		}
		u, _ := h.Store.Usage(ctx(), run)
		if u.Completed != 4 || u.Calls != 5 {
			t.Fatalf("usage = %+v", u)
		}
	})

	t.Run("ReadsAtMostMaxEntries", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		var all []string
		for i := 0; i < 7; i++ {
			id := fmt.Sprintf("c%d", i)
			mustBegin(t, h.Store, beginReq(run, id))
			mustComplete(t, h.Store, ready(run, id, canonical.EvidenceFound))
			all = append(all, id)
		}
		for _, max := range []int{1, 3, 7, 100} {
			ids, n, err := h.Store.Completed(ctx(), run, max)
			want := all[:min(max, len(all))]
			if err != nil || n != len(all) || fmt.Sprint(ids) != fmt.Sprint(want) {
				t.Fatalf("Completed(max %d) = %v (length %d), %v; want %v (length %d)", max, ids, n, err, want, len(all))
			}
		}
		for _, max := range []int{0, -1, canonical.MaxIndexRead + 1} {
			_, _, err := h.Store.Completed(ctx(), run, max)
			wantCode(t, err, canonical.CodeInvalidArgument)
		}
	})

	t.Run("UnknownRunHasEmptyIndex", func(t *testing.T) {
		h := f(t)
		idx, n, err := h.Store.Completed(ctx(), newRunID(t), 10)
		if err != nil || len(idx) != 0 || n != 0 {
			t.Fatalf("index = %v (%d), %v", idx, n, err)
		}
	})

	t.Run("ClosedRunRefusesBegin", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, beginReq(run, "c1"))
		if err := h.Store.CloseRun(ctx(), run, ""); err != nil {
			t.Fatal(err)
		}
		if err := h.Store.CloseRun(ctx(), run, ""); err != nil {
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

	t.Run("CloseBeforeAnyCallWritesNothing", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		wantCode(t, h.Store.CloseRun(ctx(), run, ""), canonical.CodeNotFound)
		assertNothingStored(t, h, run)
		// The run was not closed, nor claimed: its first Begin starts it.
		mustBegin(t, h.Store, beginReq(run, "c1"))
		u, err := h.Store.Usage(ctx(), run)
		if err != nil || u.Closed || u.Calls != 1 {
			t.Fatalf("usage = %+v, %v", u, err)
		}
	})
}
