package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// confirmQuery holds what the relays redact: the agent is asked it, and
// must see neither the password nor the host.
const confirmQuery = "connect with password=hunter2 to db01.internal"

// elicitations answers every elicitation with answer and keeps the
// messages it was asked.
type elicitations struct {
	mu     sync.Mutex
	seen   []string
	answer string
}

func (e *elicitations) handler(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen = append(e.seen, req.Params.Message)
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": e.answer}}, nil
}

// asked returns the messages asked so far, each checked redacted.
func (e *elicitations) asked(t *testing.T) []string {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.seen {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "db01.internal") || !strings.HasPrefix(s, "connect with password=") {
			t.Fatalf("the agent was asked %q", s)
		}
	}
	return append([]string(nil), e.seen...)
}

// confirmParams is a call of the test upstream's confirm tool.
func confirmParams(id, run, query string) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "confirm", Arguments: map[string]any{"query": query},
		Meta: mcp.Meta{gateway.MetaToolCallID: id, gateway.MetaRunID: run}}
}

// An agent of 2026-07-28 that declared elicitation is asked an upstream's
// input in the call's result (input_required), redacted, with a
// requestState that names only the record: the upstream's own state stays
// in the record. The call's record stays open, and the agent's retry under
// a new JSON-RPC id continues it through another gateway on the same
// Redis, where the upstream gets its state back with the answer; the call
// is one record, READY. Every other use of the id is refused: without the
// input, with another request, with a requestState the gateway did not
// give, by another principal, and once the call is over.
func TestContinuationAcrossGatewaysOnRedis(t *testing.T) {
	addr := redistest.Addr(t)
	logPath := filepath.Join(t.TempDir(), "up.log")
	cfg := baseConfig(t, stdioUpstream(t, logPath, ""), "confirm")
	cfg["http"] = map[string]any{"bearer_tokens": []any{
		map[string]any{"sha256": sha("alice-token"), "subject": "agent-1"},
		map[string]any{"sha256": sha("bob-token"), "subject": "bob"},
	}}
	serve := func() (*liveGateway, string) {
		lg := openLiveOn(t, cfg, openRedisStore(t, addr), gateway.OpenOptions{})
		srv := httptest.NewServer(lg.g.Handler(gateway.HTTPOptions{}))
		t.Cleanup(srv.Close)
		return lg, srv.URL
	}
	lgA, urlA := serve()
	_, urlB := serve()
	ctx := context.Background()
	var asked elicitations
	agent := func(url, token string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
			ElicitationHandler: asked.handler,
			MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true}, // the test retries itself
		}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	a, b := agent(urlA, "alice-token"), agent(urlB, "alice-token")
	run := "run-mrt-" + canonical.NewOwner()[:8]

	first, err := a.CallTool(ctx, confirmParams("call_m1", run, confirmQuery))
	if err != nil {
		t.Fatal(err)
	}
	if !first.NeedsInput() || len(first.Content) != 0 || !strings.HasPrefix(first.RequestState, "toolcanon.1.") ||
		strings.Contains(first.RequestState, "asked") {
		t.Fatalf("first round: needs input %v, content %v, state %q", first.NeedsInput(), first.Content, first.RequestState)
	}
	q, ok := first.InputRequests["answer"].(*mcp.ElicitParams)
	if !ok || len(first.InputRequests) != 1 || strings.Contains(q.Message, "hunter2") || strings.Contains(q.Message, "db01.internal") {
		t.Fatalf("the agent was asked %+v", first.InputRequests)
	}
	if rec := lgA.record(t, run, "call_m1"); rec.Status != canonical.StatusProjecting {
		t.Fatalf("the waiting call's record is %s", rec.Status)
	}

	answer := func(p *mcp.CallToolParams, state string) *mcp.CallToolParams {
		p.InputResponses = mcp.InputResponseMap{"answer": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}}
		p.RequestState = state
		return p
	}
	refused := func(name string, cs *mcp.ClientSession, p *mcp.CallToolParams, code string) {
		t.Helper()
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if o := decode(t, res); o.ready || o.code != code {
			t.Fatalf("%s: %s, want %s", name, o.text, code)
		}
	}
	refused("the same call without its input", b, confirmParams("call_m1", run, confirmQuery), "TOOL_CALL_IN_PROGRESS")
	refused("another request", b, answer(confirmParams("call_m1", run, "another question"), first.RequestState), "TOOL_CALL_IN_PROGRESS")
	refused("a state the gateway did not give", b, answer(confirmParams("call_m1", run, confirmQuery), "asked "+confirmQuery), "INVALID_ARGUMENT")
	refused("another token", b, answer(confirmParams("call_m1", run, confirmQuery), "toolcanon.1."+canonical.NewOwner()), "TOOL_CALL_IN_PROGRESS")
	refused("another principal", agent(urlB, "bob-token"), answer(confirmParams("call_m1", run, confirmQuery), first.RequestState), "RUN_FORBIDDEN")
	if n := countExecutions(t, logPath, "confirm", confirmQuery); n != 1 {
		t.Fatalf("the upstream ran %d times before the answer", n)
	}

	res, err := b.CallTool(ctx, answer(confirmParams("call_m1", run, confirmQuery), first.RequestState))
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, decode(t, res)); got != "confirmed: accept yes" {
		t.Fatalf("the continued call through B: %q", got)
	}
	if rec := lgA.record(t, run, "call_m1"); rec.Status != canonical.StatusReady || strings.Contains(string(rec.Request), "yes") {
		t.Fatalf("the call's record: %s, request %s", rec.Status, rec.Request)
	}
	if n := countExecutions(t, logPath, "confirm", confirmQuery); n != 2 {
		t.Fatalf("the upstream ran %d times, want 2 (the question, the answer)", n)
	}
	refused("the answer sent again", a, answer(confirmParams("call_m1", run, confirmQuery), first.RequestState), "DUPLICATE_TOOL_CALL")
	if got := asked.asked(t); len(got) != 0 {
		t.Fatalf("the agent was sent requests besides the results: %q", got)
	}
}

// An SDK client of 2026-07-28 answers input_required itself and calls
// again: through the gateway, over stdio and stateless HTTP, from a stdio
// and an HTTP upstream (stateless: the SDK serves 2026-07-28 over HTTP only
// so), the call is one record and its agent is asked once, redacted.
func TestContinuationWithTheSDKsRetry(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "upstream.log")
			up := stdioUpstream(t, logPath, "")
			if transport == "http" {
				up = httpUpstream(t, logPath, "--stateless")
			}
			lg := openLive(t, baseConfig(t, up, "confirm"), gateway.OpenOptions{})
			asked := elicitations{answer: "over " + transport}
			ctx := context.Background()
			agents := map[string]*mcp.ClientSession{"stdio": lg.agent(t, &mcp.ClientOptions{ElicitationHandler: asked.handler}, nil)}
			srv := httptest.NewServer(lg.g.Handler(gateway.HTTPOptions{}))
			t.Cleanup(srv.Close)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: asked.handler}).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cs.Close() })
			agents["stateless"] = cs
			for mode, cs := range agents {
				if v := cs.InitializeResult().ProtocolVersion; v < "2026-07-28" {
					t.Fatalf("%s: the agent speaks %s", mode, v)
				}
				id := "call_" + mode
				res, err := cs.CallTool(ctx, confirmParams(id, "run-sdk", confirmQuery))
				if err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
				if o := decode(t, res); !o.ready || textOf(t, o) != "confirmed: accept over "+transport {
					t.Fatalf("%s: %s\n%s", mode, o.text, lg.log.String())
				}
				if rec := lg.record(t, "run-sdk", id); rec.Status != canonical.StatusReady {
					t.Fatalf("%s: the record is %s", mode, rec.Status)
				}
			}
			if got := asked.asked(t); len(got) != 2 {
				t.Fatalf("the agents were asked %d times, want once each", len(got))
			}
		})
	}
}

// A client of 2025-11-25 is asked the same input as a request instead (the
// upstream's SDK asks the gateway, which relays it to the agent of the
// call): the call completes as one record. Stateless, where the gateway
// cannot send the agent a request, it fails cleanly.
func TestContinuationOf2025Client(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "upstream.log")
	lg := openLive(t, baseConfig(t, stdioUpstream(t, logPath, ""), "confirm"), gateway.OpenOptions{})
	asked := elicitations{answer: "from 2025"}
	ctx := context.Background()
	cs := lg.agent(t, &mcp.ClientOptions{ElicitationHandler: asked.handler}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	res, err := cs.CallTool(ctx, confirmParams("call_old", "run-old", confirmQuery))
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, decode(t, res)); got != "confirmed: accept from 2025" {
		t.Fatalf("2025-11-25 over stdio: %q", got)
	}
	if rec := lg.record(t, "run-old", "call_old"); rec.Status != canonical.StatusReady {
		t.Fatalf("the record is %s", rec.Status)
	}
	if got := asked.asked(t); len(got) != 1 {
		t.Fatalf("the agent was asked %d times", len(got))
	}

	srv := httptest.NewServer(lg.g.Handler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	stateless, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: asked.handler}).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stateless.Close() })
	res, err = stateless.CallTool(ctx, confirmParams("call_old2", "run-old", confirmQuery))
	if err != nil {
		t.Fatal(err)
	}
	if o := decode(t, res); o.ready || o.code != "EXECUTION_FAILED" {
		t.Fatalf("2025-11-25 stateless: %s", o.text)
	}
	if res.NeedsInput() || len(res.InputRequests) != 0 {
		t.Fatalf("a 2025-11-25 client was asked in a result")
	}
}
