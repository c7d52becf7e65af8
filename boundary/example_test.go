package boundary_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/observe"
	"github.com/toolcanon/toolcanon/registry"
)

var exampleSearch = registry.Definition{
	Name:        "kb.search",
	Version:     "1.0.0",
	Description: "Search the knowledge base.",
	InputSchema: []byte(`{"type":"object","additionalProperties":false,
		"properties":{"query":{"type":"string","minLength":1,"maxLength":256}},"required":["query"]}`),
	Effect:  registry.EffectRead,
	Risk:    registry.RiskLow,
	Timeout: 10 * time.Second,
}

var examplePolicy = registry.PolicyFunc(func(_ context.Context, _ string, p registry.Principal, _ string) (registry.Decision, error) {
	if p.Subject == "user:mallory" {
		return registry.Decision{Verdict: registry.VerdictDeny}, nil
	}
	return registry.Decision{Verdict: registry.VerdictAllow, Fence: registry.Fence{ProjectVersion: "1", RoleBindingVersion: "1"}}, nil
})

// The search backend: its raw response holds more than the agent may see.
var exampleTool = boundary.ToolFunc(func(_ context.Context, input []byte) ([]byte, error) {
	return []byte(`{"hits":[{"id":"doc-7","text":"PEXPIRE sets a TTL in milliseconds."}],"api_key":"sk-live-123"}`), nil
})

// The projector keeps what the agent needs and nothing else.
var exampleProjector = canonical.ProjectorFunc(func(_ context.Context, call canonical.Call, raw []byte) (canonical.Projection, error) {
	return canonical.Projection{
		Evidence: canonical.EvidenceFound,
		Result:   []byte(`{"tool_call_id":"` + call.ToolCallID + `","evidence":[{"document_id":"doc-7"}]}`),
	}, nil
})

func exampleRun() boundary.RunContext {
	return boundary.RunContext{
		ID:        "run-42",
		Project:   "proj-1",
		Principal: registry.Principal{Subject: "user:alice", ExpiresAt: time.Now().Add(time.Hour)},
		Deadline:  time.Now().Add(time.Minute),
		Active:    true,
		Limits:    canonical.Limits{MaxCallsPerRun: 20, MaxCallsPerTool: 10},
		TTL:       time.Hour,
	}
}

func Example() {
	store := memstore.New()
	reg, _ := registry.New(exampleSearch)
	b, err := boundary.New(store, reg, examplePolicy,
		boundary.Bind("search", "kb.search", "1.0.0", exampleTool, exampleProjector))
	if err != nil {
		panic(err)
	}
	run := exampleRun()

	res := b.Invoke(context.Background(), run, boundary.Envelope{
		ToolCallID: "call_8f2k", RunID: run.ID, Tool: "search", Input: []byte(`{"query":"redis ttl"}`),
	})
	fmt.Println(string(res.AgentJSON()))

	// The harness keeps the whole call in one record.
	rec, _ := store.Get(context.Background(), run.ID, "call_8f2k")
	fmt.Println(rec.Status, rec.Evidence, len(rec.Raw) > 0)
	// Output:
	// {"tool_call_id":"call_8f2k","evidence":[{"document_id":"doc-7"}]}
	// READY EVIDENCE_FOUND true
}

func ExampleBoundary_Invoke_refused() {
	reg, _ := registry.New(exampleSearch)
	b, _ := boundary.New(memstore.New(), reg, examplePolicy,
		boundary.Bind("search", "kb.search", "1.0.0", exampleTool, exampleProjector))
	run := exampleRun()

	// A duplicate id is refused, and the tool does not run again.
	env := boundary.Envelope{ToolCallID: "call_1", RunID: run.ID, Tool: "search", Input: []byte(`{"query":"ttl"}`)}
	b.Invoke(context.Background(), run, env)
	res := b.Invoke(context.Background(), run, env)
	fmt.Println(string(res.AgentJSON()))
	fmt.Println(res.Executed())

	// A caller the policy denies gets a safe error; nothing is recorded.
	run.Principal.Subject = "user:mallory"
	env.ToolCallID = "call_2"
	fmt.Println(string(b.Invoke(context.Background(), run, env).AgentJSON()))
	// Output:
	// {"tool_call_id":"call_1","status":"ERROR","error_code":"DUPLICATE_TOOL_CALL","hint":"This tool_call_id was already used; use a new tool_call_id."}
	// false
	// {"tool_call_id":"call_2","status":"ERROR","error_code":"UNAUTHORIZED","hint":"You are not allowed to call this tool; do not retry it."}
}

func ExampleWithReplay() {
	reg, _ := registry.New(exampleSearch)
	calls := 0
	tool := boundary.ToolFunc(func(ctx context.Context, input []byte) ([]byte, error) {
		calls++
		return exampleTool(ctx, input)
	})
	b, _ := boundary.New(memstore.New(), reg, examplePolicy,
		boundary.Bind("search", "kb.search", "1.0.0", tool, exampleProjector),
		boundary.WithReplay())
	run := exampleRun()

	env := boundary.Envelope{ToolCallID: "call_9", RunID: run.ID, Tool: "search", Input: []byte(`{"query":"ttl"}`)}
	b.Invoke(context.Background(), run, env)
	// The framework retried the turn: same id, same request.
	env.Input = []byte(`{ "query": "ttl" }`)
	res := b.Invoke(context.Background(), run, env)
	fmt.Println(string(res.AgentJSON()), res.Replayed(), calls)

	// Same id, another request.
	env.Input = []byte(`{"query":"eviction"}`)
	fmt.Println(b.Invoke(context.Background(), run, env).Code())
	// Output:
	// {"tool_call_id":"call_9","evidence":[{"document_id":"doc-7"}]} true 1
	// DUPLICATE_TOOL_CALL
}

func ExampleHint() {
	fmt.Println(boundary.Hint(canonical.CodeBudgetExhausted))
	// Output: The tool call budget is used up; stop calling tools and answer with what you have.
}

func ExampleWithObserver() {
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" || len(groups) > 0 {
				return slog.Attr{} // times vary; keep the example's output stable
			}
			return a
		},
	})
	reg, _ := registry.New(exampleSearch)
	b, err := boundary.New(memstore.New(), reg, examplePolicy,
		boundary.Bind("search", "kb.search", "1.0.0", exampleTool, exampleProjector),
		boundary.WithObserver(observe.NewLogger(slog.New(h))))
	if err != nil {
		panic(err)
	}
	run := exampleRun()
	b.Invoke(context.Background(), run, boundary.Envelope{
		ToolCallID: "call_8f2k", RunID: run.ID, Tool: "search", Input: []byte(`{"query":"redis ttl"}`),
	})
	// Output:
	// level=INFO msg="tool call" run_id=run-42 tool_call_id=call_8f2k tool=search definition=kb.search@1.0.0 status=READY evidence=EVIDENCE_FOUND executed=true replayed=false
}

// A projector that overruns the projection timeout is cut off: the call is
// ERROR/PROJECTION_FAILED and its raw response stays in the record for the
// harness. A record TTL too short for the call is refused before anything
// is written.
func ExampleWithProjectionTimeout() {
	store := memstore.New()
	reg, _ := registry.New(exampleSearch)
	stuck := canonical.ProjectorFunc(func(ctx context.Context, _ canonical.Call, _ []byte) (canonical.Projection, error) {
		<-ctx.Done() // a projection that never finishes in time
		return canonical.Projection{}, ctx.Err()
	})
	b, _ := boundary.New(store, reg, examplePolicy,
		boundary.Bind("search", "kb.search", "1.0.0", exampleTool, stuck),
		boundary.WithProjectionTimeout(20*time.Millisecond))
	run := exampleRun()

	res := b.Invoke(context.Background(), run, boundary.Envelope{
		ToolCallID: "call_slow", RunID: run.ID, Tool: "search", Input: []byte(`{"query":"redis ttl"}`),
	})
	rec, _ := store.Get(context.Background(), run.ID, "call_slow")
	fmt.Println(res.Code(), rec.Status, rec.Error, len(rec.Raw) > 0)

	// 10 s of tool, 20 ms of projection and the store's retries do not fit
	// in a 5 s record.
	run.TTL = 5 * time.Second
	res = b.Invoke(context.Background(), run, boundary.Envelope{
		ToolCallID: "call_ttl", RunID: run.ID, Tool: "search", Input: []byte(`{"query":"redis ttl"}`),
	})
	fmt.Println(res.Code(), res.Executed())
	// Output:
	// PROJECTION_FAILED ERROR PROJECTION_FAILED true
	// INVALID_ARGUMENT false
}
