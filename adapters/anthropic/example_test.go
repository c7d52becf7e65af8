package anthropiccanon_test

import (
	"context"
	"fmt"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropiccanon "github.com/toolcanon/toolcanon/adapters/anthropic"
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
	search := boundary.ToolFunc(func(context.Context, []byte) ([]byte, error) {
		return []byte(`{"hits":["doc-7"],"api_key":"sk-live-123"}`), nil
	})
	hitsOnly := canonical.ProjectorFunc(func(context.Context, canonical.Call, []byte) (canonical.Projection, error) {
		return canonical.Projection{Evidence: canonical.EvidenceFound, Result: []byte(`{"hits":["doc-7"]}`)}, nil
	})
	b, _ := boundary.New(memstore.New(), reg, allow, boundary.Bind("search", "kb.search", "1.0.0", search, hitsOnly))
	run := boundary.RunContext{
		ID: "run-1", Project: "proj-1", Active: true, TTL: time.Hour,
		Principal: registry.Principal{Subject: "user:alice", ExpiresAt: time.Now().Add(time.Hour)},
	}

	// The model's message, as client.Messages.New returns it.
	var msg anthropic.Message
	_ = msg.UnmarshalJSON([]byte(`{"role":"assistant","content":[
		{"type":"tool_use","id":"toolu_1","name":"search","input":{"query":"ttl"}},
		{"type":"tool_use","id":"toolu_2","name":"search","input":{"q":"ttl"}}]}`))

	blocks, _ := anthropiccanon.New(b).ToolResults(context.Background(), run, msg.Content)
	// The next request's messages: ..., msg.ToParam(), anthropic.NewUserMessage(blocks...)
	for _, bl := range blocks {
		tr := bl.OfToolResult
		fmt.Println(tr.ToolUseID, tr.IsError.Value, tr.Content[0].OfText.Text)
	}
	// Output:
	// toolu_1 false {"hits":["doc-7"]}
	// toolu_2 true {"tool_call_id":"toolu_2","status":"ERROR","error_code":"INVALID_INPUT","hint":"The arguments do not match the tool's input schema; fix them and call again with a new tool_call_id."}
}
