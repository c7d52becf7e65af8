package test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// replicated starts a master and a replica that streams from it.
func replicated(t *testing.T) (master, replica *redistest.Server) {
	t.Helper()
	master, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(master.Stop)
	replica, err = redistest.StartServer("--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Stop)
	waitLinkUp(t, replica.Addr)
	waitReplicated(t, master.Addr, replica.Addr)
	return master, replica
}

// fillerBytes is what stall writes once the replica is stopped: more than
// the loopback sockets between master and replica buffer, so that what the
// master writes after it waits in the master's own memory, and dies with
// it. It stays below the master's 64 MB soft limit for a replica's output.
const fillerBytes = 40 << 20

// stall stops the replica (SIGSTOP: its link stays up, it acknowledges
// nothing) and writes fillerBytes on the master, in keys of their own that
// expire, through a connection of the test's. The keys carry the hash tag
// tag (a run id), so that on a cluster they land on the master of its slot.
func stall(t *testing.T, replica *redistest.Server, master, tag string) {
	t.Helper()
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = replica.Resume() })
	value := strings.Repeat("f", 1<<20)
	var cmds [][]string
	for i := 0; i < fillerBytes>>20; i++ {
		cmds = append(cmds, []string{"SET", "filler:{" + tag + "}:" + strconv.Itoa(i), value, "PX", "120000"})
	}
	for from := 0; from < len(cmds); from += 8 {
		if _, err := redistest.Pipeline(master, cmds[from:min(from+8, len(cmds))]...); err != nil {
			t.Fatalf("filler on %s: %v", master, err)
		}
	}
}

// unavailable fails t unless err is STORE_UNAVAILABLE.
func unavailable(t *testing.T, what string, err error) {
	t.Helper()
	if canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
		t.Errorf("%s while the replica is stalled: %v, want STORE_UNAVAILABLE", what, err)
	}
}

// While the only replica is stalled, no state change under Durability
// succeeds: not the first attempt, and not the owner's retry, through the
// same store or through a new one (a worker that reconnected). Redis 7.2+
// and Valkey count, in a connection's WAIT, only what that connection
// propagated: a retry that finds its own record and writes nothing would
// otherwise be acknowledged at once.
func TestDurabilityRetriesFailWhileTheReplicaStalls(t *testing.T) {
	master, replica := replicated(t)
	opts := redisstore.Options{Addrs: []string{master.Addr}, Timeout: 5 * time.Second,
		Durability: redisstore.Durability{Replicas: 1, Timeout: 300 * time.Millisecond}}
	s, again := open(t, opts), open(t, opts)
	ctx := context.Background()
	run := "stall-" + canonical.NewOwner()[:8]

	if _, err := s.Begin(ctx, begin(run, "done")); err != nil {
		t.Fatal(err)
	}
	lapsed := begin(run, "lapsed")
	lapsed.Lease = time.Millisecond
	if _, err := s.Begin(ctx, lapsed); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // lapsed's lease passes

	stall(t, replica, master.Addr, run)
	for i, st := range []*redisstore.Store{s, s, again, again} {
		what := fmt.Sprintf("attempt %d", i+1)
		_, err := st.Begin(ctx, begin(run, "new"))
		unavailable(t, what+" of Begin", err)
		_, err = st.Complete(ctx, readyFor(run, "done"))
		unavailable(t, what+" of Complete", err)
		_, err = st.Abandon(ctx, run, "lapsed")
		unavailable(t, what+" of Abandon", err)
	}
	if t.Failed() {
		return
	}

	// Once the replica is back, the owners' retries return the stored
	// outcomes, counted once.
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	waitReplicated(t, master.Addr, replica.Addr)
	if rec, err := again.Begin(ctx, begin(run, "new")); err != nil || rec.Status != canonical.StatusProjecting {
		t.Fatalf("Begin once the replica is back: %v, %v", rec.Status, err)
	}
	if rec, err := again.Complete(ctx, readyFor(run, "done")); err != nil || rec.Status != canonical.StatusReady {
		t.Fatalf("Complete once the replica is back: %v, %v", rec.Status, err)
	}
	if rec, err := again.Abandon(ctx, run, "lapsed"); err != nil || rec.Error != canonical.CodeExecutionAbandoned {
		t.Fatalf("Abandon once the replica is back: %+v, %v", rec, err)
	}
	if u, err := s.Usage(ctx, run); err != nil || u.Calls != 3 {
		t.Fatalf("usage %+v, %v: want 3 calls, each counted once", u, err)
	}
}

// A duplicate that a host would replay shows a completion only once a
// replica has it: a completion made while the only replica is stalled
// (by a worker without Durability here) is not handed to a durable
// worker's replay, whose Begin answers STORE_UNAVAILABLE until the replica
// is back, then the stored outcome.
func TestDurabilityReplayWaitsForTheCompletion(t *testing.T) {
	master, replica := replicated(t)
	plain := open(t, redisstore.Options{Addrs: []string{master.Addr}})
	durable := open(t, redisstore.Options{Addrs: []string{master.Addr}, Timeout: 5 * time.Second,
		Durability: redisstore.Durability{Replicas: 1, Timeout: 300 * time.Millisecond}})
	ctx := context.Background()
	run := "replay-" + canonical.NewOwner()[:8]
	if _, err := plain.Begin(ctx, begin(run, "c1")); err != nil {
		t.Fatal(err)
	}
	waitReplicated(t, master.Addr, replica.Addr)
	stall(t, replica, master.Addr, run)
	if _, err := plain.Complete(ctx, readyFor(run, "c1")); err != nil {
		t.Fatal(err)
	}
	dup := begin(run, "c1")
	dup.Owner = "o-replay"
	for range 2 {
		_, err := durable.Begin(ctx, dup)
		if first, ok := canonical.ReplayableOf(err); ok || canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
			t.Fatalf("a replayable duplicate while the replica is stalled: %v (carrying %+v); want STORE_UNAVAILABLE", err, first)
		}
	}
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	waitReplicated(t, master.Addr, replica.Addr)
	_, err := durable.Begin(ctx, dup)
	if first, ok := canonical.ReplayableOf(err); !ok || first.Status != canonical.StatusReady {
		t.Fatalf("the duplicate once the replica is back: %v, %+v", err, first)
	}
}

// A tool_call_id whose Begin was ever reported done is never begun again,
// not even after the master dies with writes its stalled replica never got
// and the replica takes its place. Owners retry their Begins while the
// replica is stalled, through the store that failed and through a new one.
func TestDurabilityNoCallBegunTwiceAcrossFailover(t *testing.T) {
	master, replica := replicated(t)
	opts := redisstore.Options{Addrs: []string{master.Addr}, Timeout: 5 * time.Second,
		Durability: redisstore.Durability{Replicas: 1, Timeout: 200 * time.Millisecond}}
	s, again := open(t, opts), open(t, opts)
	ctx := context.Background()
	run := "twice-" + canonical.NewOwner()[:8]

	var begun []string // every id whose Begin some call reported done
	try := func(st *redisstore.Store, id string) {
		if _, err := st.Begin(ctx, begin(run, id)); err == nil {
			begun = append(begun, id)
		} else if canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
			t.Fatalf("begin %s: %v", id, err)
		}
	}
	for i := 0; i < 5; i++ {
		try(s, fmt.Sprintf("before%d", i))
	}
	if len(begun) != 5 {
		t.Fatalf("with the replica up, %d of 5 Begins succeeded", len(begun))
	}
	stall(t, replica, master.Addr, run)
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("stalled%d", i)
		try(s, id)     // the first attempt
		try(s, id)     // the owner's retry, same connections
		try(again, id) // and after reconnecting
	}

	// The master dies with what it could not send; the replica, resumed,
	// reads what reached it and becomes the master.
	master.Kill()
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := waitInfoLine(replica.Addr, "master_link_status:down"); err != nil {
		t.Fatal(err)
	}
	if _, err := redistest.Command(replica.Addr, "REPLICAOF", "NO", "ONE"); err != nil {
		t.Fatal(err)
	}
	heir := open(t, redisstore.Options{Addrs: []string{replica.Addr}, Timeout: 5 * time.Second})
	var twice []string
	for _, id := range begun {
		other := begin(run, id)
		other.Owner = "another-worker"
		if _, err := heir.Begin(ctx, other); err == nil {
			twice = append(twice, id)
		} else if c := canonical.CodeOf(err); c != canonical.CodeDuplicateToolCall && c != canonical.CodeToolCallInProgress {
			t.Fatalf("begin %s on the promoted replica: %v", id, err)
		}
	}
	t.Logf("%d Begins reported done (%s); begun again after the failover: %d %v", len(begun), strings.Join(begun, ","), len(twice), twice)
	if len(twice) > 0 {
		t.Fatalf("%d calls reported begun were begun again after the failover: %v", len(twice), twice)
	}
}

// waitInfoLine waits until INFO replication at addr shows want.
func waitInfoLine(addr, want string) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if info, err := redistest.Command(addr, "INFO", "replication"); err == nil && strings.Contains(info, want) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s: INFO replication never showed %q", addr, want)
}

// Under Durability each script is followed by its WAIT on the same client
// connection, and every script whose reply the store reports as done has
// written (so its write propagates, and that WAIT counts it) — retries that
// find their own record included.
func TestDurabilityScriptAndWaitShareOneConnection(t *testing.T) {
	master, _ := replicated(t)
	s := open(t, redisstore.Options{Addrs: []string{master.Addr}, Timeout: 5 * time.Second,
		Durability: redisstore.Durability{Replicas: 1, Timeout: 2 * time.Second}})
	ctx := context.Background()
	run := "monitor-" + canonical.NewOwner()[:8]
	m := startMonitor(t, master.Addr)

	lapsed := begin(run, "lapsed")
	lapsed.Lease = time.Millisecond
	steps := []struct {
		name string
		do   func() error
	}{
		{"begin", func() error { return second(s.Begin(ctx, begin(run, "c1"))) }},
		{"begin retried", func() error { return second(s.Begin(ctx, begin(run, "c1"))) }},
		{"complete", func() error { return second(s.Complete(ctx, readyFor(run, "c1"))) }},
		{"complete retried", func() error { return second(s.Complete(ctx, readyFor(run, "c1"))) }},
		{"begin lapsed", func() error { return second(s.Begin(ctx, lapsed)) }},
		{"abandon", func() error { time.Sleep(5 * time.Millisecond); return second(s.Abandon(ctx, run, "lapsed")) }},
		{"abandon retried", func() error { return second(s.Abandon(ctx, run, "lapsed")) }},
		{"observe progress", func() error { return second(s.ObserveProgress(ctx, run, "", true, 3)) }},
		{"close", func() error { return s.CloseRun(ctx, run, "") }},
		{"close retried", func() error { return s.CloseRun(ctx, run, "") }},
	}
	names := scriptNames(t)
	writes := map[string]bool{"hset": true, "hsetnx": true, "hincrby": true, "pexpire": true, "rpush": true,
		"zadd": true, "zrem": true, "del": true, "hdel": true}
	for _, st := range steps {
		m.until(t, "before-"+strings.ReplaceAll(st.name, " ", "-"))
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		lines := m.until(t, "after-"+strings.ReplaceAll(st.name, " ", "-"))
		cmds := attribute(lines, names)
		// The last script line (a first EVALSHA of a script the server does
		// not know yet is followed by EVAL), the writes inside it, and the
		// WAIT after it.
		var script *command
		var src, waitSrc string
		wrote := 0
		for i, c := range cmds {
			from, _, _ := parseMonitorLine(c.line)
			switch {
			case c.name == "evalsha" || c.name == "eval":
				script, src, waitSrc, wrote = &cmds[i], from, "", 0
			case c.script != "" && writes[c.name]:
				wrote++
			case c.name == "wait" && script != nil:
				waitSrc = from
			}
		}
		if script == nil || waitSrc == "" {
			t.Fatalf("%s: no script or no WAIT among %q", st.name, lines)
		}
		if waitSrc != src {
			t.Errorf("%s: the script ran on client %s, its WAIT on %s", st.name, src, waitSrc)
		}
		if wrote == 0 {
			t.Errorf("%s: the script reported success without writing, so its WAIT counts nothing of it: %q",
				st.name, lines)
		}
	}
}
