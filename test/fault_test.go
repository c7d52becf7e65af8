package test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func begin(run, id string) canonical.BeginRequest {
	return canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "kb.search", Owner: "o-" + id,
		Request: []byte(`{"q":"` + id + `"}`), TTL: time.Hour}
}

func readyFor(run, id string) canonical.Completion {
	return canonical.Completion{RunID: run, ToolCallID: id, Owner: "o-" + id, Status: canonical.StatusReady,
		Evidence: canonical.EvidenceFound, Raw: []byte(`{"r":1}`), Result: []byte(`{"a":1}`)}
}

func open(t *testing.T, opts redisstore.Options) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestScriptFlushReloadsScripts(t *testing.T) {
	addr := redistest.Addr(t)
	s := open(t, redisstore.Options{Addrs: []string{addr}})
	ctx := context.Background()
	run := "flush-" + canonical.NewOwner()
	if _, err := s.Begin(ctx, begin(run, "c1")); err != nil {
		t.Fatal(err)
	}
	if _, err := redistest.Command(addr, "SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, readyFor(run, "c1")); err != nil {
		t.Fatalf("complete after SCRIPT FLUSH: %v", err)
	}
	if _, err := redistest.Command(addr, "SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin(ctx, begin(run, "c2")); err != nil {
		t.Fatalf("begin after SCRIPT FLUSH: %v", err)
	}
	if err := s.CloseRun(ctx, run, ""); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Get(ctx, run, "c1")
	if err != nil || rec.Status != canonical.StatusReady {
		t.Fatalf("record = %+v, %v", rec.Status, err)
	}
}

func TestServerDownIsStoreUnavailableThenRecovers(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	s := open(t, redisstore.Options{Addrs: []string{srv.Addr}})
	ctx := context.Background()
	run := "down-" + canonical.NewOwner()
	if _, err := s.Begin(ctx, begin(run, "c1")); err != nil {
		t.Fatal(err)
	}

	srv.Kill()
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err = s.Begin(short, begin(run, "c2"))
	if canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
		t.Fatalf("begin with the server down: %v, want STORE_UNAVAILABLE", err)
	}
	for name, err := range map[string]error{
		"complete": second(s.Complete(short, readyFor(run, "c1"))),
		"get":      second(s.Get(short, run, "c1")),
		"index":    third(s.Completed(short, run, 10)),
		"usage":    second(s.Usage(short, run)),
	} {
		if canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
			t.Errorf("%s with the server down: %v, want STORE_UNAVAILABLE", name, err)
		}
	}

	// The server comes back empty (no persistence): the store reconnects and
	// reloads its scripts by itself.
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = s.Begin(ctx, begin(run, "c3"))
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("begin after restart: %v", err)
	}
	if _, err := s.Complete(ctx, readyFor(run, "c3")); err != nil {
		t.Fatalf("complete after restart: %v", err)
	}
}

// Without a deadline of the caller's, a dead server still answers within the
// store's own timeout.
func TestServerDownWithoutCallerDeadline(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	s := open(t, redisstore.Options{Addrs: []string{srv.Addr}, Timeout: 300 * time.Millisecond})
	srv.Kill()
	done := make(chan error, 1)
	go func() {
		_, err := s.Begin(context.Background(), begin("nodl-"+canonical.NewOwner(), "c1"))
		done <- err
	}()
	select {
	case err := <-done:
		if canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
			t.Fatalf("begin: %v, want STORE_UNAVAILABLE", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("begin blocked on a dead server")
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	cases := map[string]redisstore.Options{
		"no address":       {},
		"prefix with {":    {Addrs: []string{"127.0.0.1:1"}, Prefix: "tc{x"},
		"prefix with }":    {Addrs: []string{"127.0.0.1:1"}, Prefix: "tc}"},
		"prefix space":     {Addrs: []string{"127.0.0.1:1"}, Prefix: "t c"},
		"prefix too long":  {Addrs: []string{"127.0.0.1:1"}, Prefix: strings.Repeat("p", 65)},
		"negative TTL":     {Addrs: []string{"127.0.0.1:1"}, DefaultTTL: -time.Second},
		"negative timeout": {Addrs: []string{"127.0.0.1:1"}, Timeout: -time.Second},
		// PEXPIRE 0 deletes at once: an expiry under 1 ms would close nothing.
		"TTL under 1ms":       {Addrs: []string{"127.0.0.1:1"}, DefaultTTL: 500 * time.Microsecond},
		"retention under 1ms": {Addrs: []string{"127.0.0.1:1"}, ClosedRunRetention: 999 * time.Microsecond},
		"prefix non-ASCII":    {Addrs: []string{"127.0.0.1:1"}, Prefix: "tç"},
		// Times are fixed-width milliseconds since the epoch in the store.
		"TTL over MaxTTL":       {Addrs: []string{"127.0.0.1:1"}, DefaultTTL: canonical.MaxTTL + time.Millisecond},
		"retention over MaxTTL": {Addrs: []string{"127.0.0.1:1"}, ClosedRunRetention: canonical.MaxTTL + time.Millisecond},
		// WAIT n 0 would block forever: a wait under 1 ms is no bound.
		"durability wait under 1ms": {Addrs: []string{"127.0.0.1:1"}, Durability: redisstore.Durability{Replicas: 1, Timeout: 999 * time.Microsecond}},
		"durability without a wait": {Addrs: []string{"127.0.0.1:1"}, Durability: redisstore.Durability{Replicas: 1}},
		"durability wait past timeout": {Addrs: []string{"127.0.0.1:1"}, Timeout: time.Second,
			Durability: redisstore.Durability{Replicas: 1, Timeout: time.Second}},
		"negative replicas":  {Addrs: []string{"127.0.0.1:1"}, Durability: redisstore.Durability{Replicas: -1, Timeout: time.Second}},
		"AOF without a wait": {Addrs: []string{"127.0.0.1:1"}, Durability: redisstore.Durability{AOF: true}},
	}
	for name, o := range cases {
		if _, err := redisstore.New(o); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
			t.Errorf("%s: %v, want INVALID_ARGUMENT", name, err)
		}
	}
}

func TestNewUnreachableIsStoreUnavailable(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr
	srv.Stop() // a port nobody listens on now
	_, err = redisstore.New(redisstore.Options{Addrs: []string{addr}})
	if canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
		t.Fatalf("New(%s) = %v, want STORE_UNAVAILABLE", addr, err)
	}
}

func TestDefaultTTLAppliesToZeroTTL(t *testing.T) {
	s := open(t, redisstore.Options{Addrs: []string{redistest.Addr(t)}, DefaultTTL: 90 * time.Second})
	req := begin("dttl-"+canonical.NewOwner(), "c1")
	req.TTL = 0
	rec, err := s.Begin(context.Background(), req)
	if err != nil || rec.TTL != 90*time.Second {
		t.Fatalf("TTL %v, %v; want 90s", rec.TTL, err)
	}
	got, _ := s.Get(context.Background(), req.RunID, "c1")
	if got.TTL <= 85*time.Second || got.TTL > 90*time.Second {
		t.Fatalf("stored TTL %v", got.TTL)
	}
}

// Every key of a run hashes to one slot, so each script runs on one node.
func TestClusterKeysOfARunShareOneSlot(t *testing.T) {
	addrs := redistest.ClusterAddrs(t)
	keys, _ := canonical.NewKeys("tc")
	for _, run := range []string{"run-1", "a", "R.9_x-y", strings.Repeat("z", 128)} {
		var slots []string
		for _, k := range []string{keys.Record(run, "call_1"), keys.Record(run, "toolu_01"), keys.Run(run), keys.Calls(run), keys.Live(run),
			keys.RunSlotIndex(run, canonical.SlotDue)} {
			slot, err := redistest.Command(addrs[0], "CLUSTER", "KEYSLOT", k)
			if err != nil {
				t.Fatal(err)
			}
			slots = append(slots, slot)
		}
		for _, s := range slots[1:] {
			if s != slots[0] {
				t.Fatalf("run %s: slots %v", run, slots)
			}
		}
	}
}

func second[T any](_ T, err error) error { return err }

func third[T, U any](_ T, _ U, err error) error { return err }
