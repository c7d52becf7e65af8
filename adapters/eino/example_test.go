package einocanon_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	einocanon "github.com/toolcanon/toolcanon/adapters/eino"
	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/registry"
)

func Example() {
	ctx := context.Background()
	// The framework's own tool.
	type query struct {
		Query string `json:"query"`
	}
	search, _ := utils.InferTool("search", "Search the knowledge base.", func(_ context.Context, q query) (string, error) {
		return `{"hits":["doc-7"],"api_key":"sk-live-123"}`, nil
	})

	// Its definition, policy and projector; its execution stays eino's.
	reg, _ := registry.New(registry.Definition{
		Name: "kb.search", Version: "1.0.0", Description: "Search the knowledge base.",
		InputSchema: []byte(`{"type":"object","additionalProperties":false,
			"properties":{"query":{"type":"string","maxLength":64}},"required":["query"]}`),
		Effect: registry.EffectRead, Risk: registry.RiskLow, Timeout: 10 * time.Second,
	})
	allow := registry.PolicyFunc(func(context.Context, string, registry.Principal, string) (registry.Decision, error) {
		return registry.Decision{Verdict: registry.VerdictAllow, Fence: registry.Fence{ProjectVersion: "1", RoleBindingVersion: "1"}}, nil
	})
	hitsOnly := canonical.ProjectorFunc(func(context.Context, canonical.Call, []byte) (canonical.Projection, error) {
		return canonical.Projection{Evidence: canonical.EvidenceFound, Result: []byte(`{"hits":["doc-7"]}`)}, nil
	})
	b, _ := boundary.New(memstore.New(), reg, allow, boundary.BindNext("search", "kb.search", "1.0.0", hitsOnly))

	node, _ := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
		Tools:               []tool.BaseTool{search},
		ToolCallMiddlewares: []compose.ToolMiddleware{einocanon.Middleware(b)},
	})
	run := boundary.RunContext{
		ID: "run-1", Project: "proj-1", Active: true, TTL: time.Hour,
		Principal: registry.Principal{Subject: "user:alice", ExpiresAt: time.Now().Add(time.Hour)},
	}
	// The model's messages; in a graph or a react agent the ToolsNode gets them.
	for _, calls := range [][]schema.ToolCall{
		{{ID: "call_1", Function: schema.FunctionCall{Name: "search", Arguments: `{"query":"ttl"}`}}},
		{{ID: "call_1", Function: schema.FunctionCall{Name: "search", Arguments: `{"query":"ttl"}`}},
			{ID: "call_2", Function: schema.FunctionCall{Name: "search", Arguments: `{"q":"ttl"}`}}},
	} {
		out, err := node.Invoke(einocanon.WithRun(ctx, run), schema.AssistantMessage("", calls))
		for _, m := range out {
			fmt.Println(m.ToolCallID, m.Content, err)
		}
	}
	// Output:
	// call_1 {"hits":["doc-7"]} <nil>
	// call_1 {"tool_call_id":"call_1","status":"ERROR","error_code":"DUPLICATE_TOOL_CALL","hint":"This tool_call_id was already used; use a new tool_call_id."} <nil>
	// call_2 {"tool_call_id":"call_2","status":"ERROR","error_code":"INVALID_INPUT","hint":"The arguments do not match the tool's input schema; fix them and call again with a new tool_call_id."} <nil>
}
