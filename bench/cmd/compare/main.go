// Command compare runs toolcanon's lifecycle and its baselines side by side,
// in one run on one Redis server, and prints, for every implementation, its
// round trips per lifecycle, its throughput (and its ratio to toolcanon's
// redisstore) and its p50 and p99 lifecycle latency at each caller count,
// then the correctness columns measured by the contention scenarios of
// package bench.
//
// Usage:
//
//	go run ./bench/cmd/compare [-redis ADDR] [-postgres DSN] [-pg-conns 16] [-n 5000 | -d 300ms] [-c 1,64] [-reps 3] [-rounds 3] [-json] [-check] [-v] [-audit]
//
// -audit compares redisstore with its audit stream on (redisstore+audit)
// and off, and nothing else, passes alternating; it prints
// redisstore+audit ÷ redisstore.
//
// Without -redis it starts a redis-server of its own on a free loopback port
// and stops it at the end. With -redis it writes keys under its own prefix
// on that server and removes them afterwards. Likewise without -postgres it
// starts a PostgreSQL server of its own (package internal/pgtest: the
// machine's postgres binaries, Debian's postgresql package) for the
// postgres row; with -postgres it creates its tables in a schema of its own
// in that database and drops it afterwards.
//
// -json prints the comparison as JSON (bench.Comparison) instead of the
// tables. -check makes it a smoke test: after printing, it exits 1 when a
// correctness column of toolcanon's stores is not zero or when redisstore's
// best repetition is below go-redis running the same scripts at the largest caller
// count (see bench.Comparison.Failures). Every run prints redisstore ÷ floor
// and redisstore ÷ postgres at each caller count.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/toolcanon/toolcanon/bench"
	"github.com/toolcanon/toolcanon/internal/pgtest"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func main() {
	addr := flag.String("redis", "", "address of the Redis server to use (default: start a redis-server on a free loopback port)")
	pgDSN := flag.String("postgres", "", "PostgreSQL database of the postgres row (default: start a postgres server on a free loopback port)")
	pgConns := flag.Int("pg-conns", bench.DefaultPostgresConns, "connection pool of the postgres row")
	n := flag.Int("n", 5000, "lifecycles per implementation, caller count and repetition")
	d := flag.Duration("d", 0, "time each pass for this long instead of for -n lifecycles (e.g. 300ms)")
	callers := flag.String("c", "1,64", "caller counts: goroutines running lifecycles at once, comma-separated")
	reps := flag.Int("reps", 3, "repetitions of each throughput pass (the median rate is reported)")
	rounds := flag.Int("rounds", 3, "rounds of each contention scenario")
	timeout := flag.Duration("timeout", 2*time.Minute, "time limit per implementation and pass")
	asJSON := flag.Bool("json", false, "print the comparison as JSON instead of tables")
	check := flag.Bool("check", false, "exit 1 when a correctness column of toolcanon's stores is not zero or redisstore is slower than go-redis running the same scripts (bench.SmokeBaseline) at the largest caller count")
	verbose := flag.Bool("v", false, "log each measurement on stderr as it ends")
	withAudit := flag.Bool("audit", false, "compare redisstore with its audit stream on and off, alone, passes alternating")
	flag.Parse()
	cs, err := parseCallers(*callers)
	if err != nil || *n < 1 || *d < 0 || *reps < 1 || *rounds < 1 || *timeout <= 0 || *pgConns < 1 {
		fmt.Fprintln(os.Stderr, "compare: -n, -reps, -rounds, -timeout and -pg-conns must be positive, -d not negative, -c a list of positive counts")
		os.Exit(2)
	}
	o := bench.DefaultCompareOptions(*addr)
	o.Lifecycles, o.Duration, o.Callers, o.Reps, o.Timeout = *n, *d, cs, *reps, *timeout
	o.PostgresDSN, o.PostgresConns = *pgDSN, *pgConns
	o.Contention.Rounds = *rounds
	o.Audit = *withAudit
	if *verbose {
		o.Log = os.Stderr
	}
	// An interrupt or a timeout's TERM ends the comparison through its
	// context, so that the server it started is stopped.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	failures, err := run(ctx, o, *asJSON, *check, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
	if len(failures) > 0 {
		fmt.Fprintf(os.Stderr, "compare: %d check(s) failed:\n  %s\n", len(failures), strings.Join(failures, "\n  "))
		os.Exit(1)
	}
}

// parseCallers reads a comma-separated list of positive counts.
func parseCallers(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("bad caller count %q", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// run compares on o.Addr and o.PostgresDSN (on servers of its own when
// empty), prints the comparison to w and, with check, returns what fails
// the smoke test.
func run(ctx context.Context, o bench.CompareOptions, asJSON, check bool, w io.Writer) ([]string, error) {
	if o.Addr == "" {
		srv, err := redistest.StartServer()
		if err != nil {
			return nil, err
		}
		defer srv.Stop()
		o.Addr = srv.Addr
	}
	if o.PostgresDSN == "" && !o.Audit {
		// As many connections as the pool and the probes need, and no more:
		// every backend is a process on the same cores.
		srv, err := pgtest.Start(fmt.Sprintf("max_connections=%d", o.PostgresConns+10))
		if err != nil {
			return nil, err
		}
		defer srv.Stop()
		if o.PostgresDSN, err = srv.CreateDatabase(ctx, "bench"); err != nil {
			return nil, err
		}
	}
	c, err := bench.Compare(ctx, o)
	if err != nil {
		return nil, err
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(c)
	} else {
		err = c.WriteText(w)
	}
	if err != nil || !check {
		return nil, err
	}
	n := slices.Max(o.Callers)
	failures := c.Failures(n)
	if !asJSON {
		ours, _ := c.Result(bench.NameRedisStore)
		base, _ := c.Result(bench.SmokeBaseline)
		op, _ := ours.Pass(n)
		bp, _ := base.Pass(n)
		verdict := "ok"
		if len(failures) > 0 {
			verdict = fmt.Sprintf("%d failure(s)", len(failures))
		}
		fmt.Fprintf(w, "\ncheck: correctness columns of toolcanon's stores, and at %d callers (best of the reps) %s %.0f lifecycles/s against %s %.0f (%s): %s\n",
			n, bench.NameRedisStore, op.Best(), bench.SmokeBaseline, bp.Best(), bench.FormatRatio(op.Best(), bp.Best()), verdict)
	}
	return failures, nil
}
