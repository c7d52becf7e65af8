package storetest

import (
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

// testReplies checks that every store fills in the same fields of every
// reply, so that a caller never sees a field that only one store sets.
func testReplies(t *testing.T, f Factory) {
	t.Run("BeginReturnsTheWholeRecord", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "c1")
		first := mustBegin(t, h.Store, req)
		wantReply(t, "begin", first, req, nil)

		again := mustBegin(t, h.Store, req)
		wantReply(t, "begin retried while PROJECTING", again, req, nil)
		if !again.CreatedAt.Equal(first.CreatedAt) || !again.LeaseUntil.Equal(first.LeaseUntil) {
			t.Fatalf("retry created %v lease %v, first %v %v", again.CreatedAt, again.LeaseUntil, first.CreatedAt, first.LeaseUntil)
		}

		c := ready(run, "c1", canonical.EvidenceFound)
		done := mustComplete(t, h.Store, c)
		wantReply(t, "complete", done, req, &c)
		retried := mustComplete(t, h.Store, c)
		wantReply(t, "complete retried", retried, req, &c)

		late := mustBegin(t, h.Store, req)
		if late.Status != canonical.StatusReady || string(late.Result) != string(c.Result) || late.RawLen != len(c.Raw) ||
			late.Raw != nil || string(late.Request) != string(req.Request) || late.RequestLen != len(req.Request) {
			t.Fatalf("begin retried after completion = %+v raw %d, want the stored outcome with its result and lengths",
				brief(late), late.RawLen)
		}
	})

	t.Run("ErrorRepliesCarryTheirLengths", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "c1")
		mustBegin(t, h.Store, req)
		c := failed(run, "c1", canonical.CodeProjectionFailed)
		c.Raw = []byte(`{"kept":"for the harness"}`)
		got := mustComplete(t, h.Store, c)
		wantReply(t, "complete ERROR", got, req, &c)
		stored := mustGet(t, h.Store, run, "c1")
		if stored.RequestLen != got.RequestLen || stored.RawLen != got.RawLen || stored.Tool != got.Tool ||
			stored.RequestDigest != got.RequestDigest || !stored.LeaseUntil.Equal(got.LeaseUntil) {
			t.Fatalf("reply %+v disagrees with the stored record %+v", brief(got), brief(stored))
		}
	})
}

// wantReply checks the fields every Begin or Complete reply carries. A
// Complete reply carries the completion's raw and result (when stored); a
// Begin reply carries the request but never the raw response.
func wantReply(t *testing.T, what string, r canonical.Record, req canonical.BeginRequest, c *canonical.Completion) {
	t.Helper()
	if r.RunID != req.RunID || r.ToolCallID != req.ToolCallID || r.Tool != req.Tool || r.Owner != req.Owner ||
		r.RequestDigest != canonical.RequestDigest(req.Request) || r.RequestLen != len(req.Request) {
		t.Fatalf("%s: identity or request fields = %+v (request %d bytes, digest %q)", what, brief(r), r.RequestLen, r.RequestDigest)
	}
	if r.CreatedAt.IsZero() || r.UpdatedAt.Before(r.CreatedAt) || r.TTL <= 0 || r.TTL > req.TTL {
		t.Fatalf("%s: times created %v updated %v TTL %v", what, r.CreatedAt, r.UpdatedAt, r.TTL)
	}
	if r.LeaseUntil.Before(r.CreatedAt) || r.LeaseUntil.After(r.CreatedAt.Add(req.TTL)) {
		t.Fatalf("%s: lease until %v, created %v, TTL %v", what, r.LeaseUntil, r.CreatedAt, req.TTL)
	}
	if c == nil {
		if string(r.Request) != string(req.Request) || r.Raw != nil || r.RawLen != 0 || r.Result != nil {
			t.Fatalf("%s: request %q raw %q (%d bytes) result %q", what, r.Request, r.Raw, r.RawLen, r.Result)
		}
		return
	}
	wantResult := c.Result
	if c.Status != canonical.StatusReady {
		wantResult = nil
	}
	if r.Request != nil || string(r.Raw) != string(c.Raw) || r.RawLen != len(c.Raw) || string(r.Result) != string(wantResult) {
		t.Fatalf("%s: request %q raw %q (%d bytes) result %q", what, r.Request, r.Raw, r.RawLen, r.Result)
	}
}
