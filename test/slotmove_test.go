package test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/record"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// Under Durability the store follows a run's slot when it moves between
// masters mid-run: while it is moving (its keys already on the target:
// ASK; a new call's keys split between the two: TRYAGAIN) and once it has
// moved (MOVED), before the client's slot map has caught up. Every change is still acknowledged by the new master's
// replica, and the run's records and counts are whole.
func TestClusterDurabilityFollowsASlotMove(t *testing.T) {
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
	s := open(t, redisstore.Options{Addrs: addrs, Timeout: 5 * time.Second,
		Durability: redisstore.Durability{Replicas: 1, Timeout: 2 * time.Second}})
	ctx := context.Background()
	run := "moving-" + canonical.NewOwner()[:8]
	keys, _ := canonical.NewKeys("tc")

	if _, err := s.Begin(ctx, begin(run, "c1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, readyFor(run, "c1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin(ctx, begin(run, "c2")); err != nil {
		t.Fatal(err)
	}

	from := masterOf(t, addrs, run)
	to := (from + 1) % len(masters)
	src, dst := masters[from], masters[to]
	slot := cmd(t, src.Addr, "CLUSTER", "KEYSLOT", keys.Run(run))
	srcID, dstID := cmd(t, src.Addr, "CLUSTER", "MYID"), cmd(t, dst.Addr, "CLUSTER", "MYID")
	cmd(t, dst.Addr, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
	cmd(t, src.Addr, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID)
	inSlot := strings.Split(cmd(t, src.Addr, "CLUSTER", "GETKEYSINSLOT", slot, "100"), "\n")
	if len(inSlot) != 6 { // c1, c2, the run's state, calls and live marker, the slot's due set
		t.Fatalf("keys in slot %s: %q", slot, inSlot)
	}
	cmd(t, src.Addr, append([]string{"MIGRATE", "127.0.0.1", dst.Addr[strings.LastIndexByte(dst.Addr, ':')+1:], "", "0", "5000", "KEYS"}, inSlot...)...)

	// Moving: the source answers ASK for the run's keys, and the target
	// runs a script whose keys it all has.
	if _, err := s.Complete(ctx, readyFor(run, "c2")); err != nil {
		t.Errorf("complete while the slot moves (ASK): %v", err)
	}
	if got, err := redistest.Pipeline(dst.Addr, []string{"ASKING"}, []string{"HGET", keys.Record(run, "c2"), record.HeaderField}); err != nil ||
		!isReady(got[1]) {
		t.Errorf("c2 on the target master: %q, %v", got, err)
	}
	// A new call's record is on neither master: TRYAGAIN until the move
	// ends, then MOVED to the target.
	began := make(chan error, 1)
	go func() { began <- second(s.Begin(ctx, begin(run, "c3"))) }()
	time.Sleep(300 * time.Millisecond)

	// Moved: every master knows the new owner; the client does not yet.
	cmd(t, dst.Addr, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	cmd(t, src.Addr, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	for _, m := range masters {
		if m != src && m != dst {
			cmd(t, m.Addr, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
		}
	}
	if err := <-began; err != nil {
		t.Errorf("begin across the end of the move (TRYAGAIN, then MOVED): %v", err)
	}
	if _, err := s.Complete(ctx, readyFor(run, "c3")); err != nil {
		t.Errorf("complete after the slot moved (MOVED): %v", err)
	}
	if _, err := s.Complete(ctx, readyFor(run, "c1")); err != nil {
		t.Errorf("a retried complete after the slot moved: %v", err)
	}
	if t.Failed() {
		return
	}
	for _, id := range []string{"c1", "c2", "c3"} {
		got, err := redistest.Pipeline(reps[to].Addr, []string{"READONLY"}, []string{"HGET", keys.Record(run, id), record.HeaderField})
		if err != nil || !isReady(got[1]) {
			t.Fatalf("%s on the new master's replica: %q, %v", id, got, err)
		}
	}
	u, err := s.Usage(ctx, run)
	if err != nil || u.Calls != 3 || u.Completed != 3 || u.InFlight != 0 {
		t.Fatalf("usage after the move: %+v, %v; want 3 calls, 3 completed, none in flight", u, err)
	}
	idx, _, err := s.Completed(ctx, run, 10)
	if err != nil || strings.Join(idx, ",") != "c1,c2,c3" {
		t.Fatalf("index after the move: %v, %v", idx, err)
	}
}

// cmd runs one command on addr and fails t on an error reply.
func cmd(t *testing.T, addr string, args ...string) string {
	t.Helper()
	out, err := redistest.Command(addr, args...)
	if err != nil {
		t.Fatalf("%s %v: %v", addr, args, err)
	}
	return out
}

// isReady reports whether a record's header says READY.
func isReady(header string) bool {
	h, err := record.Decode(header)
	return err == nil && h.Status == "READY"
}
