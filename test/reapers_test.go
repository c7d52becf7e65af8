package test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
	"github.com/toolcanon/toolcanon/reaper"
)

// Four reapers over one store, each with a client of its own as four
// gateways run them, make one pass per interval between them: the others
// yield to the reap lease. Every stuck call is abandoned, by one of them.
func TestOneReapPassPerIntervalAcrossReapers(t *testing.T) {
	for _, topo := range []struct {
		name  string
		addrs func(t *testing.T) []string
	}{
		{"standalone", func(t *testing.T) []string { return []string{redistest.Addr(t)} }},
		{"cluster", func(t *testing.T) []string { return redistest.ClusterAddrs(t) }},
	} {
		t.Run(topo.name, func(t *testing.T) {
			addrs := topo.addrs(t)
			prefix := "tcreapers" + canonical.NewOwner()[:8]
			const reapers, interval, span = 4, 150 * time.Millisecond, 1500 * time.Millisecond
			stores := make([]*redisstore.Store, reapers)
			for i := range stores {
				stores[i] = open(t, redisstore.Options{Addrs: addrs, Prefix: prefix})
			}
			ctx := context.Background()
			var stuck []string
			for r := range 6 {
				run := fmt.Sprintf("stuck-%d-%s", r, canonical.NewOwner()[:6])
				req := begin(run, "c1")
				req.Lease = time.Millisecond
				if _, err := stores[0].Begin(ctx, req); err != nil {
					t.Fatal(err)
				}
				stuck = append(stuck, run)
			}
			var mu sync.Mutex
			var ran, yielded atomic.Int64
			var stopping atomic.Bool // a pass that a stop ends fails
			abandoned := map[string]int{}
			stops := make([]func(), reapers)
			start := time.Now()
			for i, s := range stores {
				stop, err := reaper.Start(s, reaper.Options{Interval: interval, OnPass: func(rep canonical.ReapReport, err error) {
					if err != nil && !stopping.Load() {
						t.Errorf("reaper %d: %v", i, err)
					}
					if rep.Yielded {
						yielded.Add(1)
						return
					}
					ran.Add(1)
					mu.Lock()
					defer mu.Unlock()
					for _, c := range rep.Abandoned {
						abandoned[c.RunID]++
					}
				}})
				if err != nil {
					t.Fatal(err)
				}
				stops[i] = stop
			}
			time.Sleep(span)
			stopping.Store(true)
			for _, stop := range stops {
				stop()
			}
			elapsed := time.Since(start)
			// Passes are at least nine tenths of an interval apart, and a
			// reaper tries at least once an interval.
			most := int64(elapsed/(interval*9/10)) + 1
			least := int64(elapsed/interval) / 2
			t.Logf("%v: %d passes ran, %d yielded (%d reapers, interval %v)", elapsed.Round(time.Millisecond),
				ran.Load(), yielded.Load(), reapers, interval)
			if n := ran.Load(); n > most || n < least {
				t.Fatalf("%d passes ran in %v at an interval of %v between %d reapers; want %d..%d", n,
					elapsed.Round(time.Millisecond), interval, reapers, least, most)
			}
			if yielded.Load() == 0 {
				t.Fatal("no pass yielded")
			}
			for _, run := range stuck {
				if abandoned[run] != 1 {
					t.Fatalf("run %s: its stuck call was reported abandoned %d times", run, abandoned[run])
				}
			}
		})
	}
}
