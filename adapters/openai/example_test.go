package openaicanon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/openai/openai-go/v3"
	openaicanon "github.com/toolcanon/toolcanon/adapters/openai"
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
	hitsOnly := canonical.ProjectorFunc(func(_ context.Context, _ canonical.Call, raw []byte) (canonical.Projection, error) {
		return canonical.Projection{Evidence: canonical.EvidenceFound, Result: []byte(`{"hits":["doc-7"]}`)}, nil
	})
	b, _ := boundary.New(memstore.New(), reg, allow, boundary.Bind("search", "kb.search", "1.0.0", search, hitsOnly))
	run := boundary.RunContext{
		ID: "run-1", Project: "proj-1", Active: true, TTL: time.Hour,
		Principal: registry.Principal{Subject: "user:alice", ExpiresAt: time.Now().Add(time.Hour)},
	}

	// The model's turn, as client.Chat.Completions.New returns it.
	var comp openai.ChatCompletion
	_ = json.Unmarshal([]byte(`{"choices":[{"message":{"role":"assistant","tool_calls":[
		{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"query\":\"ttl\"}"}},
		{"id":"call_2","type":"function","function":{"name":"delete_all","arguments":"{}"}}]}}]}`), &comp)
	msg := comp.Choices[0].Message

	r := openaicanon.New(b, openaicanon.WithParallel(4))
	tools, _ := r.ChatToolMessages(context.Background(), run, msg.ToolCalls)
	// The next request's messages: ..., msg.ToParam(), tools...
	for _, m := range tools {
		fmt.Println(m.OfTool.ToolCallID, m.OfTool.Content.OfString.Value)
	}
	// Output:
	// call_1 {"hits":["doc-7"]}
	// call_2 {"tool_call_id":"call_2","status":"ERROR","error_code":"UNKNOWN_TOOL","hint":"No such tool is available; use one of the listed tools."}
}
