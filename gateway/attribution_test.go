package gateway_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/gateway"
)

// httpUpstream starts the test upstream serving streamable HTTP with
// sessions, logging its executions to logPath, and returns its
// configuration.
func httpUpstream(t *testing.T, logPath string, flags ...string) map[string]any {
	t.Helper()
	_, up := binaries(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(up, append([]string{"--http", addr}, flags...)...)
	cmd.Env = append(os.Environ(), "UPSTREAM_LOG="+logPath)
	own(t, cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	waitFor(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "the upstream to listen")
	return map[string]any{"url": "http://" + addr + "/mcp"}
}

// logSink keeps the log messages one agent received.
type logSink struct {
	mu   sync.Mutex
	data []string
}

func (l *logSink) handler(_ context.Context, req *mcp.LoggingMessageRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, _ := req.Params.Data.(string)
	l.data = append(l.data, s)
}

func (l *logSink) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.data {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// An upstream that logs after answering — "finished background work for
// query ..." when the call that started it is long answered — while another
// agent's call is the only one in flight: the message reaches that other
// agent never. A message sent during a call reaches the call's own agent,
// and no other. Over stdio (each agent that set a log level has its own
// upstream process) and over streamable HTTP (a message counts as a call's
// only when it came on that call's response stream).
func TestLateUpstreamLogReachesNoOtherAgent(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "upstream.log")
			up := stdioUpstream(t, logPath, "")
			if transport == "http" {
				up = httpUpstream(t, logPath)
			}
			lg := openLive(t, baseConfig(t, up, "background", "wait", "note"), gateway.OpenOptions{})
			ctx := context.Background()
			var alice, bob logSink
			sopts := &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
			a := lg.agent(t, &mcp.ClientOptions{LoggingMessageHandler: alice.handler}, sopts)
			b := lg.agent(t, &mcp.ClientOptions{LoggingMessageHandler: bob.handler}, sopts)
			for _, cs := range []*mcp.ClientSession{a, b} {
				if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
					t.Fatal(err)
				}
			}
			if o := mustCall(ctx, t, a, "background", "call_a1", "run-a", map[string]any{"query": "alice-private-query", "ms": 400}); !o.ready {
				t.Fatalf("alice's call: %s", o.text)
			}
			// Bob's call is the one in flight when alice's upstream logs.
			if o := mustCall(ctx, t, b, "wait", "call_b1", "run-b", map[string]any{"query": "call_b1", "ms": 1500}); !o.ready {
				t.Fatalf("bob's call: %s", o.text)
			}
			time.Sleep(200 * time.Millisecond)
			if n := bob.count("alice-private-query"); n != 0 {
				t.Fatalf("alice's late log message reached bob (%d times)", n)
			}

			// A message sent during a call reaches its own agent only.
			if o := mustCall(ctx, t, a, "note", "call_a2", "run-a", map[string]any{"query": "alice-note"}); !o.ready {
				t.Fatalf("alice's note: %s", o.text)
			}
			waitFor(t, func() bool { return alice.count("on alice-note") == 3 }, "alice's three notes")
			if o := mustCall(ctx, t, b, "note", "call_b2", "run-b", map[string]any{"query": "bob-note"}); !o.ready {
				t.Fatalf("bob's note: %s", o.text)
			}
			waitFor(t, func() bool { return bob.count("on bob-note") == 3 }, "bob's three notes")
			if alice.count("bob-note") != 0 || bob.count("alice-note") != 0 {
				t.Fatal("a note reached the other agent")
			}
		})
	}
}

// An upstream's sampling and elicitation requests reach the agent bounded
// and redacted as log messages are, through an HTTP upstream too (by the
// call's stream).
func TestRelayedRequestsAreRedacted(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "upstream.log")
			up := stdioUpstream(t, logPath, "")
			if transport == "http" {
				up = httpUpstream(t, logPath)
			}
			lg := openLive(t, baseConfig(t, up, "sample", "elicit"), gateway.OpenOptions{})
			var mu sync.Mutex
			var seen []string
			cs := lg.agent(t, &mcp.ClientOptions{
				CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					mu.Lock()
					seen = append(seen, req.Params.Messages[0].Content.(*mcp.TextContent).Text)
					mu.Unlock()
					return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "ok"}}, nil
				},
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					seen = append(seen, req.Params.Message)
					mu.Unlock()
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
				},
			}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			ctx := context.Background()
			secret := map[string]any{"query": "connect with password=hunter2 to db01.internal", "size_kib": 16}
			if got := textOf(t, mustCall(ctx, t, cs, "sample", "call_q1", "run-q", secret)); got != "sampled: ok" {
				t.Fatalf("sampling: %q", got)
			}
			if got := textOf(t, mustCall(ctx, t, cs, "elicit", "call_q2", "run-q", secret)); got != "elicited: accept yes" {
				t.Fatalf("elicitation: %q", got)
			}
			// An agent that did not declare the capability is refused it,
			// its call told apart by its stream or connection.
			plain := lg.agent(t, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			want := "cannot tell which call" // stdio: no connection of its own
			if transport == "http" {
				want = "did not declare"
			}
			if got := textOf(t, mustCall(ctx, t, plain, "sample", "call_q3", "run-q", map[string]any{"query": "q"})); !strings.Contains(got, want) {
				t.Fatalf("sampling for an agent without the capability: %q", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 2 {
				t.Fatalf("the agent saw %d requests", len(seen))
			}
			for _, s := range seen {
				if strings.Contains(s, "hunter2") || strings.Contains(s, "db01.internal") || len(s) > gateway.MaxRelayedRequestText ||
					!strings.HasPrefix(s, "connect with password=") {
					t.Fatalf("a relayed request's text, %d bytes: %.200s", len(s), s)
				}
			}
		})
	}
}

// A stdio upstream runs one process for each agent session that wants its
// messages, up to the cap: past it, a session's calls run on the shared
// process and its log messages are dropped. A session that ends stops its
// process, and frees its place for the next.
func TestAgentConnectionsAreCappedAndEnd(t *testing.T) {
	dir := t.TempDir()
	logPath, pidPath := filepath.Join(dir, "upstream.log"), filepath.Join(dir, "upstream.pid")
	lg := openLive(t, baseConfig(t, stdioUpstream(t, logPath, pidPath), "note"), gateway.OpenOptions{MaxAgentConnections: 1})
	ctx := context.Background()
	shared := readPid(t, pidPath)
	agent := func(sink *logSink) *mcp.ClientSession {
		cs := lg.agent(t, &mcp.ClientOptions{LoggingMessageHandler: sink.handler}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		return cs
	}
	var first, second, third logSink
	a := agent(&first)
	mustCall(ctx, t, a, "note", "call_c1", "run-c", map[string]any{"query": "first"})
	waitFor(t, func() bool { return first.count("on first") == 3 }, "the first agent's notes")
	own := readPid(t, pidPath)
	if own == shared {
		t.Fatal("the first agent's calls ran on the shared process")
	}
	b := agent(&second)
	mustCall(ctx, t, b, "note", "call_c2", "run-c2", map[string]any{"query": "second"})
	time.Sleep(300 * time.Millisecond)
	if second.count("on second") != 0 || readPid(t, pidPath) != own {
		t.Fatal("an agent past the cap got a process of its own")
	}
	_ = a.Close()
	waitFor(t, func() bool { return syscall.Kill(own, 0) != nil }, "the first agent's process to stop")
	c := agent(&third)
	mustCall(ctx, t, c, "note", "call_c3", "run-c3", map[string]any{"query": "third"})
	waitFor(t, func() bool { return third.count("on third") == 3 }, "the third agent's notes, on the place the first freed")
}

// An HTTP upstream may send a request on its session's own stream rather
// than on the call's (the conformance suite's reference server does). An
// agent whose session outlives its requests and declared elicitation gets
// an upstream session of its own, so that such a request can only be its:
// it reaches that agent, and never another.
func TestRequestOnAnUpstreamSessionsOwnStreamReachesItsAgent(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "upstream.log")
	lg := openLive(t, baseConfig(t, httpUpstream(t, logPath), "aside", "wait"), gateway.OpenOptions{})
	ctx := context.Background()
	var mu sync.Mutex
	asked := map[string]int{}
	elicit := func(name string) *mcp.ClientOptions {
		return &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked[name]++
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": name}}, nil
		}}
	}
	sopts := &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	a, b := lg.agent(t, elicit("alice"), sopts), lg.agent(t, elicit("bob"), sopts)
	// Bob has a call in flight on his own upstream session meanwhile.
	done := make(chan outcome, 1)
	go func() {
		done <- mustCall(ctx, t, b, "wait", "call_w1", "run-b", map[string]any{"query": "bob-waits", "ms": 1500})
	}()
	o := mustCall(ctx, t, a, "aside", "call_s1", "run-a", map[string]any{"query": "for alice"})
	if !o.ready || !strings.Contains(textOf(t, o), "elicited aside: accept alice") {
		t.Fatalf("alice's request off the call's stream: %s", o.text)
	}
	<-done
	mu.Lock()
	defer mu.Unlock()
	if asked["alice"] != 1 || asked["bob"] != 0 {
		t.Fatalf("elicitations: %v", asked)
	}
}
