package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
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
	if rf.addrs == "" {
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
		fmt.Fprintf(stderr, "toolcanon doctor: cannot check Redis at %s: %v\n", rf.addrs, rootCause(err))
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

// reapCmd abandons every call of a run whose lease has passed.
func reapCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var rf redisFlags
	rf.register(fs)
	runID := fs.String("run", "", "run id (required)")
	maxCalls := fs.Int("max", 10000, "abandon at most this many calls")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if rf.addrs == "" || *runID == "" {
		fmt.Fprintln(stderr, "toolcanon reap: --redis and --run are required")
		return exitUsage
	}
	if canonical.ValidateRunID(*runID) != nil {
		fmt.Fprintf(stderr, "toolcanon reap: invalid --run %q: use 1-128 characters of [A-Za-z0-9_.-]\n", *runID)
		return exitUsage
	}
	if *maxCalls < 1 || *maxCalls > canonical.MaxIndexRead {
		fmt.Fprintf(stderr, "toolcanon reap: --max must be in 1..%d\n", canonical.MaxIndexRead)
		return exitUsage
	}
	store, err := rf.open()
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon reap: %v\n", err)
		return codeExit(err)
	}
	defer store.Close()
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
	if rf.addrs == "" || *runID == "" || *call == "" {
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
