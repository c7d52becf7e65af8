package memstore_test

import (
	"context"
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
	}
}

// On the fake clock the closed-run retention is 20 minutes, so that the
// suite can let it pass.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := &fakeClock{now: time.UnixMilli(1_800_000_000_000)}
		h := harness(memstore.New(memstore.WithClock(clock.Now), memstore.WithClosedRunRetention(20*time.Minute)), clock.Advance, false)
		h.ClosedRunRetention = 20 * time.Minute
		return h
	})
}

func TestConformanceRealClock(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		return harness(memstore.New(), time.Sleep, true)
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
