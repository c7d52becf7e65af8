package memstore_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/canonical/storetest"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// harness gives the suite a memstore and what it needs to look behind it.
func harness(s *memstore.Store, wait func(time.Duration), realClock bool) storetest.Harness {
	return storetest.Harness{
		Store: s, Wait: wait, RealClock: realClock,
		AllKeys:      func(*testing.T) map[string]time.Duration { return memstore.AllKeys(s) },
		DropRunState: func(t *testing.T, runID string) { memstore.DropRunState(t, s, runID) },
		Evict:        func(t *testing.T, runID, key string) { memstore.Evict(t, s, runID, key) },
	}
}

// On the fake clock the closed-run retention is 20 minutes, so that the
// suite can let it pass.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := &fakeClock{now: time.UnixMilli(1_800_000_000_000)}
		h := harness(memstore.New(memstore.WithClock(clock.Now), memstore.WithClosedRunRetention(20*time.Minute)), clock.Advance, false)
		h.ClosedRunRetention = 20 * time.Minute
		h.Audited = func(t *testing.T, o canonical.AuditOptions) storetest.Harness {
			return harness(memstore.New(memstore.WithClock(clock.Now), memstore.WithAudit(o)), clock.Advance, false)
		}
		return h
	})
}

func TestConformanceRealClock(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		h := harness(memstore.New(), time.Sleep, true)
		h.Audited = func(t *testing.T, o canonical.AuditOptions) storetest.Harness {
			return harness(memstore.New(memstore.WithAudit(o)), time.Sleep, true)
		}
		return h
	})
}

func TestDefaultTTL(t *testing.T) {
	s := memstore.New(memstore.WithDefaultTTL(time.Minute))
	rec, err := s.Begin(context.Background(), canonical.BeginRequest{
		RunID: "run1", ToolCallID: "c1", Tool: "t", Owner: "o", Request: []byte(`{}`),
	})
	if err != nil || rec.TTL != time.Minute {
		t.Fatalf("rec TTL %v, err %v; want the default 1m", rec.TTL, err)
	}
}

// The store keeps time in milliseconds: a default TTL or a retention
// under 1ms is rounded up, never read as 0, which expires at once.
func TestSubMillisecondOptionsRoundUp(t *testing.T) {
	clock := &fakeClock{now: time.UnixMilli(1_800_000_000_000)}
	s := memstore.New(memstore.WithClock(clock.Now), memstore.WithDefaultTTL(500*time.Microsecond),
		memstore.WithClosedRunRetention(500*time.Microsecond))
	ctx := context.Background()
	rec, err := s.Begin(ctx, canonical.BeginRequest{
		RunID: "run1", ToolCallID: "c1", Tool: "t", Owner: "o", Request: []byte(`{}`),
	})
	if err != nil || rec.TTL != time.Millisecond {
		t.Fatalf("rec TTL %v, err %v; want 1ms", rec.TTL, err)
	}
	if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: "run2", ToolCallID: "c0", Tool: "t", Owner: "o",
		Principal: "alice", Request: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.CloseRun(ctx, "run2", "alice"); err != nil {
		t.Fatal(err)
	}
	if u, err := s.Usage(ctx, "run2"); err != nil || !u.Closed || u.TTL != time.Millisecond {
		t.Fatalf("closed run: %+v, %v; want closed for 1ms", u, err)
	}
	_, err = s.Begin(ctx, canonical.BeginRequest{RunID: "run2", ToolCallID: "c1", Tool: "t", Owner: "o",
		Principal: "alice", Request: []byte(`{}`), TTL: time.Hour})
	if canonical.CodeOf(err) != canonical.CodeRunInactive {
		t.Fatalf("begin on a run closed with a 500µs retention: %v, want RUN_INACTIVE", err)
	}
}

func TestSweepDropsExpired(t *testing.T) {
	clock := &fakeClock{now: time.UnixMilli(1_800_000_000_000)}
	s := memstore.New(memstore.WithClock(clock.Now))
	ctx := context.Background()
	for i := 0; i < 300; i++ {
		if i == 10 {
			clock.Advance(2 * time.Second)
		}
		_, err := s.Begin(ctx, canonical.BeginRequest{
			RunID: "run" + string(rune('a'+i%20)), ToolCallID: "c" + string(rune('a'+i/20)) + string(rune('a'+i%20)),
			Tool: "t", Owner: "o", Request: []byte(`{}`), TTL: time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := memstore.Len(s); n != 290 {
		t.Fatalf("%d records held, want 290 (the 10 expired ones swept)", n)
	}
}

// A harness that cannot look behind its store (as a decorator's over this
// store cannot) still runs the suite, with the checks the interface allows.
func TestConformanceThroughTheInterfaceOnly(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := &fakeClock{now: time.UnixMilli(1_800_000_000_000)}
		return storetest.Harness{Store: memstore.New(memstore.WithClock(clock.Now)), Wait: clock.Advance}
	})
}

// begin begins a call or fails the test.
func begin(t *testing.T, s *memstore.Store, run, id string, ttl time.Duration) {
	t.Helper()
	if _, err := s.Begin(context.Background(), canonical.BeginRequest{
		RunID: run, ToolCallID: id, Tool: "t", Owner: "o", Request: []byte(`{}`), TTL: ttl,
	}); err != nil {
		t.Fatal(err)
	}
}

// No call pays for what has expired in the whole store: a write examines a
// bounded batch of deadlines, however many entries expired at once, and the
// writes that follow drop them all, in every shard.
func TestExpiryIsBoundedPerCall(t *testing.T) {
	clock := &fakeClock{now: time.UnixMilli(1_800_000_000_000)}
	s := memstore.New(memstore.WithClock(clock.Now))
	const runs, perRun = 100, 50
	for r := 0; r < runs; r++ {
		for c := 0; c < perRun; c++ {
			begin(t, s, "old"+strconv.Itoa(r), "c"+strconv.Itoa(c), time.Second)
		}
	}
	// Every record, run state and lease set expires at once.
	clock.Advance(2 * time.Second)
	held := memstore.Len(s)
	fresh := 0
	for ; memstore.Len(s) > fresh && fresh < 20*runs*perRun; fresh++ {
		before := memstore.Len(s)
		begin(t, s, "new"+strconv.Itoa(fresh), "c", time.Hour)
		// One Begin examines one batch in its shard and perhaps one in
		// another; the record it adds is live.
		if dropped := before + 1 - memstore.Len(s); dropped > memstore.ExpireBatch+memstore.SweepBatch {
			t.Fatalf("one Begin dropped %d records; at most %d may be examined", dropped, memstore.ExpireBatch+memstore.SweepBatch)
		}
	}
	t.Logf("%d expired records dropped by %d Begins", held, fresh)
	if n := memstore.Len(s); n != fresh {
		t.Fatalf("%d records held after %d Begins, want only their %d", n, fresh, fresh)
	}
	if fresh < held/(memstore.ExpireBatch+memstore.SweepBatch) {
		t.Fatalf("%d expired records dropped by %d Begins: more than the batches allow", held, fresh)
	}
	if n := memstore.LongestExpiryPass(s); n < 1 || n > memstore.SweepBatch {
		t.Fatalf("the longest expiry pass examined %d entries, want 1..%d", n, memstore.SweepBatch)
	}
	// What is left is the fresh runs' records, states, leases and live
	// markers.
	if n := memstore.Tracked(t, s); n != 4*fresh {
		t.Fatalf("%d entries tracked, want %d", n, 4*fresh)
	}
}

// A TTL raised after its entry's first deadline keeps the entry past that
// deadline, however many writes pass the deadline in its shard.
func TestRaisedTTLOutlivesFirstDeadline(t *testing.T) {
	clock := &fakeClock{now: time.UnixMilli(1_800_000_000_000)}
	s := memstore.New(memstore.WithClock(clock.Now))
	ctx := context.Background()
	begin(t, s, "run", "c1", time.Second)
	begin(t, s, "run", "c2", 10*time.Second)
	clock.Advance(2 * time.Second)
	for i := 0; i < 40; i++ {
		begin(t, s, "run", "n"+strconv.Itoa(i), time.Second) // writes in the run's own shard
		if i == 19 {
			clock.Advance(2 * time.Second) // n0..n19 expire; c2 does not
		}
	}
	u, err := s.Usage(ctx, "run")
	if err != nil || u.Calls != 42 {
		t.Fatalf("usage %+v, %v; want the run's state kept with every call counted", u, err)
	}
	if _, err := s.Get(ctx, "run", "c1"); canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Fatalf("c1 after its TTL: %v, want NOT_FOUND", err)
	}
	if _, err := s.Get(ctx, "run", "n0"); canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Fatalf("n0 after its TTL: %v, want NOT_FOUND", err)
	}
	if rec, err := s.Get(ctx, "run", "c2"); err != nil || rec.TTL != 6*time.Second {
		t.Fatalf("c2: TTL %v, %v; want 6s left", rec.TTL, err)
	}
	memstore.Tracked(t, s)
}

// Lifecycles on many runs in parallel, with time moving so that calls left
// PROJECTING expire while others are written: every lifecycle succeeds and
// the shards' heaps stay consistent with their maps.
func TestParallelLifecyclesAcrossShards(t *testing.T) {
	clock := &fakeClock{now: time.UnixMilli(1_800_000_000_000)}
	s := memstore.New(memstore.WithClock(clock.Now))
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 400; i++ {
				run, id := "g"+strconv.Itoa(g)+"-"+strconv.Itoa(i/20), "c"+strconv.Itoa(i%20)
				if _, err := s.Begin(ctx, canonical.BeginRequest{
					RunID: run, ToolCallID: "left-" + id, Tool: "t", Owner: "o", Request: []byte(`{"q":0}`), TTL: 20 * time.Millisecond,
				}); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Begin(ctx, canonical.BeginRequest{
					RunID: run, ToolCallID: id, Tool: "t", Owner: "o", Request: []byte(`{"q":1}`), TTL: time.Hour,
				}); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Complete(ctx, canonical.Completion{
					RunID: run, ToolCallID: id, Owner: "o", Status: canonical.StatusReady,
					Evidence: canonical.EvidenceFound, Raw: []byte(`{"r":1}`), Result: []byte(`{}`),
				}); err != nil {
					t.Error(err)
					return
				}
				if g == 0 && i%10 == 0 {
					clock.Advance(10 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	memstore.Tracked(t, s)
}

// Payloads are copied outside the lock, but still copied: no reply shares
// the store's memory, and the store keeps none of the caller's buffers.
func TestRepliesShareNoMemory(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	req, raw, result := []byte(`{"q":1}`), []byte(`{"r":2}`), []byte(`{"s":3}`)
	rec, err := s.Begin(ctx, canonical.BeginRequest{RunID: "run", ToolCallID: "c1", Tool: "t", Owner: "o", Request: req, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	req[2], rec.Request[2] = 'X', 'Y'
	if _, err := s.Complete(ctx, canonical.Completion{RunID: "run", ToolCallID: "c1", Owner: "o", Status: canonical.StatusReady,
		Evidence: canonical.EvidenceFound, Raw: raw, Result: result}); err != nil {
		t.Fatal(err)
	}
	raw[2], result[2] = 'X', 'X'
	got, err := s.Get(ctx, "run", "c1")
	if err != nil {
		t.Fatal(err)
	}
	got.Request[2], got.Raw[2], got.Result[2] = 'Z', 'Z', 'Z'
	recs, err := s.GetMany(ctx, "run", []string{"c1"}, canonical.ReadOptions{Request: true, Raw: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := recs[0]; string(r.Request) != `{"q":1}` || string(r.Raw) != `{"r":2}` || string(r.Result) != `{"s":3}` {
		t.Fatalf("stored payloads changed by the caller's buffers: %s %s %s", r.Request, r.Raw, r.Result)
	}
	ids, _, _ := s.Completed(ctx, "run", 10)
	ids[0] = "changed"
	_ = append(ids[:1], "appended")
	if ids, n, _ := s.Completed(ctx, "run", 10); n != 1 || len(ids) != 1 || ids[0] != "c1" {
		t.Fatalf("completion index %v (%d) changed by a reply", ids, n)
	}
}
