package storetest

import (
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

func testBegin(t *testing.T, f Factory) {
	t.Run("CreatesOneProjectingRecord", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "call_8f2k.A-1")
		got := mustBegin(t, h.Store, req)
		rec := mustGet(t, h.Store, run, "call_8f2k.A-1")
		for _, r := range []canonical.Record{got, rec} {
			if r.Status != canonical.StatusProjecting || r.Evidence != canonical.EvidenceUnknown || r.Error != "" {
				t.Fatalf("state = %s/%s/%q, want PROJECTING/UNKNOWN", r.Status, r.Evidence, r.Error)
			}
			if r.RunID != run || r.ToolCallID != "call_8f2k.A-1" || r.Tool != "kb.search" || r.Owner != req.Owner {
				t.Fatalf("identity = %s/%s/%s/%s", r.RunID, r.ToolCallID, r.Tool, r.Owner)
			}
			if r.TTL <= 0 || r.TTL > recordTTL {
				t.Fatalf("TTL = %v, want in (0, %v]", r.TTL, recordTTL)
			}
			if r.CreatedAt.IsZero() || !r.CreatedAt.Equal(r.UpdatedAt) {
				t.Fatalf("created %v updated %v", r.CreatedAt, r.UpdatedAt)
			}
			if r.RequestDigest != canonical.RequestDigest(req.Request) {
				t.Fatalf("request digest %s", r.RequestDigest)
			}
		}
		if string(rec.Request) != string(req.Request) || rec.Raw != nil || rec.Result != nil {
			t.Fatalf("stored request %q raw %q result %q", rec.Request, rec.Raw, rec.Result)
		}
		u, err := h.Store.Usage(ctx(), run)
		if err != nil || u.Calls != 1 || u.ToolCalls["kb.search"] != 1 || u.Bytes != int64(len(req.Request)) || u.Closed || u.Completed != 0 {
			t.Fatalf("usage = %+v, %v", u, err)
		}
		if keys := runKeys(t, h, run); h.AllKeys != nil && len(keys) != 4 {
			t.Fatalf("backend keys = %v, want the record, the run, its leases and its live marker", keys)
		}
		assertBackendTTLs(t, h, run, recordTTL, recordTTL)
	})

	t.Run("KeepsLargeRequestWhole", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "big")
		big := make([]byte, 0, 300<<10)
		big = append(big, `{"input":{"text":"`...)
		for len(big) < 300<<10 {
			big = append(big, "é漢字abc"...)
		}
		big = append(big, `"}}`...)
		req.Request = big
		mustBegin(t, h.Store, req)
		if got := mustGet(t, h.Store, run, "big"); string(got.Request) != string(big) {
			t.Fatalf("request stored with %d bytes, want %d", len(got.Request), len(big))
		}
	})

	t.Run("RefusalsWriteNothing", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "c1")
		req.Limits = canonical.Limits{MaxRecordBytes: 8}
		_, err := h.Store.Begin(ctx(), req)
		wantCode(t, err, canonical.CodeResultTooLarge)
		assertNothingStored(t, h, run, "c1")

		req = beginReq(run, "c1")
		req.Limits = canonical.Limits{MaxRunBytes: 8}
		_, err = h.Store.Begin(ctx(), req)
		wantCode(t, err, canonical.CodeResultTooLarge)
		assertNothingStored(t, h, run, "c1")
	})
}

func testComplete(t *testing.T, f Factory) {
	for _, ev := range []canonical.Evidence{canonical.EvidenceFound, canonical.NoEvidence} {
		t.Run("Ready_"+string(ev), func(t *testing.T) {
			h := f(t)
			run := newRunID(t)
			mustBegin(t, h.Store, beginReq(run, "c1"))
			c := ready(run, "c1", ev)
			got := mustComplete(t, h.Store, c)
			rec := mustGet(t, h.Store, run, "c1")
			for _, r := range []canonical.Record{got, rec} {
				if r.Status != canonical.StatusReady || r.Evidence != ev || r.Error != "" {
					t.Fatalf("state = %s/%s/%q", r.Status, r.Evidence, r.Error)
				}
				if string(r.Raw) != string(c.Raw) || string(r.Result) != string(c.Result) {
					t.Fatalf("raw %q result %q", r.Raw, r.Result)
				}
				if !r.Referencable() {
					t.Fatal("READY record not referencable")
				}
			}
			if rec.UpdatedAt.Before(rec.CreatedAt) || got.Tool != "kb.search" {
				t.Fatalf("updated %v created %v tool %q", rec.UpdatedAt, rec.CreatedAt, got.Tool)
			}
			if string(rec.Request) != string(beginReq(run, "c1").Request) {
				t.Fatal("request changed by completion")
			}
		})
	}

	t.Run("Error", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, beginReq(run, "c1"))
		c := failed(run, "c1", canonical.CodeProjectionFailed)
		c.Raw = []byte(`{"harness":"only"}`)
		mustComplete(t, h.Store, c)
		rec := mustGet(t, h.Store, run, "c1")
		if rec.Status != canonical.StatusError || rec.Evidence != canonical.EvidenceError ||
			rec.Error != canonical.CodeProjectionFailed || rec.Result != nil || rec.Referencable() {
			t.Fatalf("record = %+v", brief(rec))
		}
		if string(rec.Raw) != `{"harness":"only"}` {
			t.Fatalf("raw = %q, want it kept as harness-only data", rec.Raw)
		}
	})

	t.Run("RefusedTransitionsChangeNothing", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, beginReq(run, "r"))
		mustComplete(t, h.Store, ready(run, "r", canonical.EvidenceFound))
		mustBegin(t, h.Store, beginReq(run, "e"))
		mustComplete(t, h.Store, failed(run, "e", canonical.CodeExecutionFailed))
		mustBegin(t, h.Store, beginReq(run, "p"))
		before := map[string]canonical.Record{}
		for _, id := range []string{"r", "e", "p"} {
			before[id] = mustGet(t, h.Store, run, id)
		}
		idxBefore := index(t, h, run)

		other := ready(run, "r", canonical.NoEvidence)
		other.Result = []byte(`{"other":true}`)
		withResult := failed(run, "p", canonical.CodeExecutionFailed)
		withResult.Result = []byte(`{}`)
		readyNoResult := ready(run, "p", canonical.EvidenceFound)
		readyNoResult.Result = nil
		readyBadJSON := ready(run, "p", canonical.EvidenceFound)
		readyBadJSON.Result = []byte(`{"x":`)
		errorUnknownCode := failed(run, "p", "SOMETHING_ELSE")
		backToProjecting := ready(run, "p", canonical.EvidenceFound)
		backToProjecting.Status = canonical.StatusProjecting
		cases := map[string]canonical.Completion{
			"READY to ERROR":               failed(run, "r", canonical.CodeExecutionFailed),
			"READY to READY":               other,
			"ERROR to READY":               ready(run, "e", canonical.EvidenceFound),
			"ERROR to ERROR, another code": failed(run, "e", canonical.CodeToolTimeout),
			"unknown evidence":             ready(run, "p", "MAYBE"),
			"READY with ERROR evidence":    ready(run, "p", canonical.EvidenceError),
			"READY with UNKNOWN evidence":  ready(run, "p", canonical.EvidenceUnknown),
			"READY without result":         readyNoResult,
			"READY with invalid JSON":      readyBadJSON,
			"ERROR with a result":          withResult,
			"ERROR with unknown code":      errorUnknownCode,
			"to PROJECTING":                backToProjecting,
		}
		for name, c := range cases {
			_, err := h.Store.Complete(ctx(), c)
			if canonical.CodeOf(err) != canonical.CodeInvalidTransition {
				t.Errorf("%s: got %v, want INVALID_TRANSITION", name, err)
			}
		}
		for id, want := range before {
			sameRecord(t, mustGet(t, h.Store, run, id), want)
		}
		idxAfter := index(t, h, run)
		if len(idxAfter) != len(idxBefore) {
			t.Fatalf("index grew from %v to %v", idxBefore, idxAfter)
		}
	})

	t.Run("UnknownRecordIsNotFound", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		_, err := h.Store.Complete(ctx(), ready(run, "nope", canonical.EvidenceFound))
		wantCode(t, err, canonical.CodeNotFound)
		assertNothingStored(t, h, run, "nope")
	})
}
