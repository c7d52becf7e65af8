package mcpgocanon_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"

	mcpgocanon "github.com/toolcanon/toolcanon/adapters/mcpgo"
	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/internal/agenttest"
)

// Whatever a client sends as arguments and as the id in _meta, the
// middleware answers one text content holding JSON that names the call's
// id, and the handler runs once for a READY answer, on input the schema
// accepts, and never for a refusal (a repeated id among them).
func FuzzMiddleware(f *testing.F) {
	for _, seed := range [][2]string{
		{`{"query":"ttl"}`, `"call_a"`}, {`{"query":""}`, `"call_a"`}, {`{"q":1}`, `""`},
		{`[1,2]`, `7`}, {`null`, `null`}, {`{"query":"x","query":"y"}`, `"call_b"`},
		{`{"query":"\ud800"}`, `{"a":1}`}, {`{}`, `"../../x"`}, {`{"query":"ok"}`, `"` + string(make([]byte, 300)) + `"`},
	} {
		f.Add(seed[0], seed[1])
	}
	kit := agenttest.New(f)
	b := kit.Boundary(f, memstore.New(), boundary.BindNext(agenttest.Search, "kb.search", "1.0.0", fromResult))
	run := agenttest.Run(1 << 30)
	runs := func(context.Context, mcp.CallToolRequest) (boundary.RunContext, error) { return run, nil }
	ran := 0
	handler := mcpgocanon.Middleware(b, runs)(func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Query string `json:"query"`
		}
		if err := req.BindArguments(&in); err != nil || in.Query == "" {
			panic("the handler ran on input the schema refuses: " + string(req.Params.RawArguments))
		}
		ran++
		return mcp.NewToolResultText(`{"hits":[{"id":"doc-1"}]}`), nil
	})
	f.Fuzz(func(t *testing.T, args, id string) {
		req := mcp.CallToolRequest{}
		req.Params.Name = agenttest.Search
		req.Params.RawArguments = json.RawMessage(args)
		var v any
		if json.Unmarshal([]byte(id), &v) == nil {
			req.Params.Meta = mcp.NewMetaFromMap(map[string]any{mcpgocanon.MetaToolCallID: v})
		}
		before := ran
		res, err := handler(context.Background(), req)
		if err != nil {
			t.Fatalf("a boundary outcome became a JSON-RPC error: %v", err)
		}
		if len(res.Content) != 1 {
			t.Fatalf("%d contents", len(res.Content))
		}
		text, ok := res.Content[0].(mcp.TextContent)
		if !ok || !gjson.Valid(text.Text) {
			t.Fatalf("content %#v is not JSON text", res.Content[0])
		}
		if got := gjson.Get(text.Text, "tool_call_id"); !got.Exists() && res.IsError && gjson.Get(text.Text, "error_code").String() != string(canonical.CodeInvalidToolCallID) {
			t.Fatalf("an error without the call's id: %s", text.Text)
		}
		// The handler never fails, so a READY answer ran it once and an
		// ERROR one (a refusal: invalid input or id, a repeat) never did.
		want := before + 1
		if res.IsError {
			want = before
		}
		if ran != want {
			t.Fatalf("isError=%v after %d executions of the handler, want %d: %s", res.IsError, ran-before, want-before, text.Text)
		}
	})
}
