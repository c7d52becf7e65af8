package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

const wait = 60 * time.Millisecond

func testTTL(t *testing.T, f Factory) {
	t.Run("ReadNeverRaisesTTL", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "c1")
		req.TTL = 10 * time.Second
		mustBegin(t, h.Store, req)
		t0 := mustGet(t, h.Store, run, "c1").TTL
		for i := 0; i < 3; i++ {
			h.Wait(wait / 3)
			mustGet(t, h.Store, run, "c1")
			_, _ = h.Store.GetMany(ctx(), run, []string{"c1"}, canonical.ReadOptions{Raw: true, Request: true})
			_, _ = h.Store.Usage(ctx(), run)
			_, _, _ = h.Store.Completed(ctx(), run, 10)
		}
		t1 := mustGet(t, h.Store, run, "c1").TTL
		// The expiry (read time + TTL) must not move later: after `wait`
		// the TTL is at least `wait` lower (1ms for rounding).
		if t1 > t0-wait+time.Millisecond {
			t.Fatalf("TTL went from %v to %v across %v of reads", t0, t1, wait)
		}
		assertBackendTTLs(t, h, run, 10*time.Second-wait+time.Millisecond, 10*time.Second)
	})

	t.Run("TransitionKeepsRemainingTTL", func(t *testing.T) {
		for _, status := range []canonical.Status{canonical.StatusReady, canonical.StatusError} {
			t.Run(string(status), func(t *testing.T) {
				h := f(t)
				run := newRunID(t)
				req := beginReq(run, "c1")
				req.TTL = 10 * time.Second
				mustBegin(t, h.Store, req)
				h.Wait(wait)
				t0 := mustGet(t, h.Store, run, "c1").TTL
				c := ready(run, "c1", canonical.EvidenceFound)
				if status == canonical.StatusError {
					c = failed(run, "c1", canonical.CodeExecutionFailed)
				}
				done := mustComplete(t, h.Store, c)
				t1 := mustGet(t, h.Store, run, "c1").TTL
				if t1 > t0 || done.TTL > t0 {
					t.Fatalf("TTL rose across the transition: %v before, %v after (reply %v)", t0, t1, done.TTL)
				}
				if t1 < t0-2*time.Second {
					t.Fatalf("TTL fell from %v to %v: the transition did not keep it", t0, t1)
				}
				if t1 > req.TTL-wait+time.Millisecond {
					t.Fatalf("TTL %v: reset towards the creation TTL %v", t1, req.TTL)
				}
				assertBackendTTLs(t, h, run, req.TTL-wait+time.Millisecond, req.TTL)
			})
		}
	})

	t.Run("ExpiredRecordIsNotFound", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "c1")
		req.TTL = 40 * time.Millisecond
		mustBegin(t, h.Store, req)
		h.Wait(120 * time.Millisecond)
		_, err := h.Store.Get(ctx(), run, "c1")
		wantCode(t, err, canonical.CodeNotFound)
		recs, err := h.Store.GetMany(ctx(), run, []string{"c1"}, canonical.ReadOptions{})
		if err != nil || len(recs) != 1 || recs[0] != nil {
			t.Fatalf("GetMany = %v, %v; want [nil]", recs, err)
		}
		_, err = h.Store.Complete(ctx(), ready(run, "c1", canonical.EvidenceFound))
		wantCode(t, err, canonical.CodeNotFound)
	})

	t.Run("RunStateCoversItsRecords", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		short := beginReq(run, "short")
		short.TTL = time.Minute
		long := beginReq(run, "long")
		long.TTL = 2 * time.Hour
		mustBegin(t, h.Store, long)
		mustBegin(t, h.Store, short)
		u, err := h.Store.Usage(ctx(), run)
		if err != nil || u.TTL <= time.Hour || u.TTL > 2*time.Hour+canonical.ExpiryGranule(2*time.Hour) {
			t.Fatalf("run TTL = %v, %v; want it to cover the 2h record", u.TTL, err)
		}
		mustComplete(t, h.Store, ready(run, "long", canonical.EvidenceFound))
		mustComplete(t, h.Store, ready(run, "short", canonical.EvidenceFound))
		found := false
		for k, ttl := range runKeys(t, h, run) {
			if strings.HasSuffix(k, ":calls") {
				found = true
				if ttl <= time.Hour {
					t.Fatalf("index TTL %v does not cover the 2h record", ttl)
				}
			}
		}
		if !found && h.AllKeys != nil {
			t.Fatal("no completion index key among the run's keys")
		}
	})
}

// assertBackendTTLs checks every backend key of the run has a TTL and none is
// above max: a record's exactly, the run's own keys by at most the expiry
// granule of a record of that TTL (canonical.ExpiryGranule).
func assertBackendTTLs(t *testing.T, h Harness, run string, max, ttl time.Duration) {
	t.Helper()
	for k, left := range runKeys(t, h, run) {
		limit := max
		if !strings.Contains(k, ":call:") {
			limit += canonical.ExpiryGranule(ttl)
		}
		if left <= 0 || left > limit {
			t.Fatalf("key %s TTL %v, want in (0, %v]", k, left, limit)
		}
	}
}
