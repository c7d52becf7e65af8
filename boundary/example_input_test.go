package boundary_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/registry"
)

// A tool that needs the agent's input asks for it, and the call stays open
// until the agent sends the same call again with the input and the token.
func ExampleInputRequired() {
	store := memstore.New()
	reg, _ := registry.New(exampleSearch)
	confirm := boundary.ToolFunc(func(ctx context.Context, _ []byte) ([]byte, error) {
		r, ok := boundary.ContinuationFrom(ctx)
		if !ok {
			return nil, &boundary.InputRequired{
				Requests: json.RawMessage(`{"scope":{"message":"Search the archive too?"}}`),
				State:    []byte("page-1"), // kept by the record, never shown to the agent
			}
		}
		return []byte(fmt.Sprintf(`{"state":%q,"answer":%s}`, r.State, r.Input)), nil
	})
	b, _ := boundary.New(store, reg, examplePolicy, boundary.Bind("search", "kb.search", "1.0.0", confirm, exampleProjector))
	run := exampleRun()
	env := boundary.Envelope{ToolCallID: "call_9", RunID: run.ID, Tool: "search", Input: []byte(`{"query":"redis ttl"}`)}

	res := b.Invoke(context.Background(), run, env)
	_, token, _ := res.InputRequired()
	fmt.Println(res.Status(), string(res.AgentJSON()))

	env.Continue = &boundary.Continuation{Token: token, Input: json.RawMessage(`{"archive":true}`)}
	res = b.Invoke(context.Background(), run, env)
	fmt.Println(res.Status(), string(res.AgentJSON()))
	rec, _ := store.Get(context.Background(), run.ID, "call_9")
	fmt.Println(rec.Status, string(rec.Raw))

	// The continuation is spent: the id is a finished call's now.
	fmt.Println(b.Invoke(context.Background(), run, env).Code() == canonical.CodeDuplicateToolCall)
	// Output:
	// PROJECTING {"tool_call_id":"call_9","status":"INPUT_REQUIRED","input_requests":{"scope":{"message":"Search the archive too?"}}}
	// READY {"tool_call_id":"call_9","evidence":[{"document_id":"doc-7"}]}
	// READY {"state":"page-1","answer":{"archive":true}}
	// true
}
