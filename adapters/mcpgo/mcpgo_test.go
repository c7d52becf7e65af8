package mcpgocanon_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/tidwall/gjson"

	mcpgocanon "github.com/toolcanon/toolcanon/adapters/mcpgo"
	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/agenttest"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// fromResult projects an MCP tool result as the agenttest tools answer:
// the hit ids of its text, under the call's id; it never passes the key.
var fromResult = canonical.ProjectorFunc(func(_ context.Context, call canonical.Call, raw []byte) (canonical.Projection, error) {
	text := gjson.GetBytes(raw, "content.0.text").String()
	ids := []string{}
	for _, h := range gjson.Get(text, "hits.#.id").Array() {
		ids = append(ids, h.String())
	}
	out, err := json.Marshal(map[string]any{"tool_call_id": call.ToolCallID, "hits": ids, "text": gjson.Get(text, "text").String()})
	return canonical.Projection{Evidence: canonical.EvidenceFound, Result: out}, err
})

var errNoRun = errors.New("no run for this caller")

// serve is an mcp-go server over streamable HTTP whose three tools are the
// kit's, each answering the tool's JSON as text (a failure as an isError
// result), behind the middleware; calls whose _meta says "deny" have no run.
func serve(t *testing.T, kit *agenttest.Kit, b *boundary.Boundary, run boundary.RunContext, opts ...mcpgocanon.Option) *client.Client {
	t.Helper()
	runs := func(_ context.Context, req mcp.CallToolRequest) (boundary.RunContext, error) {
		if req.Params.Meta != nil && req.Params.Meta.AdditionalFields["deny"] != nil {
			return boundary.RunContext{}, errNoRun
		}
		return run, nil
	}
	s := server.NewMCPServer("tools", "1.0.0", server.WithToolHandlerMiddleware(mcpgocanon.Middleware(b, runs, opts...)))
	for _, name := range []string{agenttest.Search, agenttest.Broken, agenttest.Big} {
		exec := kit.Execute(name)
		s.AddTool(mcp.NewTool(name, mcp.WithString("query", mcp.Required())), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Query string `json:"query"`
			}
			if err := req.BindArguments(&in); err != nil || in.Query != req.GetString("query", "") {
				return mcp.NewToolResultError("the arguments did not arrive whole"), nil
			}
			raw, err := exec(ctx, req.Params.RawArguments)
			if err != nil {
				return mcp.NewToolResultError(string(raw)), nil
			}
			return mcp.NewToolResultText(string(raw)), nil
		})
	}
	hs := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(hs.Close)
	c, err := client.NewStreamableHttpClient(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "agent", Version: "1.0.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

// callTool calls tool with args under id ("" sends none) and returns the
// result's text and isError.
func callTool(t *testing.T, c *client.Client, tool, id string, args map[string]any, meta ...string) (string, bool, error) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	fields := map[string]any{}
	if id != "" {
		fields[mcpgocanon.MetaToolCallID] = id
	}
	for _, k := range meta {
		fields[k] = true
	}
	if len(fields) > 0 {
		req.Params.Meta = mcp.NewMetaFromMap(fields)
	}
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		return "", false, err
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s %s: %d contents, want 1", tool, id, len(res.Content))
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		t.Fatalf("%s %s: content %T, want text", tool, id, res.Content[0])
	}
	t.Logf("client calls %s(%v) as %q -> isError=%v %s", tool, args, id, res.IsError, text.Text)
	return text.Text, res.IsError, nil
}

func TestToolCallsThroughTheBoundary(t *testing.T) {
	for _, st := range agenttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			kit := agenttest.New(t)
			store := st.Open(t)
			b := kit.Boundary(t, store, boundary.BindNext(agenttest.Search, "kb.search", "1.0.0", fromResult),
				boundary.BindNext(agenttest.Broken, "kb.broken", "1.0.0", fromResult),
				boundary.BindNext(agenttest.Big, "kb.big", "1.0.0", fromResult))
			run := agenttest.Run(5)
			c := serve(t, kit, b, run)
			q := func(s string) map[string]any { return map[string]any{"query": s} }

			want := func(text string, isError bool, wantText string, wantError bool) {
				t.Helper()
				if text != wantText || isError != wantError {
					t.Errorf("got isError=%v %s\nwant isError=%v %s", isError, text, wantError, wantText)
				}
			}
			text, isErr, err := callTool(t, c, agenttest.Search, "call_a", q("ttl"))
			if err != nil {
				t.Fatal(err)
			}
			want(text, isErr, agenttest.Hits("call_a", "ttl"), false)
			text, isErr, _ = callTool(t, c, agenttest.Search, "call_a", q("ttl"))
			want(text, isErr, agenttest.ErrorJSON("call_a", canonical.CodeDuplicateToolCall), true)
			text, isErr, _ = callTool(t, c, agenttest.Broken, "call_b", q("x"))
			want(text, isErr, agenttest.ErrorJSON("call_b", canonical.CodeExecutionFailed), true)
			text, isErr, _ = callTool(t, c, agenttest.Big, "call_c", q("x"))
			want(text, isErr, agenttest.ErrorJSON("call_c", canonical.CodeResultTooLarge), true)
			text, isErr, _ = callTool(t, c, agenttest.Search, "call_d", map[string]any{"q": "x"})
			want(text, isErr, agenttest.ErrorJSON("call_d", canonical.CodeInvalidInput), true)
			minted, isErr, _ := callTool(t, c, agenttest.Search, "", q("more"))
			id := gjson.Get(minted, "tool_call_id").String()
			want(minted, isErr, agenttest.Hits(id, "more"), false)
			text, isErr, _ = callTool(t, c, agenttest.Search, "call_e", q("last"))
			want(text, isErr, agenttest.Hits("call_e", "last"), false)
			text, isErr, _ = callTool(t, c, agenttest.Search, "call_f", q("over"))
			want(text, isErr, agenttest.ErrorJSON("call_f", canonical.CodeBudgetExhausted), true)
			if _, _, err := callTool(t, c, agenttest.Search, "call_g", q("x"), "deny"); err == nil || !strings.Contains(err.Error(), errNoRun.Error()) {
				t.Errorf("a call without a run: %v, want a JSON-RPC error naming it", err)
			}

			// Each tool ran once per call that reached it; the invalid
			// input, the duplicate and the refused ones never ran.
			if n, m, k := kit.Calls(agenttest.Search), kit.Calls(agenttest.Broken), kit.Calls(agenttest.Big); n != 3 || m != 1 || k != 1 {
				t.Errorf("search ran %d times, broken %d, big %d; want 3, 1, 1", n, m, k)
			}
			for _, c := range []struct {
				id     string
				status canonical.Status
				code   canonical.Code
				source boundary.IDSource
			}{
				{"call_a", canonical.StatusReady, "", boundary.IDFromModel},
				{"call_b", canonical.StatusError, canonical.CodeExecutionFailed, boundary.IDFromModel},
				{"call_c", canonical.StatusError, canonical.CodeResultTooLarge, boundary.IDFromModel},
				{id, canonical.StatusReady, "", boundary.IDFromFramework},
			} {
				rec := agenttest.Record(t, store, run, c.id)
				if rec.Status != c.status || rec.Error != c.code || gjson.GetBytes(rec.Request, "tool_call_id_source").String() != string(c.source) {
					t.Errorf("%s: %s %s %s, want %s %s %s", c.id, rec.Status, rec.Error, gjson.GetBytes(rec.Request, "tool_call_id_source"), c.status, c.code, c.source)
				}
				// The raw response is the tool's whole MCP result, its key
				// kept for operators; the client never saw the key.
				if !strings.Contains(string(rec.Raw), agenttest.Secret) || !gjson.ValidBytes(rec.Raw) || !gjson.GetBytes(rec.Raw, "content").IsArray() {
					t.Errorf("%s: raw %s is not the tool's MCP result", c.id, rec.Raw)
				}
			}
			if _, err := store.Get(context.Background(), run.ID, "call_g"); canonical.CodeOf(err) != canonical.CodeNotFound {
				t.Errorf("a call without a run left a record: %v", err)
			}
		})
	}
}

// Parallel calls of one id run once: the others are refused while it runs
// or after it, never executed.
func TestParallelRepeatsRunOnce(t *testing.T) {
	kit := agenttest.New(t)
	b := kit.Boundary(t, agenttest.Redis(t), boundary.BindNext(agenttest.Search, "kb.search", "1.0.0", fromResult))
	c := serve(t, kit, b, agenttest.Run(100))
	kit.Together(2)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ready := 0
	for range 8 {
		wg.Go(func() {
			text, isErr, err := callTool(t, c, agenttest.Search, "call_same", map[string]any{"query": "q"})
			if err != nil {
				t.Error(err)
				return
			}
			if !isErr {
				mu.Lock()
				ready++
				mu.Unlock()
			} else if code := gjson.Get(text, "error_code").String(); code != string(canonical.CodeDuplicateToolCall) && code != string(canonical.CodeToolCallInProgress) {
				t.Errorf("a repeat got %s", text)
			}
		})
	}
	wg.Wait()
	if ready != 1 || kit.Calls(agenttest.Search) != 1 {
		t.Errorf("%d READY answers, %d executions; want 1 and 1", ready, kit.Calls(agenttest.Search))
	}
}

// With boundary.WithReplay, a repeat with the same arguments gets the
// first outcome; one with other arguments is refused; neither runs.
func TestReplay(t *testing.T) {
	kit := agenttest.New(t)
	b := kit.Boundary(t, agenttest.Redis(t), boundary.BindNext(agenttest.Search, "kb.search", "1.0.0", fromResult), boundary.WithReplay())
	c := serve(t, kit, b, agenttest.Run(10))
	first, _, _ := callTool(t, c, agenttest.Search, "call_r", map[string]any{"query": "q"})
	again, isErr, _ := callTool(t, c, agenttest.Search, "call_r", map[string]any{"query": "q"})
	other, otherErr, _ := callTool(t, c, agenttest.Search, "call_r", map[string]any{"query": "other"})
	if again != first || isErr || !otherErr || gjson.Get(other, "error_code").String() != string(canonical.CodeDuplicateToolCall) {
		t.Errorf("replay %q (isError %v), other arguments %q; first %q", again, isErr, other, first)
	}
	if n := kit.Calls(agenttest.Search); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
	// The server's tool that the boundary does not bind never runs.
	text, isErr, _ := callTool(t, c, agenttest.Broken, "call_u", map[string]any{"query": "q"})
	if !isErr || gjson.Get(text, "error_code").String() != string(canonical.CodeUnknownTool) || kit.Calls(agenttest.Broken) != 0 {
		t.Errorf("an unbound tool: %s, ran %d times", text, kit.Calls(agenttest.Broken))
	}
}

// WithIDKeys reads the id under a client's own key when MetaToolCallID is
// absent, and MetaToolCallID first when both are sent.
func TestIDKeys(t *testing.T) {
	kit := agenttest.New(t)
	store := agenttest.Redis(t)
	b := kit.Boundary(t, store, boundary.BindNext(agenttest.Search, "kb.search", "1.0.0", fromResult))
	run := agenttest.Run(10)
	c := serve(t, kit, b, run, mcpgocanon.WithIDKeys("x-call-id"))
	for _, m := range []struct {
		meta map[string]any
		want string
	}{
		{map[string]any{"x-call-id": "call_own"}, "call_own"},
		{map[string]any{"x-call-id": "call_other", mcpgocanon.MetaToolCallID: "call_ours"}, "call_ours"},
	} {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = agenttest.Search, map[string]any{"query": "q"}
		req.Params.Meta = mcp.NewMetaFromMap(m.meta)
		res, err := c.CallTool(context.Background(), req)
		if err != nil || res.IsError {
			t.Fatalf("%v: %v %+v", m.meta, err, res)
		}
		if got := gjson.Get(res.Content[0].(mcp.TextContent).Text, "tool_call_id").String(); got != m.want {
			t.Errorf("%v: the call ran as %q, want %q", m.meta, got, m.want)
		}
		agenttest.Record(t, store, run, m.want)
	}
}
