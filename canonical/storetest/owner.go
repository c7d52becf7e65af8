package storetest

import (
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

func testOwner(t *testing.T, f Factory) {
	// A duplicate of a finished call of the same tool and request carries
	// that call's record, read in the Begin itself, for a host that
	// replays duplicates; any other duplicate carries none.
	t.Run("DuplicateOfTheSameRequestCarriesTheRecord", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, beginReq(run, "c1"))
		again := beginReq(run, "c1")
		again.Owner = "another-owner"
		_, err := h.Store.Begin(ctx(), again)
		wantCode(t, err, canonical.CodeToolCallInProgress)
		done := mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
		_, err = h.Store.Begin(ctx(), again)
		wantCode(t, err, canonical.CodeDuplicateToolCall)
		first, ok := canonical.ReplayableOf(err)
		if !ok || first.Status != canonical.StatusReady || string(first.Result) != string(done.Result) ||
			first.Owner != "owner-c1" || first.Tool != again.Tool || first.RequestDigest != canonical.RequestDigest(again.Request) {
			t.Fatalf("the duplicate carries %+v, %v", first, ok)
		}
		other := again
		other.Request = []byte(`{"another":"request"}`)
		_, err = h.Store.Begin(ctx(), other)
		wantCode(t, err, canonical.CodeDuplicateToolCall)
		if _, ok := canonical.ReplayableOf(err); ok {
			t.Fatal("a duplicate of another request carries the record")
		}
		otherTool := again
		otherTool.Tool = "logs.query"
		_, err = h.Store.Begin(ctx(), otherTool)
		if _, ok := canonical.ReplayableOf(err); ok || canonical.CodeOf(err) != canonical.CodeDuplicateToolCall {
			t.Fatalf("a duplicate of another tool: %v", err)
		}
	})

	t.Run("DuplicateBeginOtherOwnerRefused", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		first := beginReq(run, "call_1")
		mustBegin(t, h.Store, first)
		mustComplete(t, h.Store, ready(run, "call_1", canonical.EvidenceFound))
		want := mustGet(t, h.Store, run, "call_1")

		second := beginReq(run, "call_1")
		second.Owner = "another-invocation"
		second.Request = []byte(`{"different":"request"}`)
		_, err := h.Store.Begin(ctx(), second)
		wantCode(t, err, canonical.CodeDuplicateToolCall)
		sameRecord(t, mustGet(t, h.Store, run, "call_1"), want)
		if u, _ := h.Store.Usage(ctx(), run); u.Calls != 1 {
			t.Fatalf("calls = %d, want 1", u.Calls)
		}

		// While the first is still PROJECTING the answer says so.
		mustBegin(t, h.Store, beginReq(run, "call_2"))
		second = beginReq(run, "call_2")
		second.Owner = "another-invocation"
		_, err = h.Store.Begin(ctx(), second)
		wantCode(t, err, canonical.CodeToolCallInProgress)
	})

	t.Run("RetriedBeginSameOwnerCountsOnce", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "c1")
		first := mustBegin(t, h.Store, req)
		again := mustBegin(t, h.Store, req)
		if again.Status != canonical.StatusProjecting || !again.CreatedAt.Equal(first.CreatedAt) {
			t.Fatalf("retry = %+v, want the first record", brief(again))
		}
		u, err := h.Store.Usage(ctx(), run)
		if err != nil || u.Calls != 1 || u.ToolCalls["kb.search"] != 1 || u.Bytes != int64(len(req.Request)) {
			t.Fatalf("usage after retry = %+v, %v", u, err)
		}
		// The same owner with another request is not a retry: while the
		// record is PROJECTING that is TOOL_CALL_IN_PROGRESS, after it
		// DUPLICATE_TOOL_CALL.
		changed := req
		changed.Request = []byte(`{"another":"request"}`)
		_, err = h.Store.Begin(ctx(), changed)
		wantCode(t, err, canonical.CodeToolCallInProgress)
		changedTool := req
		changedTool.Tool = "logs.query"
		_, err = h.Store.Begin(ctx(), changedTool)
		wantCode(t, err, canonical.CodeToolCallInProgress)
		// A retry after completion reports the record as it now is.
		mustComplete(t, h.Store, ready(run, "c1", canonical.NoEvidence))
		late := mustBegin(t, h.Store, req)
		if late.Status != canonical.StatusReady || late.Evidence != canonical.NoEvidence {
			t.Fatalf("late retry = %+v", brief(late))
		}
		for _, other := range []canonical.BeginRequest{changed, changedTool} {
			_, err = h.Store.Begin(ctx(), other)
			wantCode(t, err, canonical.CodeDuplicateToolCall)
		}
	})

	t.Run("RetriedCompleteSameOwnerReturnsStoredOutcome", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, beginReq(run, "c1"))
		c := ready(run, "c1", canonical.EvidenceFound)
		first := mustComplete(t, h.Store, c)
		again := mustComplete(t, h.Store, c)
		if again.Status != first.Status || again.Evidence != first.Evidence || !again.UpdatedAt.Equal(first.UpdatedAt) {
			t.Fatalf("retry = %+v, want %+v", brief(again), brief(first))
		}
		idx := index(t, h, run)
		if len(idx) != 1 {
			t.Fatalf("index = %v, want one entry", idx)
		}
		u, _ := h.Store.Usage(ctx(), run)
		if want := int64(len(beginReq(run, "c1").Request) + len(c.Raw) + len(c.Result)); u.Bytes != want {
			t.Fatalf("bytes = %d, want %d (counted once)", u.Bytes, want)
		}

		mustBegin(t, h.Store, beginReq(run, "c2"))
		e := failed(run, "c2", canonical.CodeToolTimeout)
		mustComplete(t, h.Store, e)
		if got := mustComplete(t, h.Store, e); got.Error != canonical.CodeToolTimeout {
			t.Fatalf("ERROR retry = %+v", brief(got))
		}
	})

	t.Run("CompleteByAnotherOwnerRefused", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, beginReq(run, "c1"))
		want := mustGet(t, h.Store, run, "c1")
		c := ready(run, "c1", canonical.EvidenceFound)
		c.Owner = "intruder"
		_, err := h.Store.Complete(ctx(), c)
		wantCode(t, err, canonical.CodeInvalidTransition)
		sameRecord(t, mustGet(t, h.Store, run, "c1"), want)
	})
}
