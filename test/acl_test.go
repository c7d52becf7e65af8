package test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/canonical/storetest"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// leastPrivilege is the ACL a toolcanon worker needs: its key prefix only,
// and the commands redisstore.ACL lists for a worker, with Durability
// (WAIT), reaping (SCAN) and the audit stream. Nothing else.
var leastPrivilege = append([]string{"resetkeys", "~tcacl:*", "resetchannels", "-@all"},
	redisstore.ACLGrants(redisstore.ACLWorker, redisstore.ACLDurability, redisstore.ACLReap, redisstore.ACLAudit)...)

// The README's ACL grants the commands the tests grant, no more, no less:
// redisstore.ACL's, which doctor checks a user against.
func TestReadmeACLIsTheTestedOne(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "ACL SETUSER toolcanon")
	block, _, _ = strings.Cut(block, "```")
	if !ok {
		t.Fatal("the README shows no ACL SETUSER toolcanon")
	}
	var documented, tested []string
	for _, w := range strings.Fields(block) {
		if strings.HasPrefix(w, "+") {
			documented = append(documented, w)
		}
	}
	for _, w := range leastPrivilege {
		if strings.HasPrefix(w, "+") {
			tested = append(tested, w)
		}
	}
	slices.Sort(documented)
	slices.Sort(tested)
	if !slices.Equal(documented, tested) {
		t.Fatalf("the README grants %v, the tests %v", documented, tested)
	}
}

func aclUser(t *testing.T, addr, name string) {
	t.Helper()
	args := append([]string{"ACL", "SETUSER", name, "reset", "on", ">s3cret-acl"}, leastPrivilege...)
	if _, err := redistest.Command(addr, args...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = redistest.Command(addr, "ACL", "DELUSER", name) })
}

func TestLeastPrivilegeUserRunsTheSuite(t *testing.T) {
	addr := redistest.Addr(t)
	aclUser(t, addr, "toolcanon")
	all, drop := backend([]string{addr}, "tcacl")
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		s := open(t, redisstore.Options{
			Addrs: []string{addr}, Username: "toolcanon", Password: "s3cret-acl",
			Prefix: "tcacl", Standalone: true,
		})
		return storetest.Harness{Store: s, Wait: time.Sleep, RealClock: true, AllKeys: all, DropRunState: drop,
			Evict: redistest.Evicter([]string{addr}, "tcacl"),
			Isolated: func(t *testing.T) storetest.Harness {
				prefix := "tcacl:reap" + canonical.NewOwner()[:12]
				all, drop := backend([]string{addr}, prefix)
				s := open(t, redisstore.Options{
					Addrs: []string{addr}, Username: "toolcanon", Password: "s3cret-acl", Prefix: prefix, Standalone: true,
				})
				return storetest.Harness{Store: s, Wait: time.Sleep, RealClock: true, AllKeys: all, DropRunState: drop}
			},
			Audited: func(t *testing.T, o canonical.AuditOptions) storetest.Harness {
				prefix := "tcacl:audit" + canonical.NewOwner()[:12]
				all, drop := backend([]string{addr}, prefix)
				s := open(t, redisstore.Options{
					Addrs: []string{addr}, Username: "toolcanon", Password: "s3cret-acl", Prefix: prefix, Standalone: true, Audit: &o,
				})
				return storetest.Harness{Store: s, Wait: time.Sleep, RealClock: true, AllKeys: all, DropRunState: drop}
			}}
	})
}

// The cross-replica cancel relay runs under the least-privilege user:
// send a cancel, hear it, claim it.
func TestLeastPrivilegeUserRelaysCancels(t *testing.T) {
	addr := redistest.Addr(t)
	aclUser(t, addr, "toolcanon4")
	s := open(t, redisstore.Options{
		Addrs: []string{addr}, Username: "toolcanon4", Password: "s3cret-acl", Prefix: "tcacl", Standalone: true,
	})
	ctx, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	key := "k" + canonical.NewOwner()[:16]
	heard := make(chan string, 64)
	go func() { _ = s.ListenCancels(ctx, func(k, id string) { heard <- k + " " + id }) }()
	for got := ""; got != key+" c1"; {
		if err := s.SendCancel(ctx, key, "c1"); err != nil {
			t.Fatalf("send: %v", err)
		}
		select {
		case got = <-heard:
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("the cancel was never heard")
		}
	}
	if got, err := s.ClaimCancel(ctx, key, "c1", "h1"); err != nil || got != "h1" {
		t.Fatalf("claim: %q, %v", got, err)
	}
}

// A worker's commands reap: the reaper reads its slots' due sets, not the
// keyspace, so a user without +scan (the UI's list of runs needs it) runs
// reap passes that abandon stuck calls.
func TestWorkerUserReaps(t *testing.T) {
	addr := redistest.Addr(t)
	const name = "toolcanon5"
	args := append([]string{"ACL", "SETUSER", name, "reset", "on", ">s3cret-acl", "resetkeys", "~tcacl:*", "resetchannels", "-@all"},
		redisstore.ACLGrants(redisstore.ACLWorker)...)
	if _, err := redistest.Command(addr, args...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = redistest.Command(addr, "ACL", "DELUSER", name) })
	s := open(t, redisstore.Options{
		Addrs: []string{addr}, Username: name, Password: "s3cret-acl", Prefix: "tcacl:w" + canonical.NewOwner()[:8], Standalone: true,
	})
	ctx := context.Background()
	run := "acl-reap-" + canonical.NewOwner()[:8]
	req := begin(run, "c1")
	req.Lease = time.Millisecond
	if _, err := s.Begin(ctx, req); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	rep, err := s.Reap(ctx, canonical.ReapOptions{Every: time.Minute})
	if err != nil || len(rep.Abandoned) != 1 || rep.Abandoned[0].RunID != run {
		t.Fatalf("reap under a worker's ACL: %+v, %v", rep, err)
	}
}

// The least-privilege user with Durability: WAIT is the one command it adds.
func TestLeastPrivilegeUserWithDurability(t *testing.T) {
	addr := redistest.Addr(t)
	aclUser(t, addr, "toolcanon3")
	s := open(t, redisstore.Options{
		Addrs: []string{addr}, Username: "toolcanon3", Password: "s3cret-acl", Prefix: "tcacl", Standalone: true,
		Durability: redisstore.Durability{Replicas: 1, Timeout: 50 * time.Millisecond},
	})
	// The server has no replica: the change is made, WAIT answers 0, and the
	// store says STORE_UNAVAILABLE rather than acknowledge a write that is on
	// one server only. The NOPERM of a missing +wait would fail the same way,
	// so the test also checks the reason.
	run := "acl-durable-" + canonical.NewOwner()[:8]
	_, err := s.Begin(context.Background(), begin(run, "c1"))
	if canonical.CodeOf(err) != canonical.CodeStoreUnavailable || !strings.Contains(err.Error(), "acknowledged by 0 of 1 replicas") {
		t.Fatalf("begin with durability and no replica: %v", err)
	}
}

func TestLeastPrivilegeUserCannotLeaveItsPrefix(t *testing.T) {
	addr := redistest.Addr(t)
	aclUser(t, addr, "toolcanon2")
	s := open(t, redisstore.Options{
		Addrs: []string{addr}, Username: "toolcanon2", Password: "s3cret-acl",
		Prefix: "other", Standalone: true,
	})
	_, err := s.Begin(context.Background(), begin("acl-"+canonical.NewOwner(), "c1"))
	if canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
		t.Fatalf("begin outside the ACL's keys: %v, want STORE_UNAVAILABLE", err)
	}
	if _, err := redisstore.New(redisstore.Options{
		Addrs: []string{addr}, Username: "toolcanon2", Password: "wrong", Standalone: true,
	}); canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
		t.Fatalf("wrong password: %v, want STORE_UNAVAILABLE", err)
	}
}

// backend lets the suite look at the server behind a store without trusting
// the store: every key of the prefix with its TTL, and a DEL of a run's
// state, as eviction or an operator would, through the default user.
func backend(addrs []string, prefix string) (func(*testing.T) map[string]time.Duration, func(*testing.T, string)) {
	keys, err := canonical.NewKeys(prefix)
	if err != nil {
		panic(err)
	}
	all := func(t *testing.T) map[string]time.Duration {
		t.Helper()
		ttls, err := redistest.KeyTTLs(addrs, prefix+":*")
		if err != nil {
			t.Fatal(err)
		}
		out := make(map[string]time.Duration, len(ttls))
		for k, ms := range ttls {
			out[k] = time.Duration(ms) * time.Millisecond
			if ms < 0 {
				out[k] = -1
			}
		}
		return out
	}
	drop := func(t *testing.T, runID string) {
		t.Helper()
		deleted := 0
		for _, addr := range addrs {
			if n, err := redistest.Command(addr, "DEL", keys.Run(runID)); err == nil && n == "1" {
				deleted++
			}
		}
		if deleted != 1 {
			t.Fatalf("DEL of the run state of %s deleted %d keys", runID, deleted)
		}
	}
	return all, drop
}
