package test

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/record"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// waitLinkUp waits until the replica at addr has a live link to its master.
func waitLinkUp(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if info, err := redistest.Command(addr, "INFO", "replication"); err == nil && strings.Contains(info, "master_link_status:up") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("replica %s never linked to its master", addr)
}

// With Durability, a change is acknowledged only once a replica has it.
// When the replica is gone, Begin and Complete answer STORE_UNAVAILABLE
// although the master made the change, and a retry by the same owner finds
// the stored outcome and waits again: once the replica is back it succeeds
// without counting twice.
func TestDurabilityWaitsForReplicas(t *testing.T) {
	master, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(master.Stop)
	replica, err := redistest.StartServer("--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Stop)
	waitLinkUp(t, replica.Addr)
	s := open(t, redisstore.Options{Addrs: []string{master.Addr}, Timeout: 10 * time.Second,
		Durability: redisstore.Durability{Replicas: 1, Timeout: 2 * time.Second}})
	ctx := context.Background()
	run := "durable-" + canonical.NewOwner()[:8]

	if _, err := s.Begin(ctx, begin(run, "c1")); err != nil {
		t.Fatalf("begin with a replica: %v", err)
	}
	keys, _ := canonical.NewKeys("tc")
	if st, err := recordStatus(replica.Addr, keys.Record(run, "c1")); err != nil || st != "PROJECTING" {
		t.Fatalf("the acknowledged record on the replica: %q, %v", st, err)
	}

	replica.Kill()
	_, err = s.Begin(ctx, begin(run, "c2"))
	if canonical.CodeOf(err) != canonical.CodeStoreUnavailable || !strings.Contains(err.Error(), "acknowledged by 0 of 1 replicas") {
		t.Fatalf("begin without the replica: %v, want STORE_UNAVAILABLE", err)
	}
	_, err = s.Complete(ctx, readyFor(run, "c1"))
	if canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
		t.Fatalf("complete without the replica: %v, want STORE_UNAVAILABLE", err)
	}
	// The master made both changes; nothing was acknowledged.
	if st, _ := recordStatus(master.Addr, keys.Record(run, "c2")); st != "PROJECTING" {
		t.Fatalf("c2 on the master: %q", st)
	}

	if err := replica.Restart(); err != nil {
		t.Fatal(err)
	}
	waitLinkUp(t, replica.Addr)
	rec, err := s.Begin(ctx, begin(run, "c2"))
	if err != nil || rec.Status != canonical.StatusProjecting {
		t.Fatalf("begin retried by its owner once the replica is back: %+v, %v", rec.Status, err)
	}
	done, err := s.Complete(ctx, readyFor(run, "c1"))
	if err != nil || done.Status != canonical.StatusReady || string(done.Result) != `{"a":1}` {
		t.Fatalf("complete retried by its owner: %+v, %v", done.Status, err)
	}
	u, err := s.Usage(ctx, run)
	if err != nil || u.Calls != 2 {
		t.Fatalf("usage = %+v, %v; want 2 calls, each counted once", u, err)
	}
	if st, err := recordStatus(replica.Addr, keys.Record(run, "c1")); err != nil || st != "READY" {
		t.Fatalf("the acknowledged completion on the replica: %q, %v", st, err)
	}
}

// TestClusterDurabilityFailover runs Begin/Complete pairs on a 3-master
// cluster with a replica each: 100 with the replica of the run's master
// streaming, then 100 with that replica stalled (SIGSTOP, behind more filler
// than the sockets between them buffer), each failed call retried once by
// its owner through a new store. Then it kills the master, resumes the
// replica, lets it take over, and counts the acknowledged pairs (Begin and
// Complete both reported done) whose record is not there, READY. With
// Durability the count must be zero; without, the control must lose some —
// what the master acknowledged while its replica was stalled — else the test
// could not tell durability from luck. Both figures are logged.
func TestClusterDurabilityFailover(t *testing.T) {
	for _, tc := range []struct {
		name    string
		durable redisstore.Durability
	}{
		{"with-wait", redisstore.Durability{Replicas: 1, Timeout: 200 * time.Millisecond}},
		{"without-wait", redisstore.Durability{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lost, acked, total := acknowledgedThenKilled(t, tc.durable)
			t.Logf("%s on %s: %d of %d acknowledged pairs lost after the master was killed (%d pairs tried)",
				tc.name, redistest.Kind(t), lost, acked, total)
			if tc.durable.Replicas > 0 && lost != 0 {
				t.Fatalf("%d acknowledged records lost although every change waited for a replica", lost)
			}
			if tc.durable.Replicas == 0 && lost == 0 {
				t.Fatal("the control without WAIT lost nothing: the test cannot tell durability from luck")
			}
		})
	}
}

// acknowledgedThenKilled runs the pairs and the kill on a fresh cluster and
// returns how many acknowledged pairs the replica that took over lacks, how
// many were acknowledged, and how many were tried.
func acknowledgedThenKilled(t *testing.T, durable redisstore.Durability) (lost, acked, total int) {
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
	// With audit on, so that the events of what was acknowledged are held
	// to the same promise: the script that made a transition wrote its
	// event, and the WAIT after it covers both.
	opts := redisstore.Options{Addrs: addrs, Timeout: 3 * time.Second, Durability: durable,
		Audit: &canonical.AuditOptions{Key: make([]byte, canonical.MinAuditKey), KeyID: "dur"}}
	s, again := open(t, opts), open(t, opts)
	ctx := context.Background()
	run := "dur-" + canonical.NewOwner()[:8]
	victim := masterOf(t, addrs, run)
	const half, workers = 100, 16
	total = 2 * half
	ids := make([]string, total)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%03d", i)
	}

	// pairs runs Begin then Complete for each id, each tried through s and,
	// on STORE_UNAVAILABLE, once more by its owner through again, and
	// returns the ids whose both steps were reported done.
	pairs := func(ids []string) ([]string, error) {
		var mu sync.Mutex
		var done []string
		var firstErr error
		try := func(op func(*redisstore.Store) error) bool {
			for _, st := range []*redisstore.Store{s, again} {
				err := op(st)
				if err == nil {
					return true
				}
				if canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					return false
				}
			}
			return false
		}
		next := make(chan string, len(ids))
		for _, id := range ids {
			next <- id
		}
		close(next)
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for id := range next {
					req := begin(run, id)
					req.Limits = canonical.Limits{MaxCallsPerRun: int64(total), MaxCallsPerTool: int64(total)}
					if !try(func(st *redisstore.Store) error { return second(st.Begin(ctx, req)) }) {
						continue // the tool would not run
					}
					if try(func(st *redisstore.Store) error { return second(st.Complete(ctx, readyFor(run, id))) }) {
						mu.Lock()
						done = append(done, id)
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		return done, firstErr
	}

	live, err := pairs(ids[:half])
	if err != nil || len(live) != half {
		t.Fatalf("with the replica streaming, %d of %d pairs acknowledged (%v)", len(live), half, err)
	}
	stall(t, reps[victim], masters[victim].Addr, run)
	stalled, err := pairs(ids[half:])
	if err != nil {
		t.Fatalf("with the replica stalled: %v", err)
	}
	masters[victim].Kill()
	if err := reps[victim].Resume(); err != nil {
		t.Fatal(err)
	}
	ackedIDs := append(live, stalled...)
	acked = len(ackedIDs)
	t.Logf("acknowledged: %d with the replica streaming, %d of %d with it stalled", len(live), len(stalled), half)

	// After the failover every acknowledged record must be there, READY.
	var recs []*canonical.Record
	deadline := time.Now().Add(45 * time.Second)
	for {
		recs, err = s.GetMany(ctx, run, ackedIDs, canonical.ReadOptions{})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("no answer 45s after the master died: %v", err)
	}
	if role, _ := redistest.Command(reps[victim].Addr, "ROLE"); !strings.HasPrefix(role, "master") {
		t.Fatalf("replica %s did not take over: ROLE = %q", reps[victim].Addr, role)
	}
	for i, r := range recs {
		if r == nil || r.Status != canonical.StatusReady {
			lost++
			if durable.Replicas > 0 {
				t.Errorf("%s after failover: %+v", ackedIDs[i], r)
			}
		}
	}
	if lost > 0 && durable.Replicas > 0 {
		t.Logf("the replica that took over (%s) logged:\n%s", reps[victim].Addr, reps[victim].LogTail())
	}
	// Every acknowledged pair's begin and complete events are there too.
	if durable.Replicas > 0 {
		p, err := s.AuditRead(ctx, []string{run}, 10*total)
		if err != nil {
			t.Fatal(err)
		}
		events := map[string]map[canonical.AuditType]bool{}
		for _, e := range p[0].Events {
			if events[e.ToolCallID] == nil {
				events[e.ToolCallID] = map[canonical.AuditType]bool{}
			}
			events[e.ToolCallID][e.Type] = true
		}
		for _, id := range ackedIDs {
			if !events[id][canonical.AuditBegin] || !events[id][canonical.AuditComplete] {
				t.Errorf("%s after failover: its audit events %v, want its begin and its complete", id, events[id])
			}
		}
	}
	return lost, acked, total
}

// masterOf returns the index in addrs of the master that owns the run's slot.
func masterOf(t *testing.T, addrs []string, run string) int {
	t.Helper()
	keys, _ := canonical.NewKeys("tc")
	slotText, err := redistest.Command(addrs[0], "CLUSTER", "KEYSLOT", keys.Run(run))
	if err != nil {
		t.Fatal(err)
	}
	slot, _ := strconv.Atoi(slotText)
	for i := range addrs {
		if lo, hi := i*16384/len(addrs), (i+1)*16384/len(addrs)-1; slot >= lo && slot <= hi {
			return i
		}
	}
	t.Fatalf("slot %d owned by no master", slot)
	return -1
}

// recordStatus reads a record's status on one server, bypassing the store:
// the status its header says.
func recordStatus(addr, key string) (string, error) {
	line, err := redistest.Command(addr, "HGET", key, record.HeaderField)
	if err != nil {
		return "", err
	}
	h, err := record.Decode(line)
	if err != nil {
		return "", err
	}
	return h.Status, nil
}
