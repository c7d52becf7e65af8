package test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// With Durability.AOF a change succeeds only once WAITAOF reports it
// fsynced on the master and on the replica; with the replica stalled,
// neither the first attempt nor the owner's retry through a new store
// succeeds. Redis before 7.2 has no WAITAOF: every change is then
// STORE_UNAVAILABLE, never a success that waited for nothing.
func TestDurabilityWaitAOF(t *testing.T) {
	aof := []string{"--appendonly", "yes", "--appendfsync", "everysec"}
	master, err := redistest.StartServer(aof...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(master.Stop)
	replica, err := redistest.StartServer(append(aof, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Stop)
	waitLinkUp(t, replica.Addr)
	waitReplicated(t, master.Addr, replica.Addr)
	opts := redisstore.Options{Addrs: []string{master.Addr}, Timeout: 5 * time.Second,
		Durability: redisstore.Durability{Replicas: 1, Timeout: 1500 * time.Millisecond, AOF: true}}
	s, again := open(t, opts), open(t, opts)
	ctx := context.Background()
	run := "aof-" + canonical.NewOwner()[:8]

	_, err = s.Begin(ctx, begin(run, "c1"))
	if redistest.Kind(t) == redistest.KindRedis {
		if v, _ := redistest.Command(master.Addr, "INFO", "server"); strings.Contains(v, "redis_version:7.0.") {
			if canonical.CodeOf(err) != canonical.CodeStoreUnavailable || !strings.Contains(err.Error(), "WAITAOF") {
				t.Fatalf("Begin with AOF on Redis 7.0: %v, want STORE_UNAVAILABLE naming WAITAOF", err)
			}
			t.Logf("Redis 7.0 has no WAITAOF: %v", err)
			return
		}
	}
	if err != nil {
		t.Fatalf("Begin with AOF, replica streaming: %v", err)
	}
	if _, err := s.Complete(ctx, readyFor(run, "c1")); err != nil {
		t.Fatalf("Complete with AOF, replica streaming: %v", err)
	}
	stall(t, replica, master.Addr, run)
	for _, st := range []*redisstore.Store{s, s, again} {
		_, err := st.Begin(ctx, begin(run, "c2"))
		unavailable(t, "Begin with AOF", err)
		_, err = st.Complete(ctx, readyFor(run, "c1"))
		unavailable(t, "retried Complete with AOF", err)
	}
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	waitReplicated(t, master.Addr, replica.Addr)
	if rec, err := again.Begin(ctx, begin(run, "c2")); err != nil || rec.Status != canonical.StatusProjecting {
		t.Fatalf("Begin once the replica is back: %v, %v", rec.Status, err)
	}
}
