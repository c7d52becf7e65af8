package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/reaper"
)

// opsTimeout bounds one operator command.
const opsTimeout = 30 * time.Second

// doctorCmd reports the server settings the store's guarantees assume.
func doctorCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var rf redisFlags
	rf.register(fs)
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if err := rf.check(); err != nil {
		fmt.Fprintf(stderr, "toolcanon doctor: %v\n", err)
		return exitUsage
	}
	if !rf.given() || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "toolcanon doctor: --redis is required")
		return exitUsage
	}
	store, err := rf.open()
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon doctor: %v\n", err)
		return codeExit(err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opsTimeout)
	defer cancel()
	rep, err := store.Check(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon doctor: cannot check Redis at %s: %v\n", rf.spec, rootCause(err))
		return codeExit(err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil || rep.Failures() > 0 {
			return exitFailure
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "Connection to %s\n", rf.spec)
	for _, f := range rep.Findings {
		fmt.Fprintf(stdout, "  %s\n", f)
	}
	for _, n := range rep.Nodes {
		fmt.Fprintf(stdout, "Redis at %s\n", n.Addr)
		for _, f := range n.Findings {
			fmt.Fprintf(stdout, "  %s\n", f)
		}
	}
	if w := rep.Warnings(); w > 0 {
		fmt.Fprintf(stdout, "%d warning(s): the guarantees hold only as far as these settings allow (see the README's server settings)\n", w)
	} else {
		fmt.Fprintln(stdout, "no warnings")
	}
	if f := rep.Failures(); f > 0 {
		fmt.Fprintf(stdout, "%d failure(s): a guarantee does not hold with these settings\n", f)
		return exitFailure
	}
	return exitOK
}

// reapBatch is how many expired leases reap reads at a time.
const reapBatch = 256

// reapCmd abandons the calls whose lease has passed: of one run (--run), or
// of every run of the store (--all), once or as a service.
func reapCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var rf redisFlags
	rf.register(fs)
	runID := fs.String("run", "", "run id")
	all := fs.Bool("all", false, "every run of the store, found on every master: a pass every --interval until stopped")
	once := fs.Bool("once", false, "with --all: one pass, then exit")
	interval := fs.Duration("interval", reaper.DefaultInterval, "with --all: time between passes")
	batch := fs.Int("batch", canonical.DefaultReapBatch, "with --all: due runs read of a slot at a time, leases read of a run at a time")
	maxCalls := fs.Int("max", 10000, "abandon at most this many calls (with --all: per pass)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if err := rf.check(); err != nil {
		fmt.Fprintf(stderr, "toolcanon reap: %v\n", err)
		return exitUsage
	}
	if !rf.given() || (*runID == "") == !*all || (*once && !*all) || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "toolcanon reap: --redis and one of --run and --all are required")
		return exitUsage
	}
	if *runID != "" && canonical.ValidateRunID(*runID) != nil {
		fmt.Fprintf(stderr, "toolcanon reap: invalid --run %q: use 1-128 characters of [A-Za-z0-9_.-]\n", *runID)
		return exitUsage
	}
	if *maxCalls < 1 || *maxCalls > canonical.MaxIndexRead {
		fmt.Fprintf(stderr, "toolcanon reap: --max must be in 1..%d\n", canonical.MaxIndexRead)
		return exitUsage
	}
	ro := reaper.Options{Interval: *interval, Reap: canonical.ReapOptions{Batch: *batch, MaxAbandon: *maxCalls}}
	if *all {
		if *batch < 1 || *interval <= 0 {
			fmt.Fprintf(stderr, "toolcanon reap: --batch must be in 1..%d and --interval at least %v\n", canonical.MaxReapBatch, reaper.MinInterval)
			return exitUsage
		}
		if err := ro.Validate(); err != nil {
			fmt.Fprintf(stderr, "toolcanon reap: %v\n", err)
			return exitUsage
		}
	}
	store, err := rf.open()
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon reap: %v\n", err)
		return codeExit(err)
	}
	defer store.Close()
	if *all {
		return reapAll(store, ro, *once, stdout, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opsTimeout)
	defer cancel()
	n, err := reap(ctx, stdout, store, *runID, *maxCalls)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon reap: %v\n", err)
		return codeExit(err)
	}
	fmt.Fprintf(stdout, "run %s: %d call(s) abandoned\n", *runID, n)
	return exitOK
}

// reapAll runs reap passes over every run of the store: one with once,
// printing each abandoned call and what the pass did, else a pass every
// interval, logged, until SIGINT or SIGTERM.
func reapAll(store canonical.Store, o reaper.Options, once bool, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if !once {
		o.Logger = slog.New(slog.NewTextHandler(stdout, &slog.HandlerOptions{Level: slog.LevelInfo}))
		fmt.Fprintf(stderr, "toolcanon reap: reaping every run every %v (batch %d, at most %d calls a pass); stop with SIGINT or SIGTERM\n",
			o.Interval, o.Reap.Batch, o.Reap.MaxAbandon)
		if err := reaper.Run(ctx, store, o); err != nil {
			fmt.Fprintf(stderr, "toolcanon reap: %v\n", err)
			return codeExit(err)
		}
		return exitOK
	}
	start := time.Now()
	rep, err := store.Reap(ctx, o.Reap)
	for _, c := range rep.Abandoned {
		fmt.Fprintf(stdout, "%s %s  abandoned: ERROR %s (lease passed %s before)\n", c.RunID, c.ToolCallID,
			canonical.CodeExecutionAbandoned, c.AbandonedAt.Sub(c.LeaseUntil).Round(time.Millisecond))
	}
	more := ""
	if rep.Truncated {
		more = "; stopped early, more may be left: run again"
	}
	fmt.Fprintf(stdout, "%d node(s), %d step(s), %d run(s) looked at, %d lease(s) passed: %d call(s) abandoned, %d gone, %d skipped, %d error(s) in %v%s\n",
		rep.Nodes, rep.Steps, rep.Runs, rep.Expired, len(rep.Abandoned), rep.Gone, rep.Skipped, rep.Errors,
		time.Since(start).Round(time.Millisecond), more)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon reap: %v\n", err)
		return codeExit(err)
	}
	return exitOK
}

// reap abandons up to max calls of the run whose lease has passed, printing
// one line per call, and returns how many it abandoned. It stops when a batch
// changes nothing, so that a lease another node's clock still sees running
// cannot keep it looping.
func reap(ctx context.Context, w io.Writer, store canonical.Store, runID string, max int) (int, error) {
	abandoned := 0
	for abandoned < max {
		ids, err := store.ExpiredLeases(ctx, runID, min(reapBatch, max-abandoned))
		if err != nil {
			return abandoned, err
		}
		progress := false
		for _, id := range ids {
			rec, err := store.Abandon(ctx, runID, id)
			switch canonical.CodeOf(err) {
			case "":
				abandoned++
				progress = true
				fmt.Fprintf(w, "%s  abandoned: ERROR %s (lease passed %s before)\n", id, rec.Error,
					rec.UpdatedAt.Sub(rec.LeaseUntil).Round(time.Millisecond))
			case canonical.CodeNotFound:
				progress = true
				fmt.Fprintf(w, "%s  gone: the record expired\n", id)
			case canonical.CodeInvalidTransition:
				fmt.Fprintf(w, "%s  not abandoned: %v\n", id, err)
			default:
				return abandoned, err
			}
		}
		if !progress {
			break
		}
	}
	return abandoned, nil
}

// abandonCmd abandons one call whose lease has passed.
func abandonCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("abandon", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var rf redisFlags
	rf.register(fs)
	runID := fs.String("run", "", "run id (required)")
	call := fs.String("call", "", "tool_call_id (required)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if err := rf.check(); err != nil {
		fmt.Fprintf(stderr, "toolcanon abandon: %v\n", err)
		return exitUsage
	}
	if !rf.given() || *runID == "" || *call == "" {
		fmt.Fprintln(stderr, "toolcanon abandon: --redis, --run and --call are required")
		return exitUsage
	}
	if canonical.ValidateRunID(*runID) != nil || canonical.ValidateToolCallID(*call) != nil {
		fmt.Fprintln(stderr, "toolcanon abandon: invalid --run or --call: use 1-128 characters of [A-Za-z0-9_.-]")
		return exitUsage
	}
	store, err := rf.open()
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon abandon: %v\n", err)
		return codeExit(err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opsTimeout)
	defer cancel()
	rec, err := store.Abandon(ctx, *runID, *call)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon abandon: %s: %v\n", *call, err)
		return codeExit(err)
	}
	fmt.Fprintf(stdout, "%s  %s %s (lease passed %s before; the record expires in %s)\n", *call, rec.Status, rec.Error,
		rec.UpdatedAt.Sub(rec.LeaseUntil).Round(time.Millisecond), rec.TTL.Round(time.Second))
	return exitOK
}
