package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/projectors/mcpresult"
	"github.com/toolcanon/toolcanon/registry"
)

var exampleDef = registry.Definition{
	Name: "orders.lookup", Version: "1.0.0", Description: "Look an order up by id.",
	Effect: registry.EffectRead, Risk: registry.RiskLow, Timeout: 10 * time.Second,
	InputSchema: []byte(`{"type":"object","additionalProperties":false,"required":["id"],
		"properties":{"id":{"type":"string","minLength":1,"maxLength":32}}}`),
}

var examplePolicy, _ = gateway.NewStaticPolicy([]gateway.Grant{
	{Principals: []string{"*"}, Projects: []string{"support"}, Allow: []string{"tool.call:*"}},
}, "example")

var exampleRuns = &gateway.StaticRuns{Project: "support", Subject: "agent-1", TTL: time.Hour}

// exampleCall is what an MCP agent sends: the ids go in _meta.
func exampleCall(cs *mcp.ClientSession, id string) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name:      "lookup",
		Arguments: map[string]any{"id": "o-81723"},
		Meta:      mcp.Meta{gateway.MetaToolCallID: id, gateway.MetaRunID: "run-42"},
	})
	if err != nil {
		panic(err)
	}
	// A masked value is a handle of the run, <KIND:id>, whose id differs from
	// run to run: printed here with the id elided.
	fmt.Println(res.IsError, handleIDs.ReplaceAllString(res.Content[0].(*mcp.TextContent).Text, "<$1:…>"))
}

var handleIDs = regexp.MustCompile(`<([A-Z_]+):[A-Za-z0-9_-]{8}>`)

func exampleConnect(srv *mcp.Server) *mcp.ClientSession {
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		panic(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		panic(err)
	}
	return cs
}

func ExampleNewServer() {
	reg, _ := registry.New(exampleDef)
	proj, _ := mcpresult.New(mcpresult.DefaultConfig())
	lookup := boundary.ToolFunc(func(_ context.Context, input []byte) ([]byte, error) {
		// An MCP result: the raw response the record keeps.
		return json.Marshal(map[string]any{"content": []any{},
			"structuredContent": map[string]any{"id": "o-81723", "status": "refunded", "db_password": "hunter2"}})
	})
	b, _ := boundary.New(memstore.New(), reg, examplePolicy, boundary.Bind("lookup", "orders.lookup", "1.0.0", lookup, proj))
	srv, err := gateway.NewServer(b, gateway.Options{Runs: exampleRuns})
	if err != nil {
		panic(err)
	}
	cs := exampleConnect(srv)
	defer cs.Close()

	exampleCall(cs, "call_8f2k")
	exampleCall(cs, "call_8f2k") // the same id again
	exampleCall(cs, "")          // no id: refused, never made up
	// Output:
	// false {"tool_call_id":"call_8f2k","content":{"db_password":"<SECRET:…>","id":"o-81723","status":"refunded"},"truncated":false}
	// true {"tool_call_id":"call_8f2k","status":"ERROR","error_code":"DUPLICATE_TOOL_CALL","hint":"This tool_call_id was already used; use a new tool_call_id."}
	// true {"tool_call_id":"","status":"ERROR","error_code":"INVALID_TOOL_CALL_ID","hint":"Use a tool_call_id of 1-128 letters, digits, '_', '.' or '-', starting with a letter or digit."}
}

func ExampleMiddleware() {
	// A server the host already has, with its own handler.
	srv := mcp.NewServer(&mcp.Implementation{Name: "orders", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "lookup", Description: "Look an order up.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// The handler receives exactly the canonical input that was recorded.
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "order " + string(req.Params.Arguments) + " refunded"}}}, nil
		})

	reg, _ := registry.New(exampleDef)
	proj, _ := mcpresult.New(mcpresult.DefaultConfig())
	b, _ := boundary.New(memstore.New(), reg, examplePolicy,
		boundary.Bind("lookup", "orders.lookup", "1.0.0", gateway.ServerTool, proj))
	mw, err := gateway.Middleware(b, gateway.Options{Runs: exampleRuns})
	if err != nil {
		panic(err)
	}
	srv.AddReceivingMiddleware(mw)
	cs := exampleConnect(srv)
	defer cs.Close()

	exampleCall(cs, "call_1")
	// Output:
	// false {"tool_call_id":"call_1","content":"order {\"id\":\"o-81723\"} refunded","truncated":false}
}

func ExampleDigest() {
	pin, _ := gateway.Digest(&mcp.Tool{
		Name:        "search",
		Description: "Search the knowledge base.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}},
	})
	fmt.Println(pin)
	// Output:
	// sha256:98a0428eb677dd026c5ff9b8fa922809b63201fa2f1920d735eabe1965acda28
}

// Each principal names runs in a namespace of its own: the run "run-42"
// of alice and that of bob are two runs of the store, so that neither can
// claim the other's by naming it first.
func ExamplePrincipalRun() {
	fmt.Println(gateway.PrincipalRun("alice", "run-42"))
	fmt.Println(gateway.PrincipalRun("bob", "run-42"))
	// Output:
	// run-42.df3aa5a753719705
	// run-42.dbec002d9602dfa0
}
