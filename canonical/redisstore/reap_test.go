package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
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
// keyspace a pass walks is the test's alone, with its client counted; the
// server takes extra arguments.
func countedStore(tb testing.TB, extra ...string) (*redisstore.Store, *commands, string) {
	tb.Helper()
	srv, err := redistest.StartServer(extra...)
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
	return newStore(tb, nil, redisstore.Options{Client: cc}), cc, srv.Addr
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

// A pass over runs whose calls all still run sends no script and reads no
// run: the server's TIME and one ZRANGE of the due set of every slot, in
// pipelines of 1,024, whatever the number of runs.
func TestReapCostWhenNothingExpired(t *testing.T) {
	s, cc, _ := countedStore(t)
	const runs = 200
	beginMany(t, s, "live", runs, 1, time.Hour)
	cc.reset()
	rep, err := s.Reap(context.Background(), canonical.ReapOptions{})
	trips, names := cc.reset()
	if err != nil || rep.Runs != 0 || rep.Expired != 0 || len(rep.Abandoned) != 0 || rep.Nodes != 1 || rep.Steps != 16 {
		t.Fatalf("report %+v, %v", rep, err)
	}
	t.Logf("%d runs: %d round trips, commands %v", runs, trips, names)
	if len(names) != 2 || names["TIME"] != 1 || names["ZRANGE"] != canonical.Slots || trips != 1+canonical.Slots/1024 {
		t.Fatalf("commands %v in %d round trips", names, trips)
	}
}

// reapCost is what one pass sends, on a server that holds keys unrelated
// keys beside a few runs: its commands by name and its round trips.
func reapCost(t testing.TB, keys int) (map[string]int, int) {
	s, cc, addr := countedStore(t, "--enable-debug-command", "yes")
	if keys > 0 {
		if _, err := redistest.Command(addr, "DEBUG", "POPULATE", strconv.Itoa(keys), "unrelated"); err != nil {
			t.Fatal(err)
		}
	}
	// A first pass loads the scripts (a first EVALSHA fails NOSCRIPT and is
	// sent again as EVAL, by each of the abandons in flight).
	beginMany(t, s, "warm", 1, 1, time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	if rep, err := s.Reap(context.Background(), canonical.ReapOptions{}); err != nil || len(rep.Abandoned) != 1 {
		t.Fatalf("first pass: %+v, %v", rep, err)
	}
	beginMany(t, s, "live", 20, 2, time.Hour)
	beginMany(t, s, "dead", 4, 2, time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	cc.reset()
	rep, err := s.Reap(context.Background(), canonical.ReapOptions{})
	trips, names := cc.reset()
	if err != nil || len(rep.Abandoned) != 8 || rep.Runs != 4 {
		t.Fatalf("over %d unrelated keys: report %+v, %v", keys, rep, err)
	}
	return names, trips
}

// A pass reads what names work, not the keyspace: over 200,000 unrelated
// keys it sends the very commands it sends over none (a pass that walked
// the keyspace with SCAN sent one more SCAN per 256 keys).
func TestReapCostDoesNotGrowWithKeys(t *testing.T) {
	none, tripsNone := reapCost(t, 0)
	many, tripsMany := reapCost(t, 200000)
	t.Logf("no other key: %d round trips, %v; 200,000 other keys: %d round trips, %v", tripsNone, none, tripsMany, many)
	if fmt.Sprint(none) != fmt.Sprint(many) || tripsNone != tripsMany {
		t.Fatalf("the pass's commands grew with the keyspace: %v in %d round trips, then %v in %d", none, tripsNone, many, tripsMany)
	}
}

// The run enters its slot's due set at its first lease, moves to an
// earlier lease only, costs a later begin nothing, and leaves the set when
// the reaper finds it with nothing in flight; the set lives as long as the
// run's keys.
func TestDueSetFollowsTheEarliestLease(t *testing.T) {
	s, _, addr := countedStore(t)
	ctx := context.Background()
	run := "due-" + canonical.NewOwner()[:8]
	due := s.Keys().RunSlotIndex(run, canonical.SlotDue)
	score := func() string {
		t.Helper()
		v, err := redistest.Command(addr, "ZSCORE", due, run)
		if err != nil {
			return "" // nil
		}
		return v
	}
	beginWith := func(id string, lease time.Duration) canonical.Record {
		t.Helper()
		rec, err := s.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "kb.search", Owner: "o-" + id,
			Request: []byte(`{}`), TTL: time.Hour, Lease: lease})
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	first := beginWith("c1", time.Hour)
	if got := score(); got != strconv.FormatInt(first.LeaseUntil.UnixMilli(), 10) {
		t.Fatalf("after the first begin the run is scored %q, want its lease %d", got, first.LeaseUntil.UnixMilli())
	}
	beginWith("c2", 2*time.Hour)
	if got := score(); got != strconv.FormatInt(first.LeaseUntil.UnixMilli(), 10) {
		t.Fatalf("a later lease moved the run to %q", got)
	}
	short := beginWith("c3", 20*time.Millisecond)
	if got := score(); got != strconv.FormatInt(short.LeaseUntil.UnixMilli(), 10) {
		t.Fatalf("an earlier lease left the run at %q, want %d", got, short.LeaseUntil.UnixMilli())
	}
	// Absolute expiry times: two PTTL replies read a moment apart differ by that moment.
	runAt, _ := redistest.Command(addr, "PEXPIRETIME", s.Keys().Run(run))
	dueAt, _ := redistest.Command(addr, "PEXPIRETIME", due)
	if rt, dt := atoiT(t, runAt), atoiT(t, dueAt); dt < rt {
		t.Fatalf("the due set expires at %d ms, before the run's state (%d ms)", dt, rt)
	}
	time.Sleep(30 * time.Millisecond)
	rep, err := s.Reap(ctx, canonical.ReapOptions{})
	if err != nil || rep.Runs != 1 || len(rep.Abandoned) != 1 || rep.Abandoned[0].ToolCallID != "c3" {
		t.Fatalf("reap: %+v, %v", rep, err)
	}
	if got := score(); got != strconv.FormatInt(first.LeaseUntil.UnixMilli(), 10) {
		t.Fatalf("after the reap the run is scored %q, want its next lease %d", got, first.LeaseUntil.UnixMilli())
	}
	// Completed calls leave a stale score, which the reaper clears.
	for _, id := range []string{"c1", "c2"} {
		if _, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: id, Owner: "o-" + id,
			Status: canonical.StatusError, Code: canonical.CodeExecutionFailed}); err != nil {
			t.Fatal(err)
		}
	}
	short = beginWith("c4", 10*time.Millisecond)
	if _, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: "c4", Owner: "o-c4",
		Status: canonical.StatusError, Code: canonical.CodeExecutionFailed}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	rep, err = s.Reap(ctx, canonical.ReapOptions{})
	if err != nil || rep.Runs != 1 || rep.Expired != 0 || len(rep.Abandoned) != 0 {
		t.Fatalf("reap of a run with nothing in flight: %+v, %v", rep, err)
	}
	if got := score(); got != "" {
		t.Fatalf("a run with nothing in flight is still scored %q", got)
	}
	if f, _ := redistest.Command(addr, "HEXISTS", s.Keys().Run(run), "due"); f != "0" {
		t.Fatalf("the run's state still has a due time")
	}
	next := beginWith("c5", time.Hour)
	if got := score(); got != strconv.FormatInt(next.LeaseUntil.UnixMilli(), 10) {
		t.Fatalf("a begin after the run left the set: scored %q, want %d", got, next.LeaseUntil.UnixMilli())
	}
}

func atoiT(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%q is not an integer", s)
	}
	return v
}

// BenchmarkReapExpired is the time to close 10,000 stuck calls, 10 in each
// of 1,000 runs, in one pass on a standalone server.
func BenchmarkReapExpired(b *testing.B) {
	s, _, _ := countedStore(b)
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
	s, cc, _ := countedStore(b)
	beginMany(b, s, "live", 1000, 1, time.Hour)
	cc.reset()
	for b.Loop() {
		rep, err := s.Reap(context.Background(), canonical.ReapOptions{})
		if err != nil || rep.Runs != 0 || rep.Expired != 0 {
			b.Fatalf("report %+v, %v", rep, err)
		}
	}
	trips, names := cc.reset()
	b.ReportMetric(float64(trips)/float64(b.N), "roundtrips/pass")
	b.ReportMetric(float64(names["ZRANGE"]+names["TIME"])/float64(b.N), "commands/pass")
}

// BenchmarkReapManyKeys is a pass over a server that holds 1,000,000
// unrelated keys beside 1,000 runs with a call in flight and 10 runs with
// a stuck call each: its time, what it sends, and the server's time
// (INFO commandstats) per pass.
func BenchmarkReapManyKeys(b *testing.B) {
	s, cc, addr := countedStore(b, "--enable-debug-command", "yes")
	if _, err := redistest.Command(addr, "DEBUG", "POPULATE", "1000000", "unrelated"); err != nil {
		b.Fatal(err)
	}
	beginMany(b, s, "live", 1000, 1, time.Hour)
	cc.reset()
	var usec int64
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		beginMany(b, s, fmt.Sprintf("dead%d", i), 10, 1, time.Millisecond)
		time.Sleep(5 * time.Millisecond)
		cc.reset()
		before := serverUsec(b, addr)
		b.StartTimer()
		rep, err := s.Reap(context.Background(), canonical.ReapOptions{})
		b.StopTimer()
		usec += serverUsec(b, addr) - before
		b.StartTimer()
		if err != nil || len(rep.Abandoned) != 10 {
			b.Fatalf("report %+v, %v", rep, err)
		}
	}
	trips, names := cc.reset()
	total := 0
	for _, n := range names {
		total += n
	}
	b.ReportMetric(float64(trips), "roundtrips/pass")
	b.ReportMetric(float64(total), "commands/pass")
	b.ReportMetric(float64(usec)/float64(b.N), "server-µs/pass")
}

// serverUsec is the time the server spent in commands, INFO excluded (INFO
// commandstats usec).
func serverUsec(tb testing.TB, addr string) int64 {
	tb.Helper()
	info, err := redistest.Command(addr, "INFO", "commandstats")
	if err != nil {
		tb.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "usec="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				total += n
			}
		}
	}
	return total
}
