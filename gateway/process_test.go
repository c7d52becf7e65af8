package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// These tests run the built toolcanon binary in front of the built test
// upstream, with a go-sdk client on the other side: real processes and the
// real SDK on both sides.

// syncBuffer collects a process's stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// own puts cmd in its own process group and makes sure the group is gone
// when the test ends.
func own(t testing.TB, cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t.Cleanup(func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
}

// stdioGateway starts `toolcanon gateway --stdio` as the client's command.
func stdioGateway(t *testing.T, cfg string, extra ...string) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	return stdioGatewayWith(t, nil, cfg, extra...)
}

// stdioGatewayWith is stdioGateway with the client's options.
func stdioGatewayWith(t *testing.T, copts *mcp.ClientOptions, cfg string, extra ...string) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	bin, _ := binaries(t)
	cmd := exec.Command(bin, append([]string{"gateway", "--config", cfg, "--stdio"}, extra...)...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	own(t, cmd)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, copts).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, stderr
}

// httpGateway is a `toolcanon gateway --listen` process.
type httpGateway struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
}

func startHTTPGateway(t testing.TB, cfg string, extra ...string) *httpGateway {
	t.Helper()
	bin, _ := binaries(t)
	g := &httpGateway{stderr: &syncBuffer{}}
	g.cmd = exec.Command(bin, append([]string{"gateway", "--config", cfg, "--listen", "127.0.0.1:0"}, extra...)...)
	pr, pw := io.Pipe()
	g.cmd.Stderr = pw
	own(t, g.cmd)
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(g.stderr, line)
			if rest, ok := strings.CutPrefix(line, "toolcanon gateway: listening on "); ok {
				found <- strings.Fields(rest)[0]
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- g.cmd.Wait(); pw.Close() }()
	select {
	case g.url = <-found:
	case err := <-exited:
		t.Fatalf("the gateway exited: %v\n%s", err, g.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("the gateway did not listen\n%s", g.stderr)
	}
	t.Cleanup(func() {
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Errorf("the gateway did not stop on SIGTERM")
		}
	})
	return g
}

func (g *httpGateway) client(t testing.TB, opts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.url, MaxRetries: -1}, opts)
	if err != nil {
		t.Fatalf("connect %s: %v\n%s", g.url, err, g.stderr)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// stdioUpstream is the config entry of the test upstream as a command,
// logging its executions to logPath.
func stdioUpstream(t testing.TB, logPath, pidPath string) map[string]any {
	_, up := binaries(t)
	env := map[string]any{"UPSTREAM_LOG": logPath}
	if pidPath != "" {
		env["UPSTREAM_PIDFILE"] = pidPath
	}
	return map[string]any{"command": []string{up}, "env": env}
}

// matrixTools are exposed in the transport-and-store matrix; "empty" is
// pinned to a digest its upstream never had.
var matrixTools = []string{"search", "slow", "secrets", "big", "fail", "empty", "write", "echo"}

func matrixConfig(t *testing.T, dir, logPath string) string {
	cfg := baseConfig(t, stdioUpstream(t, logPath, ""), matrixTools...)
	// largeResult keeps a 5 MiB response whole, above the default record bound.
	cfg["run"] = map[string]any{"max_record_bytes": 8 << 20}
	tools := cfg["tools"].([]any)
	for i, e := range tools {
		d := e.(gateway.DraftEntry)
		if d.UpstreamTool == "empty" {
			d.Pin = "sha256:" + strings.Repeat("0", 64)
			tools[i] = d
		}
	}
	return cfg.write(t, dir)
}

func TestGatewayMatrix(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		for _, store := range []string{"memstore", "redisstore", "rediscluster"} {
			t.Run(transport+"/"+store, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				logPath := filepath.Join(dir, "upstream.log")
				cfg := matrixConfig(t, dir, logPath)
				var extra []string
				var rs *redisstore.Store
				if store != "memstore" {
					addrs := []string{redistest.Addr(t)}
					if store == "rediscluster" {
						addrs = redistest.ClusterAddrs(t)
					}
					extra = []string{"--redis", strings.Join(addrs, ",")}
					var err error
					if rs, err = redisstore.New(redisstore.Options{Addrs: addrs}); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = rs.Close() })
				}
				var cs *mcp.ClientSession
				var stderr *syncBuffer
				if transport == "stdio" {
					cs, stderr = stdioGateway(t, cfg, extra...)
				} else {
					g := startHTTPGateway(t, cfg, extra...)
					cs, stderr = g.client(t, nil), g.stderr
				}
				s := &scenario{t: t, cs: cs, log: logPath, rs: rs, run: "run-" + canonical.NewOwner()[:12], stderr: stderr}
				s.all()
			})
		}
	}
}

// scenario is the matrix's list of checks against one gateway.
type scenario struct {
	t      *testing.T
	cs     *mcp.ClientSession
	log    string
	rs     *redisstore.Store // nil on memstore: the records are in the gateway process
	run    string
	stderr *syncBuffer
}

func (s *scenario) ctx() context.Context { return context.Background() }

func (s *scenario) all() {
	s.parallelDistinct()
	s.parallelDuplicates()
	s.refusals()
	s.largeResult()
	s.secrets()
	s.upstreamError()
	s.noRun()
	if s.t.Failed() {
		s.t.Logf("gateway stderr:\n%s", s.stderr)
	}
}

func (s *scenario) parallelDistinct() {
	t := s.t
	const n = 32
	var wg sync.WaitGroup
	outs := make([]outcome, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = callTool(s.ctx(), t, s.cs, "search", fmt.Sprintf("call_p%02d", i), s.run, map[string]any{"query": fmt.Sprintf("%s-p%02d", s.run, i)})
		}()
	}
	wg.Wait()
	ready, execs := 0, 0
	for i := range n {
		if errs[i] != nil || !outs[i].ready || outs[i].obj["tool_call_id"] != fmt.Sprintf("call_p%02d", i) {
			t.Fatalf("parallel call %d: %v %s", i, errs[i], outs[i].text)
		}
		ready++
		c := countExecutions(t, s.log, "search", fmt.Sprintf("%s-p%02d", s.run, i))
		if c != 1 {
			t.Errorf("parallel call %d ran upstream %d times", i, c)
		}
		execs += c
	}
	if s.rs != nil {
		for i := range n {
			rec, err := s.rs.Get(s.ctx(), agentRun(s.run), fmt.Sprintf("call_p%02d", i))
			if err != nil || rec.Status != canonical.StatusReady || rec.Evidence != canonical.EvidenceFound {
				t.Errorf("record %d: %+v %v", i, rec.Status, err)
			}
		}
	}
	t.Logf("%d parallel distinct calls: %d READY, %d upstream executions", n, ready, execs)
}

func (s *scenario) parallelDuplicates() {
	t := s.t
	const n = 20
	ms := 400 + int(time.Now().UnixNano()%500)
	var wg sync.WaitGroup
	outs := make([]outcome, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = callTool(s.ctx(), t, s.cs, "slow", "call_dup", s.run, map[string]any{"ms": ms})
		}()
	}
	wg.Wait()
	ready, losers := 0, map[string]int{}
	for i := range n {
		switch {
		case errs[i] != nil:
			t.Fatalf("duplicate %d: %v", i, errs[i])
		case outs[i].ready:
			ready++
		case outs[i].code == "DUPLICATE_TOOL_CALL" || outs[i].code == "TOOL_CALL_IN_PROGRESS":
			losers[outs[i].code]++
		default:
			t.Errorf("duplicate %d: %s", i, outs[i].text)
		}
	}
	execs := countExecutions(t, s.log, "slow", strconv.Itoa(ms))
	if ready != 1 || execs != 1 {
		t.Fatalf("20 calls with one tool_call_id: %d READY, %d upstream executions; want 1 and 1", ready, execs)
	}
	if s.rs != nil {
		if rec, err := s.rs.Get(s.ctx(), agentRun(s.run), "call_dup"); err != nil || rec.Status != canonical.StatusReady {
			t.Errorf("duplicate's record: %v %v", rec.Status, err)
		}
	}
	t.Logf("20 parallel calls with one id: 1 READY, %v, %d upstream execution", losers, execs)
}

func (s *scenario) refusals() {
	t := s.t
	cases := []struct {
		tool, id string
		args     map[string]any
		code     string
		logTool  string
	}{
		{"unlisted", "call_r1", map[string]any{"query": s.run + "-r1"}, "UNKNOWN_TOOL", "unlisted"},
		{"empty", "call_r2", map[string]any{"query": s.run + "-r2"}, "TOOL_DEFINITION_CHANGED", "empty"},
		{"write", "call_r3", map[string]any{"text": s.run + "-r3"}, "NOT_READ_ONLY", "write"},
		{"search", "call_r4", map[string]any{"query": s.run + "-r4", "limit": 3}, "INVALID_INPUT", "search"},
		{"search", "call_r5", map[string]any{"query": s.run + "-r5" + strings.Repeat("x", 300)}, "INVALID_INPUT", "search"},
		{"search", "", map[string]any{"query": s.run + "-r6"}, "INVALID_TOOL_CALL_ID", "search"},
		{"search", "call r7", map[string]any{"query": s.run + "-r7"}, "INVALID_TOOL_CALL_ID", "search"},
	}
	for _, c := range cases {
		o := mustCall(s.ctx(), t, s.cs, c.tool, c.id, s.run, c.args)
		if o.code != c.code {
			t.Errorf("%s %q: agent got %s, want %s", c.tool, c.id, o.text, c.code)
		}
		arg, _ := c.args["query"].(string)
		if arg == "" {
			arg, _ = c.args["text"].(string)
		}
		if n := countExecutions(t, s.log, c.logTool, arg); n != 0 {
			t.Errorf("%s %q: the upstream ran %d times", c.tool, c.id, n)
		}
		if s.rs != nil && canonical.ValidateToolCallID(c.id) == nil {
			if _, err := s.rs.Get(s.ctx(), agentRun(s.run), c.id); canonical.CodeOf(err) != canonical.CodeNotFound {
				t.Errorf("%s %q: a refused call has a record: %v", c.tool, c.id, err)
			}
		}
	}
}

func (s *scenario) largeResult() {
	t := s.t
	o := mustCall(s.ctx(), t, s.cs, "big", "call_big", s.run, map[string]any{"size_kib": 5 << 10})
	switch {
	case o.ready:
		if len(o.text) > 16<<10 || o.obj["truncated"] != true {
			t.Fatalf("a 5 MiB result projected to %d bytes, truncated=%v", len(o.text), o.obj["truncated"])
		}
	case o.code != "RESULT_TOO_LARGE":
		t.Fatalf("a 5 MiB result: %s", o.text)
	}
	s.noSecrets("big", o.text)
	if s.rs != nil {
		rec, err := s.rs.Get(s.ctx(), agentRun(s.run), "call_big")
		if err != nil || rec.RawLen < 5<<20 {
			t.Fatalf("the record keeps %d raw bytes (%v), want the whole 5 MiB result", rec.RawLen, err)
		}
	}
	t.Logf("5 MiB upstream result: agent got %d bytes", len(o.text))
}

func (s *scenario) secrets() {
	o := mustCall(s.ctx(), s.t, s.cs, "secrets", "call_sec", s.run, map[string]any{"query": "diagnostics"})
	if !o.ready || !strings.Contains(o.text, "<SECRET:") {
		s.t.Fatalf("secrets: %s", o.text)
	}
	s.noSecrets("secrets", o.text)
}

func (s *scenario) noSecrets(what, text string) {
	for _, sec := range plantedSecrets {
		if strings.Contains(text, sec) {
			s.t.Errorf("%s: the agent received the planted secret %q", what, sec)
		}
	}
}

func (s *scenario) upstreamError() {
	t := s.t
	o := mustCall(s.ctx(), t, s.cs, "fail", "call_fail", s.run, map[string]any{"query": s.run + "-fail"})
	if o.code != "EXECUTION_FAILED" || strings.Contains(o.text, "exploded") {
		t.Fatalf("an upstream isError result: %s", o.text)
	}
	if s.rs != nil {
		rec, err := s.rs.Get(s.ctx(), agentRun(s.run), "call_fail")
		if err != nil || rec.Status != canonical.StatusError || rec.Error != canonical.CodeExecutionFailed || !strings.Contains(string(rec.Raw), "backend exploded") {
			t.Fatalf("record of an upstream error: %+v %v", rec, err)
		}
	}
	o = mustCall(s.ctx(), t, s.cs, "empty", "call_empty", s.run, map[string]any{"query": "x"})
	if o.code != "TOOL_DEFINITION_CHANGED" {
		t.Fatalf("a tool whose pin never matched: %s", o.text)
	}
}

func (s *scenario) noRun() {
	_, err := callTool(s.ctx(), s.t, s.cs, "search", "call_norun", "", map[string]any{"query": "x"})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != gateway.CodeNoRun {
		s.t.Fatalf("a call without a run: %v", err)
	}
}

// Stateful HTTP (--sessions) with a client of the previous protocol version.
func TestGatewayHTTPSessions(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "upstream.log")
	g := startHTTPGateway(t, matrixConfig(t, dir, logPath), "--sessions")
	cs := g.client(t, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	o := mustCall(context.Background(), t, cs, "search", "call_s1", "run-sessions", map[string]any{"query": "sessions-1"})
	if !o.ready || countExecutions(t, logPath, "search", "sessions-1") != 1 {
		t.Fatalf("agent got %s", o.text)
	}
	if !strings.Contains(g.stderr.String(), "(with sessions)") {
		t.Fatalf("stderr: %s", g.stderr)
	}
}

// Two gateway processes share one Redis, two clients each: the run's
// budget of 100 holds across them, and a duplicate sent to both runs once.
func TestTwoGatewaysShareOneRedis(t *testing.T) {
	addr := redistest.Addr(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "upstream.log")
	cfg := baseConfig(t, stdioUpstream(t, logPath, ""), "search", "slow")
	cfg["run"] = map[string]any{"max_calls": 100, "max_calls_per_tool": 1000}
	path := cfg.write(t, dir)
	gws := []*httpGateway{startHTTPGateway(t, path, "--redis", addr), startHTTPGateway(t, path, "--redis", addr)}
	var clients []*mcp.ClientSession
	for _, g := range gws {
		clients = append(clients, g.client(t, nil), g.client(t, nil))
	}
	run := "run-budget-" + canonical.NewOwner()[:8]
	const perClient = 60
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for ci, cs := range clients {
		for w := range 3 { // three calls in flight per client
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < perClient; i += 3 {
					id := fmt.Sprintf("call_c%d_%02d", ci, i)
					o, err := callTool(context.Background(), t, cs, "search", id, run, map[string]any{"query": run + "-" + id})
					key := o.code
					if err != nil {
						key = "error: " + err.Error()
					} else if o.ready {
						key = "READY"
					}
					mu.Lock()
					counts[key]++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	b, _ := os.ReadFile(logPath)
	execs := strings.Count(string(b), "search "+run+"-")
	t.Logf("budget 100, 2 gateways x 2 clients x 60 calls: %v; upstream executions %d", counts, execs)
	if counts["READY"] != 100 || counts["BUDGET_EXHAUSTED"] != 4*perClient-100 || execs != 100 {
		t.Fatalf("outcomes %v, upstream executions %d; want 100 READY, 140 BUDGET_EXHAUSTED, 100 executions", counts, execs)
	}

	// The same tool_call_id, at the same moment, through both gateways.
	dupRun := "run-dup-" + canonical.NewOwner()[:8]
	ms := 600 + int(time.Now().UnixNano()%300)
	outs := make([]outcome, 4)
	for i, cs := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = mustCall(context.Background(), t, cs, "slow", "call_both", dupRun, map[string]any{"ms": ms})
		}()
	}
	wg.Wait()
	ready := 0
	for _, o := range outs {
		if o.ready {
			ready++
		} else if o.code != "DUPLICATE_TOOL_CALL" && o.code != "TOOL_CALL_IN_PROGRESS" {
			t.Errorf("duplicate across gateways: %s", o.text)
		}
	}
	if n := countExecutions(t, logPath, "slow", strconv.Itoa(ms)); ready != 1 || n != 1 {
		t.Fatalf("one id through two gateways: %d READY, %d upstream executions", ready, n)
	}
	t.Logf("one tool_call_id sent 4 times through 2 gateways: 1 READY, 1 upstream execution")
}

// The upstream dies in the middle of a call: the call is EXECUTION_FAILED
// and recorded ERROR, the gateway keeps serving, and the next call runs on
// a new upstream process.
func TestUpstreamKilledMidCallStdio(t *testing.T) {
	addr := redistest.Addr(t)
	rs := openRedisStore(t, addr)
	dir := t.TempDir()
	logPath, pidPath := filepath.Join(dir, "upstream.log"), filepath.Join(dir, "upstream.pid")
	cs, stderr := stdioGateway(t, baseConfig(t, stdioUpstream(t, logPath, pidPath), "search", "slow").write(t, dir), "--redis", addr)
	run := "run-kill-" + canonical.NewOwner()[:8]
	ctx := context.Background()
	if o := mustCall(ctx, t, cs, "search", "call_k0", run, map[string]any{"query": "before"}); !o.ready {
		t.Fatal(o.text)
	}
	first := readPid(t, pidPath)

	done := make(chan outcome, 1)
	go func() { done <- mustCall(ctx, t, cs, "slow", "call_k1", run, map[string]any{"ms": 20000}) }()
	waitFor(t, func() bool { return countExecutions(t, logPath, "slow", "20000") == 1 }, "the slow call to reach the upstream")
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var o outcome
	select {
	case o = <-done:
	case <-time.After(15 * time.Second):
		t.Fatalf("the call did not end when its upstream died\n%s", stderr)
	}
	if o.code != "EXECUTION_FAILED" {
		t.Fatalf("call whose upstream died: %s", o.text)
	}
	if rec, err := rs.Get(ctx, agentRun(run), "call_k1"); err != nil || rec.Status != canonical.StatusError || rec.Error != canonical.CodeExecutionFailed {
		t.Fatalf("record: %+v %v", rec, err)
	}
	waitFor(t, func() bool {
		o := mustCall(ctx, t, cs, "search", "call_k2_"+canonical.NewOwner()[:6], run, map[string]any{"query": "after"})
		return o.ready
	}, "a call on a restarted upstream")
	if second := readPid(t, pidPath); second == first {
		t.Fatalf("the upstream was not restarted (pid %d)", first)
	}
}

// An HTTP upstream is killed mid-call and restarted on the same address.
func TestUpstreamKilledMidCallHTTP(t *testing.T) {
	_, up := binaries(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "upstream.log")
	port := freePort(t)
	upAddr := fmt.Sprintf("127.0.0.1:%d", port)
	startUp := func() *exec.Cmd {
		cmd := exec.Command(up, "--http", upAddr)
		cmd.Env = append(os.Environ(), "UPSTREAM_LOG="+logPath)
		own(t, cmd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = cmd.Wait() }()
		waitFor(t, func() bool {
			c, err := net.Dial("tcp", upAddr)
			if err == nil {
				c.Close()
			}
			return err == nil
		}, "the upstream to listen")
		return cmd
	}
	upCmd := startUp()
	cfg := baseConfig(t, map[string]any{"url": "http://" + upAddr + "/mcp"}, "search", "slow")
	g := startHTTPGateway(t, cfg.write(t, dir))
	cs := g.client(t, nil)
	ctx := context.Background()
	run := "run-httpkill"
	if o := mustCall(ctx, t, cs, "search", "call_h0", run, map[string]any{"query": "before"}); !o.ready {
		t.Fatalf("%s\n%s", o.text, g.stderr)
	}
	done := make(chan outcome, 1)
	go func() { done <- mustCall(ctx, t, cs, "slow", "call_h1", run, map[string]any{"ms": 20000}) }()
	waitFor(t, func() bool { return countExecutions(t, logPath, "slow", "20000") == 1 }, "the slow call to reach the upstream")
	_ = syscall.Kill(-upCmd.Process.Pid, syscall.SIGKILL)
	select {
	case o := <-done:
		if o.code != "EXECUTION_FAILED" {
			t.Fatalf("call whose upstream died: %s", o.text)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the call did not end when its upstream died\n%s", g.stderr)
	}
	if o := mustCall(ctx, t, cs, "search", "call_h2", run, map[string]any{"query": "down"}); o.code != "UPSTREAM_UNAVAILABLE" {
		t.Fatalf("call while the upstream is down: %s", o.text)
	}
	startUp()
	waitFor(t, func() bool {
		return mustCall(ctx, t, cs, "search", "call_h3_"+canonical.NewOwner()[:6], run, map[string]any{"query": "after"}).ready
	}, "a call on the restarted upstream")
}

// The upstream rewrites a pinned tool's description while running: once it
// announces the changed list, the tool is refused and the change is logged
// with both digests.
func TestChangedUpstreamToolIsRefused(t *testing.T) {
	dir := t.TempDir()
	logPath, pidPath := filepath.Join(dir, "upstream.log"), filepath.Join(dir, "upstream.pid")
	cs, stderr := stdioGateway(t, baseConfig(t, stdioUpstream(t, logPath, pidPath), "search", "echo").write(t, dir))
	ctx := context.Background()
	run := "run-rug"
	if o := mustCall(ctx, t, cs, "search", "call_c0", run, map[string]any{"query": "pinned"}); !o.ready {
		t.Fatal(o.text)
	}
	if err := syscall.Kill(readPid(t, pidPath), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	var refused string
	waitFor(t, func() bool {
		id := "call_c" + canonical.NewOwner()[:6]
		o := mustCall(ctx, t, cs, "search", id, run, map[string]any{"query": "probe-" + id})
		if o.code == "TOOL_DEFINITION_CHANGED" {
			refused = id
		}
		return refused != ""
	}, "the changed tool to be refused")
	if n := countExecutions(t, logPath, "search", "probe-"+refused); n != 0 {
		t.Fatalf("the refused call ran upstream %d times", n)
	}
	// Other tools of the upstream keep working.
	if o := mustCall(ctx, t, cs, "echo", "call_c_echo", run, map[string]any{"text": "still here"}); !o.ready {
		t.Fatal(o.text)
	}
	log := stderr.String()
	if !strings.Contains(log, "TOOL_DEFINITION_CHANGED") || !strings.Contains(log, "pinned=sha256:") || !strings.Contains(log, "seen=sha256:") {
		t.Fatalf("the change is not logged with both digests:\n%s", log)
	}
}

// A bad configuration ends the command with exit code 2 and a message
// naming the file, the place and the fix; nothing is served.
func TestBadConfigExitsTwoAndServesNothing(t *testing.T) {
	bin, _ := binaries(t)
	dir := t.TempDir()
	good := baseConfig(t, map[string]any{"url": "http://127.0.0.1:1/mcp"}, "search")
	cases := map[string]string{
		"syntax.json":  `{"upstreams": {"a": {"url": "http://127.0.0.1:1/mcp"}},}`,
		"unknown.json": strings.Replace(string(mustMarshal(t, good)), `"identity"`, `"identty"`, 1),
		"nopin.json":   strings.Replace(string(mustMarshal(t, good)), `"pin"`, `"pinned"`, 1),
		"open.json":    strings.Replace(string(mustMarshal(t, good)), `"additionalProperties":false`, `"additionalProperties":true`, 1),
	}
	for name, doc := range cases {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, mode := range [][]string{{"--listen", "127.0.0.1:0"}, {"--stdio"}} {
			cmd := exec.Command(bin, append([]string{"gateway", "--config", path}, mode...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			own(t, cmd)
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Errorf("%s %v: %v, want exit 2", name, mode, err)
			}
			msg := stderr.String()
			if !strings.Contains(msg, path+":") || !strings.Contains(msg, "fix:") || strings.Contains(msg, "listening") || stdout.Len() != 0 {
				t.Errorf("%s %v: stdout %q stderr %q", name, mode, stdout.String(), msg)
			}
		}
	}
	path := good.write(t, dir)
	out, err := exec.Command(bin, "gateway", "check", "--config", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok: 1 tools from 1 upstreams") {
		t.Fatalf("check: %v %s", err, out)
	}
}

// From a file with only upstreams, `gateway pin` prints a configuration
// whose every entry `gateway check` accepts as printed, except those whose
// schema the subset cannot express: each of those is narrowed, marked for
// review, and every refused feature is printed with its JSON pointer, all
// in the one run. Deleting the marks is the only edit check then needs.
func TestPinCommandDraftsEveryTool(t *testing.T) {
	bin, up := binaries(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "pin.json")
	if err := os.WriteFile(path, []byte(`{"upstreams": {"up": {"command": ["`+up+`"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "gateway", "pin", "--config", path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	own(t, cmd)
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	var out struct {
		Tools     []gateway.DraftEntry   `json:"tools"`
		Prompts   []gateway.SurfaceEntry `json:"prompts"`
		Resources []gateway.SurfaceEntry `json:"resources"`
		Policy    struct {
			Grants []gateway.Grant `json:"grants"`
		} `json:"policy"`
	}
	if err := jsonUnmarshal(stdout.Bytes(), &out); err != nil || len(out.Tools) != 25 {
		t.Fatalf("%d drafts (%v): %s", len(out.Tools), err, stdout.String())
	}
	// The prompts and resources too, each with its grant; prompts and
	// templates with their pins.
	var got []string
	for _, e := range out.Prompts {
		got = append(got, "prompt "+e.Name+" "+e.UpstreamPrompt+" "+strconv.FormatBool(strings.HasPrefix(e.Pin, "sha256:")))
	}
	for _, e := range out.Resources {
		got = append(got, "resource "+e.Name+" "+e.URI+e.URITemplate+" "+strconv.FormatBool(strings.HasPrefix(e.Pin, "sha256:")))
	}
	want := []string{"prompt greet greet true", "prompt huge huge true", "prompt plain plain true",
		"resource item kb://items/{id} true", "resource logo kb://docs/logo false", "resource readme kb://docs/readme false", "resource watched kb://watched false"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("drafted prompts and resources:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if allow := strings.Join(out.Policy.Grants[0].Allow, " "); !strings.Contains(allow, "prompt.get:greet") || !strings.Contains(allow, "resource.read:item") {
		t.Errorf("the draft policy grants %s", allow)
	}
	ds := upstreamDrafts(t)
	for _, e := range out.Tools {
		review := e.UpstreamTool == "typed" || e.UpstreamTool == "refused"
		if e.Pin != ds[e.UpstreamTool].Pin || review != (e.Unbounded != "") {
			t.Errorf("draft %+v", e)
		}
	}
	for _, want := range []string{
		"up/unbounded: new sha256:",
		`adjusted at "/properties/q", "maxLength": 4096 added`,
		`refused at "/properties/id", "pattern"`, `refused at "/properties/filter", "anyOf"`, `refused at "/properties/ref", "$ref"`,
		`refused at "/properties/score", "exclusiveMinimum"`, `adjusted at "/properties/count", "exclusiveMinimum": written as minimum 1`,
		`refused at "/properties/near", "type": null is not accepted`, `refused at "/properties/labels/additionalProperties"`,
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	printed := filepath.Join(dir, "gateway.json")
	if err := os.WriteFile(printed, stdout.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func() (string, error) {
		b, err := exec.Command(bin, "gateway", "check", "--config", printed).CombinedOutput()
		return string(b), err
	}
	if msg, err := check(); err == nil || !strings.Contains(msg, `/unbounded": the draft is marked for review`) {
		t.Fatalf("check of the printed file: %v: %s", err, msg)
	}
	var doc map[string]any
	if err := jsonUnmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, e := range doc["tools"].([]any) {
		delete(e.(map[string]any), "unbounded")
	}
	if err := os.WriteFile(printed, mustMarshal(t, doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if msg, err := check(); err != nil || !strings.Contains(msg, "ok: 25 tools, 3 prompts, 4 resources from 1 upstreams") {
		t.Fatalf("check after the review: %v: %s", err, msg)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	waitFor(t, func() bool {
		b, err := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}, "the upstream's pid file")
	return pid
}

// waitFor polls cond for up to 20 seconds.
func waitFor(t testing.TB, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
