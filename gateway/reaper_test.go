package gateway_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/internal/redistest"
	"github.com/toolcanon/toolcanon/reaper"
)

// beginStuck begins a call as a gateway that then died would have left it.
func beginStuck(t *testing.T, s canonical.Store, run, id string) {
	t.Helper()
	if _, err := s.Begin(context.Background(), canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "search",
		Owner: canonical.NewOwner(), Request: []byte(`{}`), TTL: time.Minute, Lease: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
}

func callError(t *testing.T, s canonical.Store, run, id string) canonical.Code {
	t.Helper()
	rec, err := s.Get(context.Background(), run, id)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Error
}

// A gateway reaps its store by default: a call another gateway left stuck
// is closed, logged, and the reaper stops with Close. NoReaper switches it
// off.
func TestGatewayRunsAReaper(t *testing.T) {
	dir := t.TempDir()
	cfg, err := gateway.LoadConfig(baseConfig(t, stdioUpstream(t, filepath.Join(dir, "upstream.log"), ""), "search").write(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	open := func(s canonical.Store, log *syncBuffer, opts gateway.OpenOptions) *gateway.Gateway {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		opts.Logger = slog.New(slog.NewTextHandler(log, nil))
		g, err := gateway.Open(ctx, cfg, s, opts)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}

	s := memstore.New()
	beginStuck(t, s, "run-crashed", "call_1")
	var log syncBuffer
	g := open(s, &log, gateway.OpenOptions{Reaper: reaper.Options{Interval: 20 * time.Millisecond}})
	deadline := time.Now().Add(10 * time.Second)
	for callError(t, s, "run-crashed", "call_1") != canonical.CodeExecutionAbandoned {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway's reaper did not close the stuck call; log:\n%s", log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if out := log.String(); !strings.Contains(out, `msg="reaper: call abandoned" run_id=run-crashed tool_call_id=call_1`) {
		t.Fatalf("the log does not show the abandon:\n%s", out)
	}
	beginStuck(t, s, "run-crashed", "call_2")
	time.Sleep(150 * time.Millisecond)
	if code := callError(t, s, "run-crashed", "call_2"); code != "" {
		t.Fatalf("a call was reaped after Close: %s", code)
	}

	off := memstore.New()
	beginStuck(t, off, "run-crashed", "call_1")
	var quiet syncBuffer
	g = open(off, &quiet, gateway.OpenOptions{NoReaper: true, Reaper: reaper.Options{Interval: 20 * time.Millisecond}})
	time.Sleep(150 * time.Millisecond)
	if code := callError(t, off, "run-crashed", "call_1"); code != "" {
		t.Fatalf("NoReaper: the call was reaped (%s)", code)
	}
	_ = g.Close()

	if _, err := gateway.Open(context.Background(), cfg, memstore.New(), gateway.OpenOptions{Reaper: reaper.Options{Interval: time.Microsecond}}); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
		t.Fatalf("a reaper interval of 1µs: %v, want INVALID_ARGUMENT", err)
	}
}

// `toolcanon gateway --redis` reaps the shared store: a call a gateway
// process left stuck is closed by another one, and its log says so.
func TestGatewayProcessReapsRedis(t *testing.T) {
	addr := redistest.Addr(t)
	prefix := "tcgw" + canonical.NewOwner()[:8]
	s, err := redisstore.New(redisstore.Options{Addrs: []string{addr}, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	beginStuck(t, s, "run-left", "call_1")
	dir := t.TempDir()
	cfg := baseConfig(t, stdioUpstream(t, filepath.Join(dir, "upstream.log"), ""), "search").write(t, dir)
	_, stderr := stdioGateway(t, cfg, "--redis", addr, "--prefix", prefix, "--reap-interval", "50ms")
	deadline := time.Now().Add(20 * time.Second)
	for callError(t, s, "run-left", "call_1") != canonical.CodeExecutionAbandoned {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway process did not reap the stuck call; stderr:\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for !strings.Contains(stderr.String(), `msg="reaper: call abandoned" run_id=run-left tool_call_id=call_1 tool=search`) {
		if time.Now().After(deadline) {
			t.Fatalf("stderr lacks the abandon:\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
