package mcpgocanon_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	mcpgocanon "github.com/toolcanon/toolcanon/adapters/mcpgo"
	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/registry"
)

func Example() {
	reg, _ := registry.New(registry.Definition{
		Name: "kb.search", Version: "1.0.0", Description: "Search the knowledge base.",
		InputSchema: []byte(`{"type":"object","additionalProperties":false,
			"properties":{"query":{"type":"string","maxLength":64}},"required":["query"]}`),
		Effect: registry.EffectRead, Risk: registry.RiskLow, Timeout: 10 * time.Second,
	})
	allow := registry.PolicyFunc(func(context.Context, string, registry.Principal, string) (registry.Decision, error) {
		return registry.Decision{Verdict: registry.VerdictAllow, Fence: registry.Fence{ProjectVersion: "1", RoleBindingVersion: "1"}}, nil
	})
	// The agent sees only the hit ids; the record keeps the whole result.
	hitsOnly := canonical.ProjectorFunc(func(context.Context, canonical.Call, []byte) (canonical.Projection, error) {
		return canonical.Projection{Evidence: canonical.EvidenceFound, Result: []byte(`{"hits":["doc-7"]}`)}, nil
	})
	// The server's own tool is the execution: BindNext binds no function.
	b, _ := boundary.New(memstore.New(), reg, allow, boundary.BindNext("search", "kb.search", "1.0.0", hitsOnly))
	runs := func(ctx context.Context, req mcp.CallToolRequest) (boundary.RunContext, error) {
		// A host resolves the caller's run from its session or headers.
		return boundary.RunContext{ID: "run-1", Project: "proj-1", Active: true, TTL: time.Hour,
			Principal: registry.Principal{Subject: "user:alice", ExpiresAt: time.Now().Add(time.Hour)}}, nil
	}

	s := server.NewMCPServer("kb", "1.0.0", server.WithToolHandlerMiddleware(mcpgocanon.Middleware(b, runs)))
	s.AddTool(mcp.NewTool("search", mcp.WithString("query", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(`{"hits":[{"id":"doc-7","api_key":"sk-live-123"}]}`), nil
		})

	ctx := context.Background()
	c, _ := client.NewInProcessClient(s)
	_ = c.Start(ctx)
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	_, _ = c.Initialize(ctx, init)
	for _, args := range []map[string]any{{"query": "ttl"}, {"query": "ttl"}} {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "search", args
		req.Params.Meta = mcp.NewMetaFromMap(map[string]any{mcpgocanon.MetaToolCallID: "call_1"})
		res, err := c.CallTool(ctx, req)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(res.IsError, res.Content[0].(mcp.TextContent).Text)
	}
	// Output:
	// false {"hits":["doc-7"]}
	// true {"tool_call_id":"call_1","status":"ERROR","error_code":"DUPLICATE_TOOL_CALL","hint":"This tool_call_id was already used; use a new tool_call_id."}
}
