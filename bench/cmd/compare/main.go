// Command compare runs toolcanon's lifecycle and its baselines side by side,
// in one run on one Redis server, and prints their throughput as ratios to
// toolcanon's redisstore next to the correctness columns measured by the
// contention scenarios of package bench.
//
// Usage:
//
//	go run ./bench/cmd/compare [-redis ADDR] [-n 5000] [-c 32] [-reps 3] [-rounds 3]
//
// Without -redis it starts a redis-server of its own on a free loopback port
// and stops it at the end. With -redis it writes keys under its own prefix
// on that server and removes them afterwards.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolcanon/toolcanon/bench"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func main() {
	addr := flag.String("redis", "", "address of the Redis server to use (default: start a redis-server on a free loopback port)")
	n := flag.Int("n", 5000, "lifecycles per implementation and repetition")
	conc := flag.Int("c", 32, "goroutines running lifecycles at once")
	reps := flag.Int("reps", 3, "repetitions of the throughput pass (the median is reported)")
	rounds := flag.Int("rounds", 3, "rounds of each contention scenario")
	timeout := flag.Duration("timeout", 2*time.Minute, "time limit per implementation and pass")
	flag.Parse()
	if *n < 1 || *conc < 1 || *reps < 1 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "compare: -n, -c, -reps and -rounds must be positive")
		os.Exit(2)
	}
	if err := compare(*addr, *n, *conc, *reps, *rounds, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

// row is one implementation's line of the table.
type row struct {
	name  string
	rates []float64 // lifecycles/s, one per repetition
	check bench.Correctness
}

func (r *row) median() float64 {
	s := slices.Clone(r.rates)
	slices.Sort(s)
	return s[len(s)/2]
}

func compare(addr string, n, conc, reps, rounds int, timeout time.Duration) error {
	if addr == "" {
		srv, err := redistest.StartServer()
		if err != nil {
			return err
		}
		defer srv.Stop()
		addr = srv.Addr
	}
	version := "unknown"
	if info, err := redistest.Command(addr, "INFO", "server"); err == nil {
		for _, l := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
				version = v
			}
		}
	} else {
		return fmt.Errorf("redis at %s: %w", addr, err)
	}

	tag := fmt.Sprintf("cmp%d", os.Getpid())
	type maker func(cfg bench.Config) (bench.Impl, error)
	addrs := []string{addr}
	makers := []struct {
		name   string
		redis  bool
		create maker
	}{
		{"redisstore", true, func(cfg bench.Config) (bench.Impl, error) { return bench.NewRedisStore("redisstore", addrs, cfg) }},
		{"memstore (in process)", false, func(cfg bench.Config) (bench.Impl, error) {
			return bench.NewMemStore("memstore (in process)", cfg), nil
		}},
		{"seed", true, func(cfg bench.Config) (bench.Impl, error) { return bench.NewSeed(addrs, cfg), nil }},
		{"watch", true, func(cfg bench.Config) (bench.Impl, error) { return bench.NewWatch(addrs, cfg) }},
		{"goredis-lua", true, func(cfg bench.Config) (bench.Impl, error) { return bench.NewGoRedisLua(addrs, cfg) }},
		{"ceiling", true, func(cfg bench.Config) (bench.Impl, error) { return bench.NewCeiling("ceiling", addr, cfg) }},
	}
	probe := bench.NewProbe(addrs)
	defer probe.Close()
	p := bench.DefaultPayload()
	impls := make([]bench.Impl, len(makers))
	prefixes := make([]string, len(makers))
	for i, m := range makers {
		cfg := bench.DefaultConfig(fmt.Sprintf("%s-%d", tag, i))
		impl, err := m.create(cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		defer impl.Close()
		impls[i], prefixes[i] = impl, cfg.Prefix
	}
	clean := func(i int) {
		if makers[i].redis {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := probe.DeletePrefix(ctx, prefixes[i]); err != nil {
				fmt.Fprintf(os.Stderr, "compare: remove %s keys: %v\n", makers[i].name, err)
			}
		}
	}

	rows := make([]row, len(impls))
	// Repetitions interleave the implementations, so that a slow moment of
	// a shared machine does not fall on one of them only.
	for rep := 0; rep < reps; rep++ {
		for i, impl := range impls {
			rows[i].name = makers[i].name
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			calls := bench.NewCalls("t")
			if rep == 0 { // warm-up: connections open, scripts loaded
				if _, err := bench.Throughput(ctx, impl, calls, p, min(n, 500), conc); err != nil {
					cancel()
					return fmt.Errorf("%s warm-up: %w", impl.Name(), err)
				}
			}
			r, err := bench.Throughput(ctx, impl, calls, p, n, conc)
			cancel()
			if err != nil {
				return fmt.Errorf("%s: %w", impl.Name(), err)
			}
			rows[i].rates = append(rows[i].rates, r.PerSecond())
			clean(i)
		}
	}
	sizes := bench.Sizes{Beginners: bench.DefaultBeginners, Completers: bench.DefaultCompleters, Records: bench.DefaultRecords, Rounds: rounds}
	for i, impl := range impls {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		c, err := bench.Check(ctx, impl, p, sizes)
		cancel()
		if err != nil {
			return err
		}
		rows[i].check = c
		clean(i)
	}

	fmt.Printf("redis %s at %s; GOMAXPROCS=%d; %d lifecycles x %d reps per implementation at concurrency %d (median shown)\n",
		version, addr, runtime.GOMAXPROCS(0), n, reps, conc)
	fmt.Printf("lifecycle = Begin + Complete(READY): request %d B, raw %d B, result %d B; ceiling pipelines %d lifecycles per round trip\n",
		len(p.Request), len(p.Raw), len(p.Result), bench.CeilingBatch)
	fmt.Printf("contention, %d rounds: %d goroutines begin one id; %d complete one record; %d records completed at once between expiry reads\n\n",
		rounds, sizes.Beginners, sizes.Completers, sizes.Records)
	ref := rows[0].median()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "implementation\tlifecycles/s\tvs redisstore\tduplicates executed\tlost updates\twinner stored\tTTL extended\tmax extension\t")
	for _, r := range rows {
		c := r.check
		fmt.Fprintf(w, "%s\t%.0f\t%.2fx\t%d / %d\t%d / %d\t%d / %d\t%d / %d\t%d ms\t\n",
			r.name, r.median(), r.median()/ref,
			c.DuplicatesExecuted(), c.Duplicates.Beginners,
			c.LostUpdates(), c.LostUpdate.Completers,
			c.WinnerStored, c.Rounds,
			c.TTL.Extended, c.TTL.Records, c.TTL.MaxMs)
	}
	return w.Flush()
}
