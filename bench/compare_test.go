package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/bench"
	"github.com/toolcanon/toolcanon/internal/pgtest"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func TestPercentiles(t *testing.T) {
	ds := make([]time.Duration, 0, 100)
	for i := 100; i >= 1; i-- { // unsorted on purpose
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	before := slices.Clone(ds)
	got := bench.Percentiles(ds, 0.5, 0.99, 1, 0.001)
	want := []time.Duration{50 * time.Millisecond, 99 * time.Millisecond, 100 * time.Millisecond, time.Millisecond}
	if !slices.Equal(got, want) {
		t.Fatalf("percentiles = %v, want %v", got, want)
	}
	if !slices.Equal(ds, before) {
		t.Fatal("Percentiles reordered its input")
	}
	if got := bench.Percentiles([]time.Duration{7}, 0.5, 0.99); got[0] != 7 || got[1] != 7 {
		t.Fatalf("one sample: %v", got)
	}
	if got := bench.Percentiles(nil, 0.5); got[0] != 0 {
		t.Fatalf("no samples: %v", got)
	}
}

// TestRoundTripsCounted measures the round trips of one lifecycle of every
// implementation through its own client, one caller at a time.
func TestRoundTripsCounted(t *testing.T) {
	addrs := []string{redistest.Addr(t)}
	const n = 2 * bench.CeilingBatch
	got := map[string]float64{}
	for _, name := range []string{"memstore", "redisstore", "seed", "watch", "goredis-lua", "ceiling", "floor", "postgres"} {
		impl := newImpl(t, name, addrs)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		// Warm-up: a first EVALSHA of go-redis finds no script and sends EVAL.
		if _, err := bench.Throughput(ctx, impl, bench.NewCalls("w"), bench.DefaultPayload(), 1, 1); err != nil {
			t.Fatal(err)
		}
		r, err := bench.Throughput(ctx, impl, bench.NewCalls("rt"), bench.DefaultPayload(), n, 1)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if r.Lifecycles != n || len(r.Latencies) != n {
			t.Fatalf("%s: %d lifecycles, %d latencies; want %d", name, r.Lifecycles, len(r.Latencies), n)
		}
		for _, d := range r.Latencies {
			if d <= 0 {
				t.Fatalf("%s: latency %v", name, d)
			}
		}
		got[name] = r.RoundTripsPerLifecycle()
	}
	t.Logf("round trips per lifecycle: %v", got)
	for name, want := range map[string]float64{
		"memstore":    0, // in process
		"redisstore":  2, // one EVALSHA per transition
		"goredis-lua": 2,
		"seed":        5,                                   // EXISTS, SET; GET, PTTL, SET
		"ceiling":     2.0 / float64(2*bench.CeilingBatch), // one DoMulti per batch
		"floor":       2,                                   // one HSET per transition
		"postgres":    2,                                   // one statement per transition
	} {
		if got[name] != want {
			t.Errorf("%s: %v round trips per lifecycle, want %v", name, got[name], want)
		}
	}
	// Each WATCH transition is at least WATCH, a read and MULTI/EXEC.
	if got["watch"] < 6 {
		t.Errorf("watch: %v round trips per lifecycle, want at least 6", got["watch"])
	}
}

func TestThroughputUncounted(t *testing.T) {
	r, err := bench.Throughput(context.Background(), &yes{}, bench.NewCalls("y"), bench.DefaultPayload(), 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lifecycles != 10 || len(r.Latencies) != 10 || r.RoundTrips != -1 || r.RoundTripsPerLifecycle() != -1 {
		t.Fatalf("rate = %+v", r)
	}
}

func TestThroughputFor(t *testing.T) {
	impl := newImpl(t, "memstore", nil)
	const d = 30 * time.Millisecond
	r, err := bench.ThroughputFor(context.Background(), impl, bench.NewCalls("f"), bench.DefaultPayload(), d, 4)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lifecycles == 0 || len(r.Latencies) != r.Lifecycles || r.Elapsed < d {
		t.Fatalf("rate: %d lifecycles, %d latencies, elapsed %v (want at least %v)", r.Lifecycles, len(r.Latencies), r.Elapsed, d)
	}
	// Each of the 4 callers runs its lifecycles one after another within
	// the pass: the latencies are positive and add up to at most 4 passes.
	var sum time.Duration
	for _, l := range r.Latencies {
		if l <= 0 {
			t.Fatalf("a latency of %v", l)
		}
		sum += l
	}
	if sum > 4*r.Elapsed {
		t.Fatalf("latencies add up to %v, more than 4 callers in %v", sum, r.Elapsed)
	}
}

// comparison returns a made-up comparison that passes the smoke checks.
func comparison() bench.Comparison {
	ok := bench.Columns{Rounds: 2, Beginners: 400, Completers: 64, WinnerStored: 2, Records: 400}
	pass := func(callers int, rates ...float64) bench.Pass {
		return bench.Pass{Callers: callers, Rates: rates, Lifecycles: 100, P50: time.Millisecond, P99: 3 * time.Millisecond, RoundTrips: 2}
	}
	return bench.Comparison{Callers: []int{1, 64}, Results: []bench.Result{
		{Name: bench.NameRedisStore, Ours: true, RoundTrips: 2, Passes: []bench.Pass{pass(1, 10, 30, 20), pass(64, 900, 100, 1000)}, Correctness: ok},
		{Name: bench.NameMemStore, Ours: true, InProcess: true, RoundTrips: 0, Passes: []bench.Pass{pass(1, 50), pass(64, 50)}, Correctness: ok},
		{Name: bench.SmokeBaseline, RoundTrips: 2, Passes: []bench.Pass{pass(1, 40, 40, 40), pass(64, 10, 800, 850)}, Correctness: ok},
		{Name: bench.NameSeed, RoundTrips: 5, Passes: []bench.Pass{pass(1, 99), pass(64, 9999)},
			Correctness: bench.Columns{Rounds: 2, DuplicatesExecuted: 300, LostUpdates: 60, WinnerStored: 2, TTLExtended: 390}},
		{Name: bench.NameFloor, RoundTrips: 2, Passes: []bench.Pass{pass(1, 40), pass(64, 3600)}},
		{Name: bench.NamePostgres, RoundTrips: 2, Passes: []bench.Pass{pass(1, 8, 4, 5), pass(64, 125)}, Correctness: ok},
	}}
}

func TestFailures(t *testing.T) {
	c := comparison()
	if f := c.Failures(64); len(f) != 0 {
		t.Fatalf("a passing comparison failed: %q", f)
	}
	if p, _ := c.Results[0].Pass(64); p.Median() != 900 {
		t.Fatalf("median of 900, 100, 1000 = %v", p.Median())
	}
	// At 1 caller redisstore's median (20) is below the baseline's (40).
	if f := c.Failures(1); len(f) != 1 || !strings.Contains(f[0], "below goredis-lua") {
		t.Fatalf("slower at 1 caller: %q", f)
	}
	// The best repetitions are compared, not the medians: one undisturbed
	// repetition of three is enough.
	c.Results[0].Passes[1].Rates = []float64{100, 1000, 100}
	if f := c.Failures(64); len(f) != 0 {
		t.Fatalf("redisstore's best (1000) is above watch's (850): %q", f)
	}
	c.Results[0].Passes[1].Rates = []float64{849, 849, 849}
	if f := c.Failures(64); len(f) != 1 || !strings.Contains(f[0], "849 lifecycles/s at 64 callers (best of 3), below goredis-lua's 850") {
		t.Fatalf("849 against 850: %q", f)
	}
	c = comparison()
	if f := c.Failures(8); len(f) != 1 || !strings.Contains(f[0], "no pass at 8") {
		t.Fatalf("no pass at 8 callers: %q", f)
	}
	c.Results[1].Correctness.LostUpdates = 1
	c.Results[0].Correctness.WinnerStored = 1
	c.Results[0].Correctness.TTLExtended = 3
	f := c.Failures(64)
	want := []string{
		"redisstore: rounds whose stored data was not a winner's 1",
		"redisstore: TTLs extended 3",
		"memstore (in process): lost updates 1",
	}
	if !slices.Equal(f, want) {
		t.Fatalf("failures = %q, want %q", f, want)
	}
	c = comparison()
	c.Results = c.Results[:2]
	if f := c.Failures(64); len(f) != 1 || !strings.Contains(f[0], "no redisstore or no goredis-lua") {
		t.Fatalf("no baseline row: %q", f)
	}
}

func TestWriteText(t *testing.T) {
	c := comparison()
	var b bytes.Buffer
	if err := c.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"lifecycles/s @1", "p99 @64", "round trips", "server commands", "900", "2.00x", "1.00 ms", "3.00 ms",
		"300 / 0", "390 / 0", bench.NameMemStore, "duplicates executed",
		"\nredisstore ÷ floor: 0.50x @1, 0.25x @64; redisstore ÷ postgres: 4.00x @1, 7.20x @64 (medians of the reps)\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	// The floor's scenarios were not run: its correctness row says so.
	if !regexp.MustCompile(`\n +floor +- +- +- +- +-\n`).MatchString(out) {
		t.Errorf("the floor's correctness row is not all '-':\n%s", out)
	}
	if lines := strings.Count(out, "\n"); lines < 2*len(c.Results)+4 {
		t.Errorf("%d lines:\n%s", lines, out)
	}
}

func TestRatio(t *testing.T) {
	c := comparison()
	for _, r := range []struct {
		name    string
		callers int
		want    float64
	}{{bench.NameFloor, 1, 0.5}, {bench.NameFloor, 64, 0.25}, {bench.NamePostgres, 1, 20.0 / 5}, {bench.NamePostgres, 64, 7.2},
		{bench.NamePostgres, 8, 0}, {"nothing", 1, 0}} {
		if got := c.Ratio(r.name, r.callers); math.Abs(got-r.want) > 1e-9 {
			t.Errorf("redisstore ÷ %s @%d = %v, want %v", r.name, r.callers, got, r.want)
		}
	}
	c.Results = c.Results[:len(c.Results)-1] // no postgres row
	if got := c.RatioLine(); got != "redisstore ÷ floor: 0.50x @1, 0.25x @64; redisstore ÷ postgres: - @1, - @64 (medians of the reps)" {
		t.Errorf("ratio line without postgres: %q", got)
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{bench.FormatRoundTrips(-1), "-"},
		{bench.FormatRoundTrips(2), "2"},
		{bench.FormatRoundTrips(1.0 / 128), "0.01"},
		{bench.FormatRatio(3, 2), "1.50x"},
		{bench.FormatRatio(3, 0), "-"},
		{bench.FormatMs(214 * time.Microsecond), "0.214 ms"},
		{bench.FormatMs(12340 * time.Microsecond), "12.3 ms"},
		{bench.FormatMs(140 * time.Millisecond), "140 ms"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestCompare runs a short comparison end to end on a real server and reads
// its JSON back. Throughput is not judged here (timing on a loaded machine);
// the structure, the counted round trips of toolcanon's stores and their
// correctness columns are.
func TestCompare(t *testing.T) {
	o := bench.DefaultCompareOptions(redistest.Addr(t))
	o.PostgresDSN = pgtest.Database(t)
	o.Duration, o.Callers, o.Reps = 20*time.Millisecond, []int{1, 4}, 2
	o.Contention = bench.Sizes{Beginners: 20, Completers: 8, Records: 10, Rounds: 1}
	c, err := bench.Compare(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back bench.Comparison
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Results) != 8 || back.PassDuration != o.Duration || back.Lifecycles != 0 || back.RedisVersion == "" ||
		!strings.HasPrefix(back.PostgresVersion, "1") || back.PostgresConns != bench.DefaultPostgresConns {
		t.Fatalf("comparison: %s", b)
	}
	for _, r := range back.Results {
		if len(r.Passes) != 2 {
			t.Fatalf("%s: %d passes", r.Name, len(r.Passes))
		}
		for _, p := range r.Passes {
			if len(p.Rates) != 2 || p.Median() <= 0 || p.Lifecycles == 0 || p.P50 <= 0 || p.P99 < p.P50 {
				t.Errorf("%s at %d callers: %+v", r.Name, p.Callers, p)
			}
			if (r.Name == bench.NameRedisStore || r.Name == bench.NameFloor || r.Name == bench.NamePostgres) && p.RoundTrips != 2 ||
				r.Name == bench.NameMemStore && p.RoundTrips != 0 {
				t.Errorf("%s at %d callers: %v round trips per lifecycle", r.Name, p.Callers, p.RoundTrips)
			}
		}
		if r.Name == bench.NameFloor { // promises nothing: not checked
			if r.Correctness != (bench.Columns{}) {
				t.Errorf("floor: correctness %+v, want none", r.Correctness)
			}
			continue
		}
		if r.Correctness.Rounds != 1 || r.Correctness.Beginners != 20 || r.Correctness.Records != 10 {
			t.Errorf("%s: correctness %+v", r.Name, r.Correctness)
		}
		if r.Ours || r.Name == bench.NamePostgres {
			if f := r.Correctness.Failed(); len(f) != 0 {
				t.Errorf("%s: %q", r.Name, f)
			}
		}
	}
	rs, _ := back.Result(bench.NameRedisStore)
	ms, _ := back.Result(bench.NameMemStore)
	fl, _ := back.Result(bench.NameFloor)
	pg, _ := back.Result(bench.NamePostgres)
	if rs.RoundTrips != 2 || ms.RoundTrips != 0 {
		t.Errorf("round trips: redisstore %v, memstore %v", rs.RoundTrips, ms.RoundTrips)
	}
	// At least its two scripts and the commands they call; the floor's two
	// HSETs; no count for a store in process or on PostgreSQL. (Other tests
	// share the server: no upper bound here, test/servercommands_test.go
	// holds one on a server of its own.)
	if rs.ServerCommands < 10 || fl.ServerCommands < 2 || ms.ServerCommands != -1 || pg.ServerCommands != -1 {
		t.Errorf("server commands per lifecycle: redisstore %v, floor %v, memstore %v, postgres %v",
			rs.ServerCommands, fl.ServerCommands, ms.ServerCommands, pg.ServerCommands)
	}
	if fl.Server != "redis" || pg.Server != "postgres" || ms.Server != "" || !ms.InProcess {
		t.Errorf("servers: floor %q, postgres %q, memstore %q", fl.Server, pg.Server, ms.Server)
	}
	for _, n := range o.Callers {
		if back.Ratio(bench.NameFloor, n) <= 0 || back.Ratio(bench.NamePostgres, n) <= 0 {
			t.Errorf("no ratio at %d callers: %s", n, back.RatioLine())
		}
	}
}
