package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// commands counts what a client sends: round trips (a Do, or a DoMulti's
// pipeline) and commands by name.
type commands struct {
	rueidis.Client
	mu    sync.Mutex
	trips int
	names map[string]int
}

func (c *commands) count(cmds ...rueidis.Completed) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trips++
	for _, cmd := range cmds {
		c.names[cmd.Commands()[0]]++
	}
}

func (c *commands) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.count(cmd)
	return c.Client.Do(ctx, cmd)
}

func (c *commands) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.count(cmds...)
	return c.Client.DoMulti(ctx, cmds...)
}

func (c *commands) reset() (trips int, names map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	trips, names = c.trips, c.names
	c.trips, c.names = 0, map[string]int{}
	return trips, names
}

// countedStore is a store on a fresh server of its own, so that the
// keyspace a pass walks is the test's alone, with its client counted.
func countedStore(tb testing.TB) (*redisstore.Store, *commands) {
	tb.Helper()
	srv, err := redistest.StartServer()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Stop)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	cc := &commands{Client: c, names: map[string]int{}}
	return newStore(tb, nil, redisstore.Options{Client: cc}), cc
}

// beginMany begins perRun calls in each of runs runs, with lease, from 8
// goroutines.
func beginMany(tb testing.TB, s *redisstore.Store, tag string, runs, perRun int, lease time.Duration) {
	tb.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := w; r < runs; r += 8 {
				for i := 0; i < perRun; i++ {
					_, err := s.Begin(context.Background(), canonical.BeginRequest{
						RunID: fmt.Sprintf("%s-%04d", tag, r), ToolCallID: fmt.Sprintf("c%03d", i), Tool: "kb.search", Owner: "o",
						Request: []byte(`{}`), TTL: time.Hour, Lease: lease,
						Limits: canonical.Limits{MaxCallsPerRun: 1000, MaxCallsPerTool: 1000}})
					if err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}
}

// A pass over runs whose calls all still run sends no script, one SCAN per
// step, and one pipeline (TIME and a ZRANGE per run found) per step that
// found runs: its cost is the keyspace's size over the batch.
func TestReapCostWhenNothingExpired(t *testing.T) {
	s, cc := countedStore(t)
	const runs, batch = 200, 100
	beginMany(t, s, "live", runs, 1, time.Hour)
	keys := 3 * runs // a record, the run's state and its leases per run
	cc.reset()
	rep, err := s.Reap(context.Background(), canonical.ReapOptions{Batch: batch})
	trips, names := cc.reset()
	if err != nil || rep.Runs != runs || rep.Expired != 0 || len(rep.Abandoned) != 0 || rep.Nodes != 1 {
		t.Fatalf("report %+v, %v", rep, err)
	}
	t.Logf("%d runs, %d keys, batch %d: %d round trips, commands %v", runs, keys, batch, trips, names)
	if names["EVALSHA"]+names["EVAL"] != 0 || names["ZRANGE"] != runs || names["SCAN"] != rep.Steps ||
		names["TIME"] > rep.Steps || trips != names["SCAN"]+names["TIME"] || len(names) != 3 {
		t.Fatalf("commands %v in %d round trips for %d steps", names, trips, rep.Steps)
	}
	if max := 2*((keys+batch-1)/batch) + 1; rep.Steps > max {
		t.Fatalf("%d SCAN steps over %d keys at COUNT %d, want at most %d", rep.Steps, keys, batch, max)
	}
}

// BenchmarkReapExpired is the time to close 10,000 stuck calls, 10 in each
// of 1,000 runs, in one pass on a standalone server.
func BenchmarkReapExpired(b *testing.B) {
	s, _ := countedStore(b)
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		beginMany(b, s, fmt.Sprintf("dead%d", i), 1000, 10, time.Millisecond)
		time.Sleep(5 * time.Millisecond)
		b.StartTimer()
		rep, err := s.Reap(context.Background(), canonical.ReapOptions{})
		if err != nil || len(rep.Abandoned) != 10000 || rep.Truncated {
			b.Fatalf("%d abandoned, truncated %v, %v", len(rep.Abandoned), rep.Truncated, err)
		}
	}
}

// BenchmarkReapNothingExpired is a pass over 1,000 runs whose calls all
// still run: its time, and what it sends.
func BenchmarkReapNothingExpired(b *testing.B) {
	s, cc := countedStore(b)
	beginMany(b, s, "live", 1000, 1, time.Hour)
	cc.reset()
	for b.Loop() {
		rep, err := s.Reap(context.Background(), canonical.ReapOptions{})
		if err != nil || rep.Runs != 1000 || rep.Expired != 0 {
			b.Fatalf("report %+v, %v", rep, err)
		}
	}
	trips, names := cc.reset()
	b.ReportMetric(float64(trips)/float64(b.N), "roundtrips/pass")
	b.ReportMetric(float64(names["SCAN"])/float64(b.N), "SCANs/pass")
	b.ReportMetric(float64(names["ZRANGE"]+names["TIME"]+names["SCAN"])/float64(b.N), "commands/pass")
}
