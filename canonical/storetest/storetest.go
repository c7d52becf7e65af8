// Package storetest is the conformance suite every canonical.Store must pass,
// unchanged: Run(t, factory) exercises the lifecycle, ownership, TTL,
// capacity, run state and limits, leases and abandon, completion index,
// reads, concurrency, replies, reaping, run ownership, handle index, continued
// calls (canonical.Continuer) and argument validation through the Store
// interface, the audit stream (canonical.AuditSource), and after every case
// checks through the harness that the
// backend holds no key without a TTL. One area per file.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// Harness is what a store gives the suite.
type Harness struct {
	// Store is the store under test.
	Store canonical.Store
	// Wait lets d pass for the store: a fake clock advances, a real one sleeps.
	Wait func(d time.Duration)
	// AllKeys returns every key the backend holds under the store's prefix,
	// for every run, with its remaining TTL (-1: none), read without going
	// through Store. The suite calls it after every case and fails on a key
	// without a TTL, and checks with it that refusals write nothing. Every
	// store of this module sets it; a harness that cannot look behind its
	// store (a decorator over another package's store) leaves it nil and
	// gets the checks the Store interface allows.
	AllKeys func(t *testing.T) map[string]time.Duration
	// DropRunState removes a run's state (its counters, limits and closed
	// flag, nothing else) behind the store's back, as memory eviction or an
	// operator's DEL would. The cases of a lost run state run when it is
	// set, as it is for every store of this module.
	DropRunState func(t *testing.T, runID string)
	// Evict removes one key of a run behind the store's back, as an evicting
	// maxmemory-policy or an operator's DEL would. key is the last part of
	// the key's name in canonical.Keys: "run", "calls" or "live".
	// It fails the test when the run has no such key. The table of losses
	// (Loss) runs when it is set, as it is for every store of this module.
	Evict func(t *testing.T, runID, key string)
	// ClosedRunRetention is how long the store keeps a closed run closed
	// (0: the default, 24h).
	ClosedRunRetention time.Duration
	// RealClock is true when time passes by itself (timing assertions then
	// allow for it).
	RealClock bool
	// Isolated returns a harness over the same backend whose store no other
	// test writes to (a prefix of its own on a shared server), for the cases
	// of Reap, which sweep every run of a store. Leave it nil when Store is
	// already the test's alone.
	Isolated func(t *testing.T) Harness
	// Audited returns a harness over the same backend whose store has the
	// audit stream on with opts, and that no other test writes to (a prefix
	// of its own), for the cases of Audit. Every store of this module sets
	// it; the cases run when it is set.
	Audited func(t *testing.T, opts canonical.AuditOptions) Harness
}

// Factory returns a fresh harness for one test. Stores may share a backend:
// every test uses run ids of its own.
type Factory func(t *testing.T) Harness

// Run runs the whole suite. After every case it checks that the backend
// holds no key without a TTL.
func Run(t *testing.T, factory Factory) {
	f := func(t *testing.T) Harness {
		h := factory(t)
		if h.Store == nil || h.Wait == nil {
			t.Fatal("storetest: the harness must set Store and Wait")
		}
		if h.AllKeys != nil {
			t.Cleanup(func() { assertEveryKeyHasTTL(t, h) })
		}
		return h
	}
	t.Run("Begin", func(t *testing.T) { testBegin(t, f) })
	t.Run("Complete", func(t *testing.T) { testComplete(t, f) })
	t.Run("Owner", func(t *testing.T) { testOwner(t, f) })
	t.Run("TTL", func(t *testing.T) { testTTL(t, f) })
	t.Run("Capacity", func(t *testing.T) { testCapacity(t, f) })
	t.Run("Index", func(t *testing.T) { testIndex(t, f) })
	t.Run("Read", func(t *testing.T) { testRead(t, f) })
	t.Run("Concurrency", func(t *testing.T) { testConcurrency(t, f) })
	t.Run("Protocol", func(t *testing.T) { testProtocol(t, f) })
	t.Run("BadInput", func(t *testing.T) { testBadInput(t, f) })
	t.Run("RunState", func(t *testing.T) { testRunState(t, f) })
	t.Run("Replies", func(t *testing.T) { testReplies(t, f) })
	t.Run("Lease", func(t *testing.T) { testLease(t, f) })
	t.Run("Reap", func(t *testing.T) { testReap(t, f) })
	t.Run("Principal", func(t *testing.T) { testPrincipal(t, f) })
	t.Run("Handles", func(t *testing.T) { testHandles(t, f) })
	t.Run("OwnedReads", func(t *testing.T) { testOwnedReads(t, f) })
	// The cases of continued calls need a store that continues them.
	if _, ok := f(t).Store.(canonical.Continuer); ok {
		t.Run("Continue", func(t *testing.T) { testContinue(t, f) })
	}
	if f(t).Audited != nil {
		t.Run("Audit", func(t *testing.T) { testAudit(t, f) })
	}
	// The cases of lost keys need a harness that can lose them.
	if f(t).DropRunState != nil {
		t.Run("LostState", func(t *testing.T) { testLostState(t, f) })
	}
	if f(t).Evict != nil {
		t.Run("Loss", func(t *testing.T) { testLoss(t, f) })
	}
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// newRunID returns a run id unique to this test.
func newRunID(t *testing.T) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := unsafeChars.ReplaceAllString(t.Name(), "_")
	if len(name) > 90 {
		name = name[len(name)-90:]
	}
	return "r" + hex.EncodeToString(b[:]) + "-" + name
}

const recordTTL = time.Hour

func beginReq(run, id string) canonical.BeginRequest {
	return canonical.BeginRequest{
		RunID: run, ToolCallID: id, Tool: "kb.search", Owner: "owner-" + id,
		Request: []byte(`{"tool":"kb.search","input":{"query":"q-` + id + `"}}`),
		TTL:     recordTTL,
	}
}

func ready(run, id string, ev canonical.Evidence) canonical.Completion {
	return canonical.Completion{
		RunID: run, ToolCallID: id, Owner: "owner-" + id, Status: canonical.StatusReady, Evidence: ev,
		Raw: []byte(`{"blocks":[{"content":"raw ` + id + `"}]}`), Result: []byte(`{"evidence":["` + id + `"]}`),
	}
}

func failed(run, id string, code canonical.Code) canonical.Completion {
	return canonical.Completion{
		RunID: run, ToolCallID: id, Owner: "owner-" + id, Status: canonical.StatusError, Code: code,
	}
}

func ctx() context.Context { return context.Background() }

func mustBegin(t *testing.T, s canonical.Store, req canonical.BeginRequest) canonical.Record {
	t.Helper()
	rec, err := s.Begin(ctx(), req)
	if err != nil {
		t.Fatalf("Begin(%s/%s): %v", req.RunID, req.ToolCallID, err)
	}
	return rec
}

func mustComplete(t *testing.T, s canonical.Store, c canonical.Completion) canonical.Record {
	t.Helper()
	rec, err := s.Complete(ctx(), c)
	if err != nil {
		t.Fatalf("Complete(%s/%s %s): %v", c.RunID, c.ToolCallID, c.Status, err)
	}
	return rec
}

func mustGet(t *testing.T, s canonical.Store, run, id string) canonical.Record {
	t.Helper()
	rec, err := s.Get(ctx(), run, id)
	if err != nil {
		t.Fatalf("Get(%s/%s): %v", run, id, err)
	}
	return rec
}

// index returns the run's whole completion index, checking that the store
// says how long it is.
func index(t *testing.T, h Harness, run string) []string {
	t.Helper()
	ids, n, err := h.Store.Completed(ctx(), run, canonical.MaxIndexRead)
	if err != nil || n != len(ids) {
		t.Fatalf("Completed(%s) = %v (length %d), %v", run, ids, n, err)
	}
	return ids
}

// wantCode fails unless err carries code.
func wantCode(t *testing.T, err error, code canonical.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	if got := canonical.CodeOf(err); got != code {
		t.Fatalf("got %s (%v), want %s", got, err, code)
	}
}

// assertNothingStored fails if the run has any record, counter, index entry
// or backend key.
func assertNothingStored(t *testing.T, h Harness, run string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := h.Store.Get(ctx(), run, id); canonical.CodeOf(err) != canonical.CodeNotFound {
			t.Fatalf("record %s: got %v, want NOT_FOUND", id, err)
		}
	}
	if _, err := h.Store.Usage(ctx(), run); canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Fatalf("run usage: got %v, want NOT_FOUND", err)
	}
	if idx, n, err := h.Store.Completed(ctx(), run, 10); err != nil || len(idx) != 0 || n != 0 {
		t.Fatalf("completion index = %v, %v; want empty", idx, err)
	}
	if keys := runKeys(t, h, run); len(keys) != 0 {
		t.Fatalf("backend holds keys for the run: %v", keys)
	}
}

// assertEveryKeyHasTTL fails if any key of the backend lives without a TTL:
// a key that never expires is a leak no operator asked for.
func assertEveryKeyHasTTL(t *testing.T, h Harness) {
	t.Helper()
	for k, ttl := range h.AllKeys(t) {
		if ttl < 0 {
			t.Errorf("key %s has no TTL (%v)", k, ttl)
		}
	}
}

// closedRetention is the harness's closed-run retention.
func (h Harness) closedRetention() time.Duration {
	if h.ClosedRunRetention > 0 {
		return h.ClosedRunRetention
	}
	return 24 * time.Hour
}

// sameRecord compares every field a transition could have changed.
func sameRecord(t *testing.T, got, want canonical.Record) {
	t.Helper()
	if got.Status != want.Status || got.Evidence != want.Evidence || got.Error != want.Error ||
		string(got.Raw) != string(want.Raw) || string(got.Result) != string(want.Result) ||
		string(got.Request) != string(want.Request) || got.Owner != want.Owner || got.Tool != want.Tool ||
		!got.UpdatedAt.Equal(want.UpdatedAt) || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("record changed:\n got %+v\nwant %+v", brief(got), brief(want))
	}
}

type briefRecord struct {
	Status, Evidence, Error, Owner, Tool string
	Raw, Result, Request                 string
	Created, Updated                     int64
}

func brief(r canonical.Record) briefRecord {
	cut := func(b []byte) string {
		if len(b) > 80 {
			return string(b[:80]) + "…"
		}
		return string(b)
	}
	return briefRecord{string(r.Status), string(r.Evidence), string(r.Error), r.Owner, r.Tool,
		cut(r.Raw), cut(r.Result), cut(r.Request), r.CreatedAt.UnixMilli(), r.UpdatedAt.UnixMilli()}
}

// progress returns the store under test as a canonical.ProgressObserver,
// failing t when it is not one: every store of this module counts progress
// reports.
func (h *Harness) progress(t *testing.T) canonical.ProgressObserver {
	t.Helper()
	p, ok := h.Store.(canonical.ProgressObserver)
	if !ok {
		t.Fatalf("%T does not implement canonical.ProgressObserver", h.Store)
	}
	return p
}

// owned returns the store under test as a canonical.OwnedReader, failing t
// when it is not one: every store of this module reads on a principal's
// behalf with the owner check in the read.
func (h *Harness) owned(t *testing.T) canonical.OwnedReader {
	t.Helper()
	o, ok := h.Store.(canonical.OwnedReader)
	if !ok {
		t.Fatalf("%T does not implement canonical.OwnedReader", h.Store)
	}
	return o
}
