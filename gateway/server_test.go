package gateway_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/projectors/mcpresult"
	"github.com/toolcanon/toolcanon/registry"
)

var searchSchema = `{"type":"object","additionalProperties":false,"required":["query"],
	"properties":{"query":{"type":"string","minLength":1,"maxLength":64}}}`

func testDefs() []registry.Definition {
	return []registry.Definition{
		{Name: "kb.search", Version: "1.0.0", Description: "Search the knowledge base.", InputSchema: []byte(searchSchema),
			Effect: registry.EffectRead, Risk: registry.RiskLow, Timeout: 5 * time.Second},
		{Name: "kb.write", Version: "1.0.0", Description: "Change the knowledge base.", InputSchema: []byte(searchSchema),
			Effect: registry.EffectWrite, Risk: registry.RiskHigh, Timeout: 5 * time.Second},
	}
}

var allowAll = registry.PolicyFunc(func(context.Context, string, registry.Principal, string) (registry.Decision, error) {
	return registry.Decision{Verdict: registry.VerdictAllow, Fence: registry.Fence{ProjectVersion: "1", RoleBindingVersion: "1"}}, nil
})

// world is an in-process gateway over a memstore, with a fake tool that
// counts its calls and answers an MCP result.
type world struct {
	store *memstore.Store
	b     *boundary.Boundary
	calls atomic.Int64
	cs    *mcp.ClientSession
	ctx   context.Context
}

func fixedRun(id string) gateway.RunResolver {
	return gateway.RunResolverFunc(func(_ context.Context, c *gateway.Call) (boundary.RunContext, error) {
		run := id
		if run == "" {
			run = c.RunID
		}
		if run == "" {
			return boundary.RunContext{}, gateway.ErrNoRun
		}
		return boundary.RunContext{ID: run, Project: "support", Active: true, TTL: time.Minute,
			Principal: registry.Principal{Subject: "agent-1", ExpiresAt: time.Now().Add(time.Hour)}}, nil
	})
}

func newWorld(t testing.TB, opts gateway.Options) *world {
	t.Helper()
	w := &world{store: memstore.New(), ctx: context.Background()}
	reg, err := registry.New(testDefs()...)
	if err != nil {
		t.Fatal(err)
	}
	tool := boundary.ToolFunc(func(_ context.Context, input []byte) ([]byte, error) {
		w.calls.Add(1)
		return json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": "found doc-7 for " + string(input)}}})
	})
	proj, err := mcpresult.New(mcpresult.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	w.b, err = boundary.New(w.store, reg, allowAll,
		boundary.Bind("search", "kb.search", "1.0.0", tool, proj),
		boundary.Bind("write", "kb.write", "1.0.0", tool, proj))
	if err != nil {
		t.Fatal(err)
	}
	if opts.Runs == nil {
		opts.Runs = fixedRun("")
	}
	if opts.Progress != nil {
		opts.Progress.Store = w.store
	}
	srv, err := gateway.NewServer(w.b, opts)
	if err != nil {
		t.Fatal(err)
	}
	w.cs = connect(t, srv)
	return w
}

// connect joins a go-sdk client to srv over in-memory transports.
func connect(t testing.TB, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	return connectWith(t, srv, nil, nil)
}

// connectWith is connect with the client's options and session options.
func connectWith(t testing.TB, srv *mcp.Server, copts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, copts).Connect(context.Background(), ct, sopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	return cs
}

func (w *world) record(t *testing.T, run, id string) canonical.Record {
	t.Helper()
	rec, err := w.store.Get(w.ctx, run, id)
	if err != nil {
		t.Fatalf("record %s/%s: %v", run, id, err)
	}
	return rec
}

func TestServerListsTheBoundReadTools(t *testing.T) {
	w := newWorld(t, gateway.Options{Progress: &gateway.ProgressTools{}})
	res, err := w.cs.ListTools(w.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		def, bound := w.b.Definition(tl.Name)
		if !bound {
			continue
		}
		got, _ := json.Marshal(tl.InputSchema)
		if want := def.InputSchema(); !jsonEqual(got, want) || tl.Description != def.Description() {
			t.Errorf("%s is listed as %q %s, want %q %s", tl.Name, tl.Description, got, def.Description(), want)
		}
		if tl.Annotations == nil || !tl.Annotations.ReadOnlyHint || def.Effect() != registry.EffectRead {
			t.Errorf("%s: readOnlyHint %+v for effect %s", tl.Name, tl.Annotations, def.Effect())
		}
	}
	slices.Sort(names)
	// write is bound but not listed: the boundary refuses every call of it.
	if want := []string{"progress_facts", "progress_report", "search"}; !slices.Equal(names, want) {
		t.Fatalf("listed %v, want %v", names, want)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && mustJSON(x) == mustJSON(y)
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestCallIsRecordedUnderTheFrameworkID(t *testing.T) {
	w := newWorld(t, gateway.Options{})
	o := mustCall(w.ctx, t, w.cs, "search", "toolu_01A", "run-1", map[string]any{"query": "refunds"})
	if !o.ready || o.obj["tool_call_id"] != "toolu_01A" {
		t.Fatalf("agent got %s", o.text)
	}
	rec := w.record(t, "run-1", "toolu_01A")
	if rec.Status != canonical.StatusReady || !strings.Contains(string(rec.Raw), "found doc-7") || !strings.Contains(string(rec.Request), `"input":{"query":"refunds"}`) {
		t.Fatalf("record %s raw %s request %s", rec.Status, rec.Raw, rec.Request)
	}
	// The raw response stays with the record; the agent reads the projection.
	if strings.Contains(o.text, `"type":"text"`) {
		t.Fatalf("the agent sees raw data: %s", o.text)
	}
}

func TestMissingOrUnusableToolCallIDIsRefused(t *testing.T) {
	w := newWorld(t, gateway.Options{Identity: gateway.Identity{ToolCallIDKeys: []string{"redpanda.com/llm-tool-call-id"}}})
	args := map[string]any{"query": "refunds"}
	for name, meta := range map[string]mcp.Meta{
		"missing":     {gateway.MetaRunID: "run-1"},
		"empty":       {gateway.MetaRunID: "run-1", gateway.MetaToolCallID: ""},
		"number":      {gateway.MetaRunID: "run-1", gateway.MetaToolCallID: 7},
		"unsafe":      {gateway.MetaRunID: "run-1", gateway.MetaToolCallID: "call 1:{x}"},
		"conflicting": {gateway.MetaRunID: "run-1", gateway.MetaToolCallID: "call_a", "redpanda.com/llm-tool-call-id": "call_b"},
		"progress":    {gateway.MetaRunID: "run-1", "progressToken": "tok-1"},
	} {
		res, err := w.cs.CallTool(w.ctx, &mcp.CallToolParams{Name: "search", Arguments: args, Meta: meta})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if o := decode(t, res); o.code != "INVALID_TOOL_CALL_ID" || o.obj["tool_call_id"] != "" {
			t.Errorf("%s: agent got %s", name, o.text)
		}
	}
	if n := w.calls.Load(); n != 0 {
		t.Fatalf("the tool ran %d times", n)
	}
	if _, err := w.store.Usage(w.ctx, "run-1"); canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Fatalf("a refused call wrote run state: %v", err)
	}
	// The alias alone, or agreeing with the project's key, is an identity.
	for i, meta := range []mcp.Meta{
		{gateway.MetaRunID: "run-1", "redpanda.com/llm-tool-call-id": "call_alias"},
		{gateway.MetaRunID: "run-1", "redpanda.com/llm-tool-call-id": "call_both", gateway.MetaToolCallID: "call_both"},
	} {
		res, err := w.cs.CallTool(w.ctx, &mcp.CallToolParams{Name: "search", Arguments: args, Meta: meta})
		if err != nil || res.IsError {
			t.Fatalf("alias %d: %v %v", i, err, res)
		}
	}
	w.record(t, "run-1", "call_alias")
	w.record(t, "run-1", "call_both")
}

func TestNoRunAndNoPrincipalAreJSONRPCErrors(t *testing.T) {
	runs := gateway.RunResolverFunc(func(_ context.Context, c *gateway.Call) (boundary.RunContext, error) {
		switch c.RunID {
		case "":
			return boundary.RunContext{}, gateway.ErrNoRun
		case "run-anon":
			return boundary.RunContext{}, gateway.ErrUnauthenticated
		case "run-broken":
			return boundary.RunContext{}, errors.New("directory down at 10.0.0.9")
		}
		return fixedRun("").ResolveRun(context.Background(), c)
	})
	w := newWorld(t, gateway.Options{Runs: runs})
	for run, code := range map[string]int64{"": gateway.CodeNoRun, "run-anon": gateway.CodeUnauthenticated, "run-broken": jsonrpc.CodeInternalError} {
		_, err := callTool(w.ctx, t, w.cs, "search", "call_1", run, map[string]any{"query": "x"})
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != code || strings.Contains(rpc.Message, "10.0.0.9") {
			t.Errorf("run %q: err = %v, want JSON-RPC code %d", run, err, code)
		}
	}
	if n := w.calls.Load(); n != 0 {
		t.Fatalf("the tool ran %d times", n)
	}
}

func TestBoundaryRefusalsAreToolResults(t *testing.T) {
	guarded := errors.New("pinned digest moved")
	w := newWorld(t, gateway.Options{
		Runs: fixedRun("run-1"),
		Guard: func(_ context.Context, tool string) error {
			if tool == "write" {
				return nil
			}
			if strings.HasPrefix(tool, "search") {
				return nil
			}
			return guarded
		},
	})
	cases := []struct {
		tool, id, run string
		args          any
		code          string
	}{
		{"nope", "call_u", "", map[string]any{"query": "x"}, "UNKNOWN_TOOL"},
		{"write", "call_w", "", map[string]any{"query": "x"}, "NOT_READ_ONLY"},
		{"search", "call_i", "", map[string]any{"query": strings.Repeat("x", 65)}, "INVALID_INPUT"},
		{"search", "call_e", "", map[string]any{"query": "x", "extra": 1}, "INVALID_INPUT"},
		{"search", "call_m", "run-2", map[string]any{"query": "x"}, "RUN_MISMATCH"},
	}
	for _, c := range cases {
		o := mustCall(w.ctx, t, w.cs, c.tool, c.id, c.run, c.args)
		if o.code != c.code || o.obj["tool_call_id"] != c.id {
			t.Errorf("%s: agent got %s, want %s", c.tool, o.text, c.code)
		}
		if _, err := w.store.Get(w.ctx, "run-1", c.id); canonical.CodeOf(err) != canonical.CodeNotFound {
			t.Errorf("%s: a refused call has a record: %v", c.tool, err)
		}
	}
	if n := w.calls.Load(); n != 0 {
		t.Fatalf("the tool ran %d times", n)
	}
}

func TestGuardRefusesBeforeAnythingIsRecorded(t *testing.T) {
	var asked atomic.Int64
	w := newWorld(t, gateway.Options{Guard: func(_ context.Context, tool string) error {
		asked.Add(1)
		return canonical.Errorf(canonical.CodeToolDefinitionChanged, "upstream changed %s", tool)
	}})
	o := mustCall(w.ctx, t, w.cs, "search", "call_g", "run-1", map[string]any{"query": "x"})
	if o.code != "TOOL_DEFINITION_CHANGED" || o.obj["hint"] != boundary.Hint(canonical.CodeToolDefinitionChanged) {
		t.Fatalf("agent got %s", o.text)
	}
	if asked.Load() != 1 || w.calls.Load() != 0 {
		t.Fatalf("guard asked %d times, tool ran %d times", asked.Load(), w.calls.Load())
	}
	if _, err := w.store.Usage(w.ctx, "run-1"); canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Fatalf("a guarded call wrote run state: %v", err)
	}
}

func TestObserverSeesEveryCallWithItsMeta(t *testing.T) {
	var seen []string
	w := newWorld(t, gateway.Options{Observe: func(_ context.Context, c *gateway.Call, res boundary.Result, _ time.Duration) {
		tp, _ := c.Meta["traceparent"].(string)
		seen = append(seen, c.Tool+" "+res.ToolCallID()+" "+string(res.Status())+" "+tp)
	}})
	meta := mcp.Meta{gateway.MetaToolCallID: "call_o", gateway.MetaRunID: "run-1", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	if _, err := w.cs.CallTool(w.ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "x"}, Meta: meta}); err != nil {
		t.Fatal(err)
	}
	want := "search call_o READY 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if len(seen) != 1 || seen[0] != want {
		t.Fatalf("observed %q, want %q", seen, want)
	}
}

func TestDuplicateIsRefusedAndRunsOnce(t *testing.T) {
	w := newWorld(t, gateway.Options{})
	args := map[string]any{"query": "x"}
	if o := mustCall(w.ctx, t, w.cs, "search", "call_d", "run-1", args); !o.ready {
		t.Fatal(o.text)
	}
	if o := mustCall(w.ctx, t, w.cs, "search", "call_d", "run-1", args); o.code != "DUPLICATE_TOOL_CALL" {
		t.Fatalf("duplicate: %s", o.text)
	}
	if n := w.calls.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
}

func TestProgressToolsCheckClaimsAgainstTheRecords(t *testing.T) {
	w := newWorld(t, gateway.Options{Progress: &gateway.ProgressTools{}})
	mustCall(w.ctx, t, w.cs, "search", "call_p1", "run-p", map[string]any{"query": "refunds"})
	mustCall(w.ctx, t, w.cs, "write", "call_p2", "run-p", map[string]any{"query": "x"})

	facts := mustProgress(t, w, "progress_facts", "run-p", map[string]any{})
	if !strings.Contains(facts, `"tool_call_id":"call_p1"`) || strings.Contains(facts, "call_p2") {
		t.Fatalf("facts: %s", facts)
	}
	bad := map[string]any{"claims": []any{map[string]any{"text": "Refunds need approval.", "kind": "positive", "cites": []string{"call_p2"}}}}
	out := mustProgress(t, w, "progress_report", "run-p", bad)
	if !strings.Contains(out, `"valid":false`) || !strings.Contains(out, `"code":"INVALID_PROGRESS_PROTOCOL"`) || !strings.Contains(out, `"outcome":"PARTIAL"`) {
		t.Fatalf("report citing an unrecorded call: %s", out)
	}
	good := map[string]any{"claims": []any{map[string]any{"text": "Refunds need approval.", "kind": "positive", "cites": []string{"call_p1"}}}}
	out = mustProgress(t, w, "progress_report", "run-p", good)
	if !strings.Contains(out, `"valid":true`) || !strings.Contains(out, `"outcome":"VERIFIED"`) || !strings.Contains(out, `"violations":1`) {
		t.Fatalf("repaired report: %s", out)
	}
}

func mustProgress(t *testing.T, w *world, tool, run string, args any) string {
	t.Helper()
	res, err := w.cs.CallTool(w.ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: mcp.Meta{gateway.MetaRunID: run}})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", tool, err, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func TestStaticRuns(t *testing.T) {
	s := &gateway.StaticRuns{Project: "support", Subject: "agent-1", RunHeader: "X-Run", DefaultRun: "run-default",
		Limits: canonical.Limits{MaxCallsPerRun: 5}, TTL: time.Hour, ToolTTL: map[string]time.Duration{"logs": time.Minute}}
	ctx := context.Background()
	cases := []struct {
		call            gateway.Call
		run, subject    string
		ttl             time.Duration
		wantErr         error
		withoutIdentity bool
	}{
		{call: gateway.Call{Tool: "search"}, run: "run-default.607d235436d7deab", subject: "agent-1", ttl: time.Hour},
		{call: gateway.Call{Tool: "logs", RunID: "run-meta"}, run: "run-meta.607d235436d7deab", subject: "agent-1", ttl: time.Minute},
		{call: gateway.Call{Tool: "search", RunID: "run-meta", Header: http.Header{"X-Run": {"run-header"}}}, run: "run-header.607d235436d7deab", subject: "agent-1", ttl: time.Hour},
		// Each principal's names are its own: the default run too.
		{call: gateway.Call{Tool: "search", Token: &auth.TokenInfo{UserID: "alice"}}, run: "run-default.df3aa5a753719705", subject: "alice", ttl: time.Hour},
	}
	for i, c := range cases {
		rc, err := s.ResolveRun(ctx, &c.call)
		if err != nil || rc.ID != c.run || rc.Principal.Subject != c.subject || rc.TTL != c.ttl || !rc.Active ||
			rc.Project != "support" || rc.Limits.MaxCallsPerRun != 5 || !rc.Principal.ExpiresAt.After(time.Now()) {
			t.Errorf("case %d: %+v, %v", i, rc, err)
		}
	}
	for i, c := range cases {
		if got := gateway.PrincipalRun(c.subject, cmp.Or(c.call.Header.Get("X-Run"), c.call.RunID, s.DefaultRun)); got != c.run {
			t.Errorf("case %d: PrincipalRun = %q", i, got)
		}
	}
	// A name the boundary would refuse stays one it refuses.
	for _, name := range []string{"bad:run", ".dot", strings.Repeat("r", gateway.MaxRunName+1)} {
		if canonical.ValidateRunID(gateway.PrincipalRun("agent-1", name)) == nil {
			t.Errorf("PrincipalRun(%q) is a valid run id", name)
		}
	}
	if err := canonical.ValidateRunID(gateway.PrincipalRun("agent-1", strings.Repeat("r", gateway.MaxRunName))); err != nil {
		t.Errorf("the longest name: %v", err)
	}
	noDefault := *s
	noDefault.DefaultRun = ""
	if _, err := noDefault.ResolveRun(ctx, &gateway.Call{Tool: "search"}); !errors.Is(err, gateway.ErrNoRun) {
		t.Errorf("no run: %v", err)
	}
	anon := *s
	anon.Subject = ""
	if _, err := anon.ResolveRun(ctx, &gateway.Call{Tool: "search"}); !errors.Is(err, gateway.ErrUnauthenticated) {
		t.Errorf("no principal: %v", err)
	}
}

func TestOptionsAreChecked(t *testing.T) {
	reg, _ := registry.New(testDefs()...)
	b, _ := boundary.New(memstore.New(), reg, allowAll)
	if _, err := gateway.NewServer(b, gateway.Options{}); err == nil {
		t.Error("a server without a RunResolver was built")
	}
	if _, err := gateway.NewServer(nil, gateway.Options{Runs: fixedRun("")}); err == nil {
		t.Error("a server without a boundary was built")
	}
	if _, err := gateway.Middleware(b, gateway.Options{Runs: fixedRun(""), Progress: &gateway.ProgressTools{}}); err == nil {
		t.Error("progress tools without a store were accepted")
	}
	// A store of records only cannot count progress reports.
	_, err := gateway.Middleware(b, gateway.Options{Runs: fixedRun(""), Progress: &gateway.ProgressTools{Store: recordsOnly{memstore.New()}}})
	if canonical.CodeOf(err) != canonical.CodeInvalidArgument || !strings.Contains(err.Error(), "ProgressObserver") {
		t.Errorf("progress tools over a store without ObserveProgress: %v", err)
	}
}

// recordsOnly is a canonical.Store and nothing more.
type recordsOnly struct{ canonical.Store }

// The operator log carries the cause of a failure, redacted: an upstream's
// error text may quote secrets.
func TestLogRedactsTheCause(t *testing.T) {
	var buf syncBuffer
	w := newWorld(t, gateway.Options{Logger: slog.New(slog.NewTextHandler(&buf, nil)),
		Guard: func(context.Context, string) error {
			return errors.New("upstream said: password=hunter2 token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB")
		}})
	if o := mustCall(w.ctx, t, w.cs, "search", "call_l", "run-1", map[string]any{"query": "x"}); o.code != "TOOL_DEFINITION_CHANGED" {
		t.Fatal(o.text)
	}
	log := buf.String()
	if !strings.Contains(log, "TOOL_DEFINITION_CHANGED") || !strings.Contains(log, "password=<SECRET>") ||
		strings.Contains(log, "hunter2") || strings.Contains(log, "ghp_0123") {
		t.Fatalf("log: %s", log)
	}
}
