package storetest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

func testRead(t *testing.T, f Factory) {
	t.Run("GetManyInOrderWithMissing", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, beginReq(run, "a"))
		mustBegin(t, h.Store, beginReq(run, "b"))
		mustComplete(t, h.Store, ready(run, "b", canonical.NoEvidence))
		recs, err := h.Store.GetMany(ctx(), run, []string{"b", "missing", "a"}, canonical.ReadOptions{})
		if err != nil || len(recs) != 3 {
			t.Fatalf("GetMany = %v, %v", recs, err)
		}
		if recs[0] == nil || recs[0].ToolCallID != "b" || recs[0].Status != canonical.StatusReady || recs[1] != nil ||
			recs[2] == nil || recs[2].ToolCallID != "a" || recs[2].Status != canonical.StatusProjecting {
			t.Fatalf("GetMany order or content wrong: %+v", recs)
		}
		if recs[0].Raw != nil || recs[0].Request != nil || string(recs[0].Result) != string(ready(run, "b", "").Result) {
			t.Fatalf("large fields read without being asked for: raw %q request %q", recs[0].Raw, recs[0].Request)
		}
		if recs[0].RawLen != len(ready(run, "b", "").Raw) || recs[0].RequestLen != len(beginReq(run, "b").Request) ||
			recs[2].RawLen != 0 || recs[2].RequestLen != len(beginReq(run, "a").Request) {
			t.Fatalf("payload lengths: b raw %d request %d, a raw %d request %d",
				recs[0].RawLen, recs[0].RequestLen, recs[2].RawLen, recs[2].RequestLen)
		}
		if full := recs[0]; full.Size() != int64(len(beginReq(run, "b").Request)+len(ready(run, "b", "").Raw)+len(ready(run, "b", "").Result)) {
			t.Fatalf("Size() = %d without the payloads read", full.Size())
		}
		full, _ := h.Store.GetMany(ctx(), run, []string{"b"}, canonical.ReadOptions{Raw: true, Request: true})
		if string(full[0].Raw) != string(ready(run, "b", "").Raw) || len(full[0].Request) == 0 {
			t.Fatalf("asked-for fields missing: %+v", brief(*full[0]))
		}
		if empty, err := h.Store.GetMany(ctx(), run, nil, canonical.ReadOptions{}); err != nil || len(empty) != 0 {
			t.Fatalf("GetMany(nil) = %v, %v", empty, err)
		}
	})

	t.Run("GetManyOfManyIDsKeepsOrder", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		// More ids than one pipeline of any store carries, most of them missing.
		const n = 1500
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("c%04d", i)
		}
		for i := 0; i < n; i += 97 {
			req := beginReq(run, ids[i])
			req.Limits = canonical.Limits{MaxCallsPerRun: n, MaxCallsPerTool: n}
			mustBegin(t, h.Store, req)
			if i%2 == 0 {
				mustComplete(t, h.Store, ready(run, ids[i], canonical.EvidenceFound))
			}
		}
		for _, opts := range []canonical.ReadOptions{{}, {Request: true, Raw: true}} {
			recs, err := h.Store.GetMany(ctx(), run, ids, opts)
			if err != nil || len(recs) != n {
				t.Fatalf("GetMany(%d ids, %+v) = %d records, %v", n, opts, len(recs), err)
			}
			for i, r := range recs {
				switch {
				case i%97 != 0 && r != nil:
					t.Fatalf("record %s exists, never begun", ids[i])
				case i%97 == 0 && (r == nil || r.ToolCallID != ids[i]):
					t.Fatalf("position %d holds %+v, want %s", i, r, ids[i])
				case i%97 == 0 && opts.Raw && i%2 == 0 && string(r.Raw) != string(ready(run, ids[i], "").Raw):
					t.Fatalf("%s raw = %q", ids[i], r.Raw)
				}
			}
		}
	})

	t.Run("RecordExportsAsOneJSONObject", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, beginReq(run, "c1"))
		mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
		rec := mustGet(t, h.Store, run, "c1")
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		var back canonical.Record
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		back.TTL, rec.TTL = 0, 0
		sameRecord(t, back, rec)
		if !back.LeaseUntil.Equal(rec.LeaseUntil) || rec.LeaseUntil.IsZero() {
			t.Fatalf("lease %v exported as %v", rec.LeaseUntil, back.LeaseUntil)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		for _, k := range []string{"run_id", "tool_call_id", "tool", "status", "evidence_status", "request", "raw_response", "agent_result", "created_ms", "updated_ms"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("export lacks %q: %s", k, b)
			}
		}
	})
}
