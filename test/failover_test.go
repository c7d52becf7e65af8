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

// TestClusterFailover kills the master that holds a run and checks that the
// store answers STORE_UNAVAILABLE (never a wrong answer) until the replica
// takes over, then carries on with every record and invariant intact.
func TestClusterFailover(t *testing.T) {
	masters, reps, err := redistest.StartClusterWithReplicas(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range append(masters, reps...) {
			s.Stop()
		}
	})
	var addrs []string
	for _, m := range masters {
		addrs = append(addrs, m.Addr)
	}
	s := open(t, redisstore.Options{Addrs: addrs, Timeout: time.Second})
	ctx := context.Background()
	run := "failover-" + canonical.NewOwner()[:8]
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("c%d", i)
		if _, err := s.Begin(ctx, begin(run, id)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Complete(ctx, readyFor(run, id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Begin(ctx, begin(run, "open")); err != nil {
		t.Fatal(err)
	}

	// The master that owns the run's slot, and its replica.
	keys, _ := canonical.NewKeys("tc")
	slotText, err := redistest.Command(addrs[0], "CLUSTER", "KEYSLOT", keys.Run(run))
	if err != nil {
		t.Fatal(err)
	}
	slot, _ := strconv.Atoi(slotText)
	owner := slot * len(masters) / 16384
	for owner+1 < len(masters) && slot >= (owner+1)*16384/len(masters) {
		owner++
	}
	victim, heir := masters[owner], reps[owner]
	// Let the replica catch up, so that the test is about failover and not
	// about asynchronous replication's window.
	waitReplicated(t, victim.Addr, heir.Addr)

	victim.Kill()
	killed := time.Now()
	unavailable := 0
	var recovered time.Duration
	for time.Since(killed) < 30*time.Second {
		_, err := s.Begin(ctx, begin(run, "after"))
		if err == nil {
			recovered = time.Since(killed)
			break
		}
		if canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
			t.Fatalf("during failover: %v, want only STORE_UNAVAILABLE", err)
		}
		unavailable++
		time.Sleep(100 * time.Millisecond)
	}
	if recovered == 0 {
		t.Fatal("the store did not recover within 30s of the master's death")
	}
	t.Logf("master %s killed: %d STORE_UNAVAILABLE answers, recovered after %v", victim.Addr, unavailable, recovered.Round(time.Millisecond))
	if role, _ := redistest.Command(heir.Addr, "ROLE"); !strings.HasPrefix(role, "master") {
		t.Fatalf("replica %s did not take over: ROLE = %q", heir.Addr, role)
	}

	// Everything acknowledged before the failure is still there.
	for i := 0; i < 5; i++ {
		rec, err := s.Get(ctx, run, fmt.Sprintf("c%d", i))
		if err != nil || rec.Status != canonical.StatusReady || string(rec.Raw) != `{"r":1}` {
			t.Fatalf("c%d after failover: %+v, %v", i, rec.Status, err)
		}
	}
	other := begin(run, "c0")
	other.Owner = "someone-else"
	if _, err := s.Begin(ctx, other); canonical.CodeOf(err) != canonical.CodeDuplicateToolCall {
		t.Fatalf("duplicate after failover: %v", err)
	}
	if _, err := s.Complete(ctx, readyFor(run, "open")); err != nil {
		t.Fatalf("completing the call begun before the failure: %v", err)
	}
	idx, _, err := s.Completed(ctx, run, 100)
	if err != nil || strings.Join(idx, ",") != "c0,c1,c2,c3,c4,open" {
		t.Fatalf("index after failover = %v, %v", idx, err)
	}
	u, err := s.Usage(ctx, run)
	if err != nil || u.Calls != 7 {
		t.Fatalf("usage after failover = %+v, %v (want 7 calls: 5, open, after)", u, err)
	}
}

func waitReplicated(t *testing.T, master, replica string) {
	t.Helper()
	offset := func(addr string) int64 {
		info, err := redistest.Command(addr, "INFO", "replication")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "master_repl_offset:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				return n
			}
		}
		return -1
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := offset(master); m > 0 && offset(replica) >= m {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("replica %s did not catch up with %s", replica, master)
}
