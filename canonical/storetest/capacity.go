package storetest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

func testCapacity(t *testing.T, f Factory) {
	t.Run("CallsPerRun", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		lim := canonical.Limits{MaxCallsPerRun: 3}
		for i := 0; i < 3; i++ {
			req := beginReq(run, fmt.Sprintf("c%d", i))
			req.Limits = lim
			mustBegin(t, h.Store, req)
		}
		for i := 3; i < 6; i++ {
			req := beginReq(run, fmt.Sprintf("c%d", i))
			req.Limits = lim
			_, err := h.Store.Begin(ctx(), req)
			wantCode(t, err, canonical.CodeBudgetExhausted)
			if _, err := h.Store.Get(ctx(), run, req.ToolCallID); canonical.CodeOf(err) != canonical.CodeNotFound {
				t.Fatalf("refused call %s left a record: %v", req.ToolCallID, err)
			}
		}
		u, _ := h.Store.Usage(ctx(), run)
		if u.Calls != 3 || u.ToolCalls["kb.search"] != 3 {
			t.Fatalf("refusals were counted: %+v", u)
		}
	})

	t.Run("CallsPerTool", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		lim := canonical.Limits{MaxCallsPerTool: 2}
		for i := 0; i < 2; i++ {
			req := beginReq(run, fmt.Sprintf("a%d", i))
			req.Limits = lim
			mustBegin(t, h.Store, req)
		}
		req := beginReq(run, "a2")
		req.Limits = lim
		_, err := h.Store.Begin(ctx(), req)
		wantCode(t, err, canonical.CodeBudgetExhausted)
		other := beginReq(run, "b0")
		other.Tool, other.Limits = "logs.query", lim
		mustBegin(t, h.Store, other)
		u, _ := h.Store.Usage(ctx(), run)
		if u.Calls != 3 || u.ToolCalls["kb.search"] != 2 || u.ToolCalls["logs.query"] != 1 {
			t.Fatalf("usage = %+v", u)
		}
	})

	t.Run("RecordBytesOnComplete", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "c1")
		req.Limits = canonical.Limits{MaxRecordBytes: 1024, MaxResultBytes: 512}
		mustBegin(t, h.Store, req)
		c := ready(run, "c1", canonical.EvidenceFound)
		c.Raw = bytes.Repeat([]byte("x"), 1024)
		rec, err := h.Store.Complete(ctx(), c)
		wantCode(t, err, canonical.CodeResultTooLarge)
		stored := mustGet(t, h.Store, run, "c1")
		for _, r := range []canonical.Record{rec, stored} {
			if r.Status != canonical.StatusError || r.Evidence != canonical.EvidenceError || r.Error != canonical.CodeResultTooLarge {
				t.Fatalf("record = %+v, want ERROR/RESULT_TOO_LARGE", brief(r))
			}
			if r.Raw != nil || r.Result != nil {
				t.Fatalf("oversized payload stored (raw %d bytes, result %d bytes): never truncate, never keep", len(r.Raw), len(r.Result))
			}
		}
		u, _ := h.Store.Usage(ctx(), run)
		if u.Bytes != int64(len(req.Request)) {
			t.Fatalf("bytes = %d, refused payload counted", u.Bytes)
		}
		if idx := index(t, h, run); len(idx) != 1 || idx[0] != "c1" {
			t.Fatalf("index = %v: a size refusal still completes the record", idx)
		}
		// The same completion retried gets the same answer.
		_, err = h.Store.Complete(ctx(), c)
		wantCode(t, err, canonical.CodeResultTooLarge)
	})

	// The default record bound and the ceiling, in the numbers the server's
	// blocking was measured at: a completion runs in one script, and the
	// server serves no one else meanwhile.
	t.Run("DefaultRecordBytesAndCeiling", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "c1")
		if r := mustBegin(t, h.Store, req); r.Limits.MaxRecordBytes != 1<<20 {
			t.Fatalf("default MaxRecordBytes %d, want 1 MiB", r.Limits.MaxRecordBytes)
		}
		c := ready(run, "c1", canonical.EvidenceFound)
		c.Raw = bytes.Repeat([]byte("x"), 1<<20-len(req.Request)-len(c.Result))
		mustComplete(t, h.Store, c)
		if r := mustGet(t, h.Store, run, "c1"); !bytes.Equal(r.Raw, c.Raw) {
			t.Fatalf("1 MiB record: raw %d bytes stored of %d", len(r.Raw), len(c.Raw))
		}
		mustBegin(t, h.Store, beginReq(run, "c2"))
		over := ready(run, "c2", canonical.EvidenceFound)
		over.Raw = bytes.Repeat([]byte("x"), len(c.Raw)+1)
		_, err := h.Store.Complete(ctx(), over)
		wantCode(t, err, canonical.CodeResultTooLarge)

		req = beginReq(newRunID(t)+"c", "c1")
		req.Limits = canonical.Limits{MaxRecordBytes: 16 << 20}
		mustBegin(t, h.Store, req)
		req = beginReq(newRunID(t)+"d", "c1")
		req.Limits = canonical.Limits{MaxRecordBytes: 16<<20 + 1}
		_, err = h.Store.Begin(ctx(), req)
		wantCode(t, err, canonical.CodeInvalidArgument)
	})

	t.Run("ResultBytes", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "c1")
		req.Limits = canonical.Limits{MaxResultBytes: 64}
		mustBegin(t, h.Store, req)
		c := ready(run, "c1", canonical.EvidenceFound)
		c.Result = []byte(`{"e":"` + string(bytes.Repeat([]byte("y"), 64)) + `"}`)
		_, err := h.Store.Complete(ctx(), c)
		wantCode(t, err, canonical.CodeResultTooLarge)
		if r := mustGet(t, h.Store, run, "c1"); r.Status != canonical.StatusError || r.Result != nil || r.Raw != nil {
			t.Fatalf("record = %+v", brief(r))
		}

		// Exactly at the limit is fine, and raw is kept byte for byte.
		req = beginReq(run, "c2")
		req.Limits = canonical.Limits{MaxResultBytes: 64}
		mustBegin(t, h.Store, req)
		c = ready(run, "c2", canonical.EvidenceFound)
		c.Result = []byte(`{"e":"` + string(bytes.Repeat([]byte("y"), 64-8)) + `"}`)
		c.Raw = append([]byte(`{"body":"`), append(bytes.Repeat([]byte{0xe6, 0xbc, 0xa2}, 20000), `"}`...)...)
		mustComplete(t, h.Store, c)
		r := mustGet(t, h.Store, run, "c2")
		if !bytes.Equal(r.Raw, c.Raw) || !bytes.Equal(r.Result, c.Result) {
			t.Fatalf("stored raw %d bytes / result %d bytes, want %d / %d", len(r.Raw), len(r.Result), len(c.Raw), len(c.Result))
		}
	})

	t.Run("RunBytes", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		lim := canonical.Limits{MaxRunBytes: 400}
		req := beginReq(run, "c1")
		req.Limits = lim
		mustBegin(t, h.Store, req)
		c := ready(run, "c1", canonical.EvidenceFound)
		c.Raw = bytes.Repeat([]byte("r"), 200)
		mustComplete(t, h.Store, c)
		used := int64(len(req.Request) + len(c.Raw) + len(c.Result))
		u, _ := h.Store.Usage(ctx(), run)
		if u.Bytes != used {
			t.Fatalf("bytes = %d, want %d", u.Bytes, used)
		}

		// A request that does not fit what is left is refused at Begin.
		big := beginReq(run, "c2")
		big.Limits = lim
		big.Request = []byte(`{"q":"` + string(bytes.Repeat([]byte("q"), int(400-used))) + `"}`)
		_, err := h.Store.Begin(ctx(), big)
		wantCode(t, err, canonical.CodeResultTooLarge)

		// A completion that does not fit is refused at Complete.
		small := beginReq(run, "c3")
		small.Limits = lim
		mustBegin(t, h.Store, small)
		c3 := ready(run, "c3", canonical.EvidenceFound)
		c3.Raw = bytes.Repeat([]byte("r"), 200)
		_, err = h.Store.Complete(ctx(), c3)
		wantCode(t, err, canonical.CodeResultTooLarge)
		u, _ = h.Store.Usage(ctx(), run)
		if want := used + int64(len(small.Request)); u.Bytes != want || u.Bytes > 400 {
			t.Fatalf("bytes = %d, want %d (never over the 400 limit)", u.Bytes, want)
		}
	})
}
