package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// cancelRouter is the load balancer of the two-replica test: it sends
// every notifications/cancelled to another gateway than the call's.
type cancelRouter struct {
	to *url.URL
}

// RoundTrip sends r to its own URL, or a cancel to rt.to.
func (rt cancelRouter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && rt.to != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
			r = r.Clone(r.Context())
			r.URL.Scheme, r.URL.Host = rt.to.Scheme, rt.to.Host
			r.Host = rt.to.Host
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// agentVia connects a go-sdk client to g, its cancels routed to other
// (when given), speaking protocol version.
func agentVia(t *testing.T, g *httpGateway, other *httpGateway, version string) *mcp.ClientSession {
	t.Helper()
	return agentWith(t, g, other, version, nil)
}

// agentWith is agentVia with the client's options.
func agentWith(t *testing.T, g *httpGateway, other *httpGateway, version string, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	var to *url.URL
	if other != nil {
		u, err := url.Parse(other.url)
		if err != nil {
			t.Fatal(err)
		}
		to = u
	}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, copts).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: g.url, MaxRetries: -1, HTTPClient: &http.Client{Transport: cancelRouter{to: to}}},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s: %v\n%s", g.url, err, g.stderr)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// A cancel reaches the upstream in every HTTP mode: stateless on the
// replica running the call, stateless through another replica sharing the
// Redis store (the cancel goes to it, the call runs on the first), and
// with sessions. Each call ends ERROR/CANCELLED in Redis.
func TestCancelOverHTTPInEveryMode(t *testing.T) {
	addr := redistest.Addr(t)
	rs := openRedisStore(t, addr)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "upstream.log")
	path := liveConfig(t, logPath).write(t, dir)
	a := startHTTPGateway(t, path, "--redis", addr)
	b := startHTTPGateway(t, path, "--redis", addr)
	sess := startHTTPGateway(t, path, "--redis", addr, "--sessions")
	run := "run-cx-" + canonical.NewOwner()[:8]
	for _, c := range []struct {
		name, id, version string
		cs                func() *mcp.ClientSession
	}{
		{"stateless, one replica", "call_s1", "2025-11-25", func() *mcp.ClientSession { return agentVia(t, a, nil, "2025-11-25") }},
		{"stateless, one replica, 2025-06-18", "call_s2", "2025-06-18", func() *mcp.ClientSession { return agentVia(t, a, nil, "2025-06-18") }},
		{"stateless, one replica, the SDK's latest version", "call_s5", "", func() *mcp.ClientSession { return agentVia(t, a, nil, "") }},
		{"stateless, the cancel through another replica", "call_s3", "2025-11-25", func() *mcp.ClientSession { return agentVia(t, a, b, "2025-11-25") }},
		{"sessions", "call_s4", "2025-11-25", func() *mcp.ClientSession { return agentVia(t, sess, nil, "2025-11-25") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := c.cs()
			if err := cancelMidCall(t, cs, logPath, c.id, run); err == nil {
				t.Fatal("the cancelled call returned a result")
			}
			waitFor(t, func() bool { return countExecutions(t, logPath, "cancelled", c.id) == 1 }, "the upstream to see the cancel")
			checkCancelled(t, func() (canonical.Record, error) { return rs.Get(context.Background(), agentRun(run), c.id) }, c.name)
		})
	}
}

// openRedisStore opens a store on the Redis at addr, closed with the test.
func openRedisStore(t *testing.T, addr string) *redisstore.Store {
	t.Helper()
	rs, err := redisstore.New(redisstore.Options{Addrs: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Close() })
	return rs
}

// Progress flows both ways over streamable HTTP, stateless (at the SDK's
// latest version and at 2025-11-25) and with sessions.
func TestProgressOverHTTP(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "upstream.log")
	path := liveConfig(t, logPath).write(t, dir)
	stateless := startHTTPGateway(t, path)
	sess := startHTTPGateway(t, path, "--sessions")
	for i, c := range []struct {
		name    string
		g       *httpGateway
		version string
	}{{"stateless", stateless, ""}, {"stateless 2025-11-25", stateless, "2025-11-25"}, {"sessions", sess, "2025-11-25"}} {
		t.Run(c.name, func(t *testing.T) {
			seen := &progressSeen{}
			cs := agentWith(t, c.g, nil, c.version, &mcp.ClientOptions{ProgressNotificationHandler: seen.handler})
			checkProgress(t, cs, seen, logPath, fmt.Sprintf("run-ph%d", i))
		})
	}
}

// Over HTTP with sessions, an upstream's sampling request and log messages
// reach the agent that declared sampling and set a level; stateless, where
// the gateway cannot send the agent a request, sampling is refused.
func TestRelaysOverHTTP(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "upstream.log")
	path := liveConfig(t, logPath).write(t, dir)
	sess := startHTTPGateway(t, path, "--sessions")
	stateless := startHTTPGateway(t, path)
	var mu sync.Mutex
	logs := 0
	copts := &mcp.ClientOptions{
		LoggingMessageHandler: func(context.Context, *mcp.LoggingMessageRequest) { mu.Lock(); logs++; mu.Unlock() },
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "over http"}}, nil
		},
	}
	ctx := context.Background()
	cs := agentWith(t, sess, nil, "2025-11-25", copts)
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, mustCall(ctx, t, cs, "sample", "call_h1", "run-rh", map[string]any{"query": "hi"})); got != "sampled: over http" {
		t.Fatalf("sampling with sessions: %q", got)
	}
	mustCall(ctx, t, cs, "chatty", "call_h2", "run-rh", map[string]any{"query": "job"})
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return logs >= 10 }, "log messages with sessions")

	plain := agentWith(t, stateless, nil, "2025-11-25", copts)
	if got := textOf(t, mustCall(ctx, t, plain, "sample", "call_h3", "run-rh2", map[string]any{"query": "hi"})); !strings.HasPrefix(got, "sampling refused: ") {
		t.Fatalf("sampling stateless: %q", got)
	}

	// Stateless, a session logs at info from its start: each call's log
	// messages reach the agent, the last one sent just before the answer
	// too, although no logging/setLevel came with the call — from an HTTP
	// upstream, where each came on the call's own stream. A stdio
	// upstream's are dropped: the call asked for none, and its connection
	// is shared.
	upPath := filepath.Join(t.TempDir(), "gateway.json")
	if err := os.WriteFile(upPath, mustMarshal(t, baseConfig(t, httpUpstream(t, logPath), "note")), 0o600); err != nil {
		t.Fatal(err)
	}
	overHTTP := startHTTPGateway(t, upPath)
	var notes sync.Map // query -> *atomic.Int32
	nopts := &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
		if s, ok := req.Params.Data.(string); ok {
			if _, q, ok := strings.Cut(s, " of 3 on "); ok {
				n, _ := notes.LoadOrStore(q, new(atomic.Int32))
				n.(*atomic.Int32).Add(1)
			}
		}
	}}
	quiet := agentWith(t, overHTTP, nil, "2025-11-25", nopts)
	for i := range 5 {
		q := fmt.Sprintf("n%d", i)
		mustCall(ctx, t, quiet, "note", fmt.Sprintf("call_h%d", 10+i), "run-rh3", map[string]any{"query": q})
		n, _ := notes.LoadOrStore(q, new(atomic.Int32))
		waitFor(t, func() bool { return n.(*atomic.Int32).Load() == 3 }, "the three notes of call "+q)
	}
	shared := agentWith(t, stateless, nil, "2025-11-25", nopts)
	mustCall(ctx, t, shared, "note", "call_h20", "run-rh3", map[string]any{"query": "shared"})
	time.Sleep(300 * time.Millisecond)
	if n, _ := notes.LoadOrStore("shared", new(atomic.Int32)); n.(*atomic.Int32).Load() != 0 {
		t.Fatal("a stdio upstream's log message on its shared connection reached an agent")
	}
}

// Over `toolcanon gateway --stdio`, the process: progress flows both ways
// and a cancel reaches the upstream.
func TestProgressAndCancelOverStdio(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "upstream.log")
	seen := &progressSeen{}
	cs, stderr := stdioGatewayWith(t, &mcp.ClientOptions{ProgressNotificationHandler: seen.handler}, liveConfig(t, logPath).write(t, dir))
	checkProgress(t, cs, seen, logPath, "run-stdio")
	if err := cancelMidCall(t, cs, logPath, "call_sc1", "run-stdio"); err == nil {
		t.Fatal("the cancelled call returned a result")
	}
	waitFor(t, func() bool { return countExecutions(t, logPath, "cancelled", "call_sc1") == 1 }, "the upstream to see the cancel")
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "code=CANCELLED executed=true") }, "the gateway's log of the cancelled call")
}

// In process, so that the race detector watches the cancel tracking: two
// gateways on one Redis, stateless HTTP, several calls cancelled at once,
// each cancel sent to the other gateway; one call is left to finish.
func TestStatelessCancelAcrossReplicasInProcess(t *testing.T) {
	rs := openRedisStore(t, redistest.Addr(t))
	logPath := filepath.Join(t.TempDir(), "upstream.log")
	cfg := liveConfig(t, logPath)
	var urls []string
	for range 2 {
		lg := openLiveOn(t, cfg, rs, gateway.OpenOptions{CancelRelay: rs})
		srv := httptest.NewServer(lg.g.Handler(gateway.HTTPOptions{}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	a, b := &httpGateway{url: urls[0], stderr: &syncBuffer{}}, &httpGateway{url: urls[1], stderr: &syncBuffer{}}
	run := "run-cxp-" + canonical.NewOwner()[:8]
	cs := agentVia(t, a, b, "2025-11-25") // one client: its calls have ids of their own
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("call_x%d", i)
			if err := cancelMidCall(t, cs, logPath, id, run); err == nil {
				t.Errorf("%s: the cancelled call returned a result", id)
			}
		}()
	}
	wg.Wait()
	for i := range 4 {
		id := fmt.Sprintf("call_x%d", i)
		waitFor(t, func() bool { return countExecutions(t, logPath, "cancelled", id) == 1 }, id+": the upstream to see the cancel")
		checkCancelled(t, func() (canonical.Record, error) { return rs.Get(context.Background(), agentRun(run), id) }, id)
	}

	// Two clients of one principal, each numbering its requests from the
	// start, have a call in flight under one JSON-RPC id: the cancel one of
	// them sends could name either, so it stops neither.
	first, second := agentVia(t, a, b, "2025-11-25"), agentVia(t, a, b, "2025-11-25")
	done := make(chan outcome, 1)
	go func() {
		done <- mustCall(context.Background(), t, second, "wait", "call_y2", run, map[string]any{"query": "call_y2", "ms": 1500})
	}()
	waitFor(t, func() bool { return countExecutions(t, logPath, "wait", "call_y2") == 1 }, "the second client's call to run")
	if err := cancelMidCallFor(t, first, logPath, "call_y1", run, 1500); err == nil {
		t.Fatal("the cancelled call returned a result")
	}
	if o := <-done; !o.ready {
		t.Fatalf("the other client's call with the same JSON-RPC id: %s", o.text)
	}
	waitFor(t, func() bool {
		rec, err := rs.Get(context.Background(), agentRun(run), "call_y1")
		return err == nil && rec.Status == canonical.StatusReady
	}, "the ambiguous cancel to leave call_y1 running to its end")
	if n := countExecutions(t, logPath, "cancelled", "call_y1") + countExecutions(t, logPath, "cancelled", "call_y2"); n != 0 {
		t.Fatalf("an ambiguous cancel stopped %d calls", n)
	}
}

// The cancel relay writes nothing while calls run and no cancel comes: the
// server runs the same commands for a stateless call with the relay as
// without it (its one reader of cancels blocks, and is not counted per
// call). It used to cost a registration, a poll every 200 ms and a
// deregistration per call.
func TestCancelRelayCostsNoCommandPerCall(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	rs := openRedisStore(t, srv.Addr)
	logPath := filepath.Join(t.TempDir(), "upstream.log")
	cfg := liveConfig(t, logPath)
	const calls = 40
	perCall := map[bool]float64{}
	for _, withRelay := range []bool{false, true} {
		opts := gateway.OpenOptions{}
		if withRelay {
			opts.CancelRelay = rs
		}
		lg := openLiveOn(t, cfg, rs, opts)
		hs := httptest.NewServer(lg.g.Handler(gateway.HTTPOptions{}))
		t.Cleanup(hs.Close)
		cs := agentWith(t, &httpGateway{url: hs.URL, stderr: &syncBuffer{}}, nil, "2025-11-25", nil)
		run := "run-cost-" + canonical.NewOwner()[:8]
		ctx := context.Background()
		mustCall(ctx, t, cs, "echo", "call_warm", run, map[string]any{"text": "warm"}) // the run's first call does more
		before := serverCalls(t, srv.Addr)
		for i := range calls {
			if o := mustCall(ctx, t, cs, "echo", fmt.Sprintf("call_c%d", i), run, map[string]any{"text": "x"}); !o.ready {
				t.Fatal(o.text)
			}
		}
		perCall[withRelay] = float64(serverCalls(t, srv.Addr)-before) / calls
	}
	t.Logf("server commands per stateless call: %.2f without the relay, %.2f with it", perCall[false], perCall[true])
	if d := perCall[true] - perCall[false]; d > 0.5 {
		t.Fatalf("the relay costs %.2f commands per call", d)
	}
}

// serverCalls is every command the server at addr has run, INFO aside.
func serverCalls(t *testing.T, addr string) int64 {
	t.Helper()
	info, err := redistest.Command(addr, "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, l := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				c, _ := strconv.ParseInt(v, 10, 64)
				n += c
			}
		}
	}
	return n
}
