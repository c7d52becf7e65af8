package redisstore_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/record"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// hgetall reads a hash without going through the store. Values must not
// hold a newline.
func hgetall(t *testing.T, addr, key string) map[string]string {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := c.Do(context.Background(), c.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		t.Fatalf("HGETALL %s: %v", key, err)
	}
	return m
}

// Every payload comes back byte for byte, whatever parts it was cut into;
// the record holds no field the key already says, and its header decodes
// to the record; each payload is stored in the parts record.Cut gives.
func TestRecordLayout(t *testing.T) {
	addr := redistest.Addr(t)
	s := newStore(t, []string{addr}, redisstore.Options{})
	ctx := context.Background()
	run := "layout-" + canonical.NewOwner()[:8]
	limits := canonical.Limits{MaxCallsPerRun: 100, MaxCallsPerTool: 100, MaxRunBytes: 1 << 30, MaxRecordBytes: canonical.MaxRecordBytesCeiling,
		MaxResultBytes: 1 << 24}
	for i, n := range []int{16, 31, 32, 255, 256, 767, 768, 1024, 4096, 8192, 16384, 49152, 65536, 100000, 3<<20 + 12345} {
		id := fmt.Sprintf("call_%02d", i)
		owner := canonical.NewOwner()
		req, raw, res := jsonOfLen(max(n/3, 64), id+"q"), jsonOfLen(n+40, id+"r"), jsonOfLen(max(n/2, 32), id+"s")
		if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "kb.search", Owner: owner,
			Request: req, TTL: time.Hour, Limits: limits}); err != nil {
			t.Fatal(err)
		}
		c := canonical.Completion{RunID: run, ToolCallID: id, Owner: owner, Status: canonical.StatusReady,
			Evidence: canonical.EvidenceFound, Raw: raw, Result: res}
		done, err := s.Complete(ctx, c)
		if err != nil || done.RawLen != len(raw) || done.RequestLen != len(req) || done.Owner != owner {
			t.Fatalf("%s: complete = %+v, %v", id, done, err)
		}
		again, err := s.Complete(ctx, c)
		if err != nil || again.Status != canonical.StatusReady || again.RequestDigest != canonical.RequestDigest(req) {
			t.Fatalf("%s: retried complete = %+v, %v", id, again, err)
		}
		retry, err := s.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "kb.search", Owner: owner,
			Request: req, TTL: time.Hour})
		if err != nil || retry.Status != canonical.StatusReady || !bytes.Equal(retry.Result, res) || retry.RawLen != len(raw) {
			t.Fatalf("%s: retried begin = %+v, %v", id, retry, err)
		}
		got, err := s.Get(ctx, run, id)
		if err != nil || !bytes.Equal(got.Request, req) || !bytes.Equal(got.Raw, raw) || !bytes.Equal(got.Result, res) ||
			got.Owner != owner || got.RequestDigest != canonical.RequestDigest(req) || got.Tool != "kb.search" ||
			got.RunID != run || got.ToolCallID != id || got.RawLen != len(raw) || got.RequestLen != len(req) {
			t.Fatalf("%s: Get = %v (request %d, raw %d, result %d bytes), %v", id, got.Status, len(got.Request), len(got.Raw), len(got.Result), err)
		}

		h := hgetall(t, addr, s.Keys().Record(run, id))
		for _, f := range []string{"run_id", "tool_call_id", "status", "owner", "meta"} {
			if _, ok := h[f]; ok {
				t.Errorf("%s: the record keeps a field %q", id, f)
			}
		}
		hd, err := record.Decode(h[record.HeaderField])
		if err != nil || hd.Status != "READY" || hd.Evidence != "EVIDENCE_FOUND" || hd.IDTag != record.IdentityTag(run, id) ||
			hd.Tool != "kb.search" || hd.Owner != owner || hd.RequestLen != int64(len(req)) || hd.RawLen != int64(len(raw)) ||
			hd.ResultLen != int64(len(res)) || hd.Created == 0 || hd.Updated < hd.Created || hd.Lease < hd.Created ||
			hd.Expires != hd.Created+time.Hour.Milliseconds() || hd.MaxResult != limits.MaxResultBytes || hd.MaxRecord != limits.MaxRecordBytes {
			t.Errorf("%s: header %q decodes to %+v, %v", id, h[record.HeaderField], hd, err)
		}
		// A short request follows the header in its field; a long one has
		// parts of its own.
		header, inHeader, _ := record.Split(h[record.HeaderField])
		payloads := map[string][]byte{"raw": raw, "res": res}
		if embed, _ := record.CutRequest(len(header), req); embed != nil {
			if inHeader != string(req) {
				t.Errorf("%s: the header's field holds %d bytes after the header, want the %d of the request", id, len(inHeader), len(req))
			}
		} else {
			payloads["req"] = req
			if inHeader != "" {
				t.Errorf("%s: the header's field holds %d bytes after the header", id, len(inHeader))
			}
		}
		fields := 1
		for name, payload := range payloads {
			var joined []byte
			var parts []int
			for p := 1; ; p++ {
				f := name
				if p > 1 {
					f += "." + strconv.Itoa(p)
				}
				v, ok := h[f]
				if !ok {
					break
				}
				joined, parts = append(joined, v...), append(parts, len(v))
			}
			fields += len(parts)
			if !bytes.Equal(joined, payload) {
				t.Fatalf("%s: %s is %d bytes in parts %v, want %d bytes", id, name, len(joined), parts, len(payload))
			}
			// The parts Go cut (record's tests hold them to the size classes).
			cut := record.Cut(payload)
			for j, p := range parts {
				if p != len(cut[j]) {
					t.Errorf("%s: %s in parts %v, record.Cut gives %d bytes for part %d", id, name, parts, len(cut[j]), j+1)
				}
			}
			if len(parts) < record.MaxParts && len(cut[len(parts)]) != 0 {
				t.Errorf("%s: %s in parts %v, record.Cut gives more", id, name, parts)
			}
		}
		if fields != len(h) {
			t.Errorf("%s: %d fields, want the header and the parts (%d)", id, len(h), fields)
		}
	}
}

// A hash under a record's key that has no header (a record of an older
// layout, or anything else) is never written over by Begin, which answers
// that it is of another layout.
func TestBeginKeepsAHashWithoutMeta(t *testing.T) {
	addr := redistest.Addr(t)
	s := newStore(t, []string{addr}, redisstore.Options{})
	run := "foreign-" + canonical.NewOwner()[:8]
	key := s.Keys().Record(run, "c1")
	if _, err := redistest.Command(addr, "HSET", key, "status", "READY", "raw", "kept"); err != nil {
		t.Fatal(err)
	}
	if _, err := redistest.Command(addr, "PEXPIRE", key, "60000"); err != nil {
		t.Fatal(err)
	}
	_, err := s.Begin(context.Background(), canonical.BeginRequest{RunID: run, ToolCallID: "c1", Tool: "kb.search", Owner: "o",
		Request: []byte(`{}`), TTL: time.Hour})
	if canonical.CodeOf(err) != canonical.CodeLayoutMismatch {
		t.Fatalf("begin over a hash without a header: %v, want LAYOUT_MISMATCH", err)
	}
	if h := hgetall(t, addr, key); len(h) != 2 || h["raw"] != "kept" {
		t.Fatalf("the hash was changed: %v", h)
	}
}
