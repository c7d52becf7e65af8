package gateway_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/projectors/mcpresult"
	"github.com/toolcanon/toolcanon/registry"
)

// existing is a go-sdk server as a host already has it, with its own tools
// and handlers, and the middleware added.
type existing struct {
	store *memstore.Store
	cs    *mcp.ClientSession
	mu    sync.Mutex
	saw   []string // arguments the server's handlers received
	fail  bool
}

func newExisting(t *testing.T) *existing {
	t.Helper()
	e := &existing{store: memstore.New()}
	srv := mcp.NewServer(&mcp.Implementation{Name: "host", Version: "1"}, nil)
	lookup := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		e.mu.Lock()
		e.saw = append(e.saw, req.Params.Name+" "+string(req.Params.Arguments))
		fail := e.fail
		e.mu.Unlock()
		if fail {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "backend down: password=hunter2"}}, IsError: true}, nil
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: "order o-1 refunded"}},
			StructuredContent: map[string]any{"order": "o-1", "status": "refunded", "owner_email": "alice@example.com"},
		}, nil
	}
	open := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&mcp.Tool{Name: "lookup", Description: "The server's own description.", InputSchema: open}, lookup)
	srv.AddTool(&mcp.Tool{Name: "admin", Description: "Not bound.", InputSchema: open}, lookup)

	reg, err := registry.New(registry.Definition{
		Name: "orders.lookup", Version: "2.0.0", Description: "Look an order up.", Effect: registry.EffectRead, Risk: registry.RiskLow,
		Timeout: 5 * time.Second,
		InputSchema: []byte(`{"type":"object","additionalProperties":false,"required":["id"],
			"properties":{"id":{"type":"string","minLength":1,"maxLength":16},"verbose":{"type":"boolean"}}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	proj, _ := mcpresult.New(mcpresult.DefaultConfig())
	b, err := boundary.New(e.store, reg, allowAll, boundary.Bind("lookup", "orders.lookup", "2.0.0", gateway.ServerTool, proj))
	if err != nil {
		t.Fatal(err)
	}
	mw, err := gateway.Middleware(b, gateway.Options{Runs: fixedRun("")})
	if err != nil {
		t.Fatal(err)
	}
	srv.AddReceivingMiddleware(mw)
	e.cs = connect(t, srv)
	return e
}

func TestMiddlewareRunsTheServersHandlerWithTheCanonicalInput(t *testing.T) {
	e := newExisting(t)
	ctx := context.Background()
	res, err := e.cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup",
		Arguments: json.RawMessage(`{ "verbose" : true, "id": "o-\u0031" }`),
		Meta:      mcp.Meta{gateway.MetaToolCallID: "call_m1", gateway.MetaRunID: "run-m"}})
	if err != nil {
		t.Fatal(err)
	}
	o := decode(t, res)
	if !o.ready || !strings.Contains(o.text, `"owner_email":"<EMAIL:`) {
		t.Fatalf("agent got %s", o.text)
	}
	if want := []string{`lookup {"id":"o-1","verbose":true}`}; !slices.Equal(e.saw, want) {
		t.Fatalf("the handler saw %q, want %q", e.saw, want)
	}
	rec, err := e.store.Get(ctx, "run-m", "call_m1")
	if err != nil {
		t.Fatal(err)
	}
	var raw mcp.CallToolResult
	if err := json.Unmarshal(rec.Raw, &raw); err != nil || len(raw.Content) != 1 || !strings.Contains(string(rec.Raw), "alice@example.com") {
		t.Fatalf("raw is not the handler's whole result: %s (%v)", rec.Raw, err)
	}
}

func TestMiddlewareRecordsAnErrorResultAsExecutionFailed(t *testing.T) {
	e := newExisting(t)
	e.fail = true
	ctx := context.Background()
	o := mustCall(ctx, t, e.cs, "lookup", "call_m2", "run-m", map[string]any{"id": "o-2"})
	if o.code != "EXECUTION_FAILED" || strings.Contains(o.text, "hunter2") {
		t.Fatalf("agent got %s", o.text)
	}
	rec, err := e.store.Get(ctx, "run-m", "call_m2")
	if err != nil || rec.Status != canonical.StatusError || rec.Error != canonical.CodeExecutionFailed ||
		!strings.Contains(string(rec.Raw), "backend down") {
		t.Fatalf("record %+v, %v", rec, err)
	}
}

func TestMiddlewareListsAndRunsOnlyBoundTools(t *testing.T) {
	e := newExisting(t)
	ctx := context.Background()
	res, err := e.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "lookup" || res.Tools[0].Description != "Look an order up." {
		t.Fatalf("listed %+v", res.Tools)
	}
	if o := mustCall(ctx, t, e.cs, "admin", "call_m3", "run-m", map[string]any{}); o.code != "UNKNOWN_TOOL" {
		t.Fatalf("agent got %s", o.text)
	}
	if o := mustCall(ctx, t, e.cs, "lookup", "call_m4", "run-m", map[string]any{"id": 7}); o.code != "INVALID_INPUT" {
		t.Fatalf("agent got %s", o.text)
	}
	if len(e.saw) != 0 {
		t.Fatalf("the server's handler ran: %q", e.saw)
	}
}

func TestServerToolOutsideMiddlewareFails(t *testing.T) {
	if _, err := gateway.ServerTool.Call(context.Background(), []byte(`{}`)); err == nil {
		t.Fatal("ServerTool ran without a server")
	}
}
