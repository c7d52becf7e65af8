package test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// serverCommandsPerLifecycle bounds, per kind of lifecycle, the commands
// the server runs for one: the scripts sent (evalsha) and every command a
// script calls, as INFO commandstats counts them, averaged over
// lifecyclesPerRun calls in each of several runs (a run's first Begin does
// more: it makes the run's state). README's "Server work per lifecycle"
// states the same numbers; a change that adds work to a script fails here.
var serverCommandsPerLifecycle = map[string]map[string]float64{
	// begin: HMGET run, TIME, HSETNX record (its header, with a short
	// request), PEXPIREAT record NX, HSET run (its counters), ZADD calls: 6.
	// A begin whose record would outlive the run's keys extends them, to the
	// record's expiry and a granule more (PEXPIREAT of state and calls, SET
	// of the live marker: 3), so that the begins of the next granule extend
	// none; a run's first begin always does, also asks EXISTS of the run's
	// calls and marker, and puts the run in its slot's due set (ZADD, and
	// PEXPIREAT of the set; with NX after a GT that did not set an expiry,
	// for a set the ZADD made): 13. complete: HGET header, TIME, HINCRBY of
	// the run's room, ZADD calls, HSET record: 5. With the 2 EVALSHA: 13 and
	// a tenth of a first begin's extra 7 per lifecycle (measured: 13.7).
	"ready": {"evalsha": 2, "total": 13.8},
	"error": {"evalsha": 2, "total": 13.8},
	// abandon: HGET header, TIME, HSET header, ZADD calls: 4 (measured:
	// 12.7).
	"abandon": {"evalsha": 2, "total": 12.8},
	// With audit on (Options.Audit), each script appends its event: begin
	// raises the slot's count by two, its event's and its completion's,
	// comparing with the bound in the same INCRBY, and pushes the event
	// (RPUSH), writing the run's sequence number in the HSET it makes
	// anyway; complete takes its number with an HINCRBY and pushes its
	// event; abandon reads and sets the run's sequence number (HMGET, HSET)
	// and pushes its event. A run's first event also makes its list (LPUSH
	// of the head, PEXPIRE) and enters the slot's set (ZADD, PEXPIRE), and
	// a begin that extends the run's keys extends the list's (PEXPIREAT), a
	// tenth of a lifecycle here (measured: 18.3 each; layout 3: 21.5).
	"ready+audit":   {"evalsha": 2, "total": 18.4},
	"error+audit":   {"evalsha": 2, "total": 18.4},
	"abandon+audit": {"evalsha": 2, "total": 18.4},
	// continue: a begin, then await_input (HMGET record, TIME, HSET record,
	// ZADD calls XX, HGET of the run's due: 5), continue_call (HMGET run,
	// HMGET record, TIME, HSET record, ZADD calls XX: 5) and a complete:
	// with the 4 EVALSHA, 12 more than "ready" (measured: 25.9).
	"continue": {"evalsha": 4, "total": 26.0},
	// With audit on, await_input reads the run's due and sequence number in
	// one HMGET in place of the HGET and sets the number (HSET);
	// continue_call takes its number with an HINCRBY (the run's HMGET it
	// makes anyway reads the stream); each pushes its event (RPUSH) and
	// counts it in the slot's backlog (INCRBY): 3 each, 6 more than
	// "continue" with the begin's and complete's 4.6 (measured: 36.5).
	"continue+audit": {"evalsha": 4, "total": 36.6},
}

// lifecyclesPerRun is how many calls each run of the count holds.
const lifecyclesPerRun = 10

// The commands each lifecycle costs the server are counted and held to
// serverCommandsPerLifecycle: begin→complete READY, begin→complete ERROR,
// begin→abandon after the lease, begin→await input→continue→complete
// READY, each on a server of its own so that nothing else is counted.
func TestServerCommandsPerLifecycle(t *testing.T) {
	for _, kind := range []string{"ready", "error", "abandon", "continue", "ready+audit", "error+audit", "abandon+audit", "continue+audit"} {
		t.Run(kind, func(t *testing.T) {
			perLifecycle, cmds := countLifecycles(t, kind, 5, lifecyclesPerRun)
			var names []string
			for c := range cmds {
				names = append(names, c)
			}
			sort.Strings(names)
			var b strings.Builder
			for _, c := range names {
				fmt.Fprintf(&b, " %s=%.1f", c, cmds[c])
			}
			t.Logf("%s: %.1f commands per lifecycle:%s", kind, perLifecycle, b.String())
			limits := serverCommandsPerLifecycle[kind]
			if perLifecycle > limits["total"] {
				t.Errorf("%s: %.2f commands per lifecycle, over the stated %.1f", kind, perLifecycle, limits["total"])
			}
			if cmds["evalsha"] != limits["evalsha"] {
				t.Errorf("%s: %.2f scripts per lifecycle, want %.0f", kind, cmds["evalsha"], limits["evalsha"])
			}
		})
	}
}

// countLifecycles runs runs×perRun lifecycles of kind on a fresh server
// and returns the commands per lifecycle, in all and by name (INFO itself
// excluded).
func countLifecycles(t *testing.T, kind string, runs, perRun int) (float64, map[string]float64) {
	t.Helper()
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	o := redisstore.Options{Addrs: []string{srv.Addr}, Standalone: true}
	if k, ok := strings.CutSuffix(kind, "+audit"); ok {
		kind = k
		o.Audit = &canonical.AuditOptions{Key: make([]byte, canonical.MinAuditKey), KeyID: "count"}
	}
	s := open(t, o)
	// The scripts are loaded before the count (a first EVALSHA of each
	// fails NOSCRIPT and is sent again as EVAL).
	lifecycle(t, s, kind, "warmup-"+canonical.NewOwner()[:8], "c0")
	before := commandStats(t, srv.Addr)
	for r := range runs {
		run := fmt.Sprintf("count-%s-%d-%s", kind, r, canonical.NewOwner()[:8])
		for i := range perRun {
			lifecycle(t, s, kind, run, fmt.Sprintf("c%d", i))
		}
	}
	after := commandStats(t, srv.Addr)
	n := float64(runs * perRun)
	out, total := map[string]float64{}, 0.0
	for c, v := range after {
		if d := v - before[c]; d > 0 && c != "info" {
			out[c] = float64(d) / n
			total += float64(d)
		}
	}
	return total / n, out
}

// lifecycle runs one call of kind through the store.
func lifecycle(t *testing.T, s *redisstore.Store, kind, run, id string) {
	t.Helper()
	ctx := context.Background()
	req := begin(run, id)
	switch kind {
	case "abandon":
		req.Lease = time.Millisecond
	case "continue":
		req.Principal = "alice"
	}
	if _, err := s.Begin(ctx, req); err != nil {
		t.Fatal(err)
	}
	var err error
	switch kind {
	case "continue":
		// The call asks for input, is continued with it, and completes.
		if _, err = s.AwaitInput(ctx, canonical.AwaitInput{RunID: run, ToolCallID: id, Owner: "o-" + id, Token: "t-" + id,
			State: []byte(`{"page":2}`), Wait: time.Minute}); err != nil {
			break
		}
		if _, err = s.ContinueCall(ctx, canonical.ContinueCall{RunID: run, ToolCallID: id, Owner: "n-" + id, Principal: "alice",
			RequestDigest: canonical.RequestDigest(req.Request), Token: "t-" + id, Lease: time.Minute,
			Input: []byte(`{"confirm":{"action":"accept"}}`)}); err != nil {
			break
		}
		done := readyFor(run, id)
		done.Owner = "n-" + id
		_, err = s.Complete(ctx, done)
	case "ready":
		_, err = s.Complete(ctx, readyFor(run, id))
	case "error":
		_, err = s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: id, Owner: "o-" + id,
			Status: canonical.StatusError, Code: canonical.CodeProjectionFailed, Raw: []byte(`{"e":1}`)})
	case "abandon":
		time.Sleep(2 * time.Millisecond)
		_, err = s.Abandon(ctx, run, id)
	}
	if err != nil {
		t.Fatalf("%s %s/%s: %v", kind, run, id, err)
	}
}
