package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	redistest.StopAll()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built holds the binaries the process tests run: the toolcanon command and
// the test upstream, built once per test binary.
var built struct {
	once                sync.Once
	dir                 string
	toolcanon, upstream string
	err                 error
}

func binaries(tb testing.TB) (toolcanon, upstream string) {
	tb.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "toolcanon-gateway-test-")
		if built.err != nil {
			return
		}
		for _, b := range []struct {
			out *string
			pkg string
		}{
			{&built.toolcanon, "github.com/toolcanon/toolcanon/cmd/toolcanon"},
			{&built.upstream, "github.com/toolcanon/toolcanon/gateway/internal/testupstream"},
		} {
			*b.out = filepath.Join(built.dir, filepath.Base(b.pkg))
			out, err := exec.Command("go", "build", "-o", *b.out, b.pkg).CombinedOutput()
			if err != nil {
				built.err = &buildError{b.pkg, string(out), err}
				return
			}
		}
	})
	if built.err != nil {
		tb.Fatal(built.err)
	}
	return built.toolcanon, built.upstream
}

type buildError struct {
	pkg, out string
	err      error
}

func (e *buildError) Error() string { return "go build " + e.pkg + ": " + e.err.Error() + "\n" + e.out }

// drafts are the test upstream's tools as `gateway pin` drafts them, read
// once from the real server: their pins and definitions.
var drafts struct {
	once    sync.Once
	entries map[string]gateway.DraftEntry   // tools, by upstream name
	surface map[string]gateway.SurfaceEntry // prompts by name, resources by URI, templates by URI template
	err     error
}

func upstreamDrafts(tb testing.TB) map[string]gateway.DraftEntry {
	tb.Helper()
	loadDrafts(tb)
	return drafts.entries
}

// surfaceDrafts are the test upstream's prompts, resources and templates
// as `gateway pin` drafts them, by upstream name.
func surfaceDrafts(tb testing.TB) map[string]gateway.SurfaceEntry {
	tb.Helper()
	loadDrafts(tb)
	return drafts.surface
}

func loadDrafts(tb testing.TB) {
	tb.Helper()
	_, up := binaries(tb)
	drafts.once.Do(func() {
		cfg := &gateway.Config{Upstreams: map[string]gateway.UpstreamConfig{"up": {Command: []string{up}}}}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ds, err := gateway.Drafts(ctx, cfg, gateway.OpenOptions{})
		if err != nil {
			drafts.err = err
			return
		}
		drafts.entries, drafts.surface = map[string]gateway.DraftEntry{}, map[string]gateway.SurfaceEntry{}
		for _, d := range ds {
			if d.Surface != nil {
				drafts.surface[d.Tool] = *d.Surface
				continue
			}
			drafts.entries[d.Tool] = d.Entry
		}
	})
	if drafts.err != nil {
		tb.Fatal(drafts.err)
	}
}

// agentRun is the store's id of the run that the configured principal of
// baseConfig names run (gateway.PrincipalRun).
func agentRun(run string) string { return gateway.PrincipalRun("agent-1", run) }

// configDoc is a gateway configuration under construction.
type configDoc map[string]any

// baseConfig exposes the test upstream's tools as the pin command drafts
// them (each under its upstream name), with the given upstream spec.
func baseConfig(tb testing.TB, upstream map[string]any, tools ...string) configDoc {
	tb.Helper()
	ds := upstreamDrafts(tb)
	var list []any
	for _, name := range tools {
		e, ok := ds[name]
		if !ok {
			tb.Fatalf("the test upstream has no tool %q", name)
		}
		e.Upstream = "up"
		list = append(list, e)
	}
	return configDoc{
		"upstreams": map[string]any{"up": upstream},
		"identity":  map[string]any{"project": "support", "principal": "agent-1"},
		"tools":     list,
		"policy":    map[string]any{"grants": []any{map[string]any{"principals": []string{"*"}, "projects": []string{"support"}, "allow": []string{"tool.call:*"}}}},
	}
}

// write writes the configuration into dir and returns its path.
func (c configDoc) write(tb testing.TB, dir string) string {
	tb.Helper()
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	p := filepath.Join(dir, "gateway.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// outcome is what an agent got from one call.
type outcome struct {
	ready bool
	code  string // error_code of an ERROR result
	text  string // the text the agent reads
	obj   map[string]any
}

// callTool calls tool with the given identity (empty strings are left out
// of _meta) and decodes what the agent receives.
func callTool(ctx context.Context, tb testing.TB, cs *mcp.ClientSession, tool, id, run string, args any) (outcome, error) {
	meta := mcp.Meta{}
	if id != "" {
		meta[gateway.MetaToolCallID] = id
	}
	if run != "" {
		meta[gateway.MetaRunID] = run
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: meta})
	if err != nil {
		return outcome{}, err
	}
	return decode(tb, res), nil
}

func decode(tb testing.TB, res *mcp.CallToolResult) outcome {
	tb.Helper()
	if len(res.Content) != 1 {
		tb.Fatalf("%d content blocks, want 1", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		tb.Fatalf("content %T, want text", res.Content[0])
	}
	o := outcome{text: tc.Text, ready: !res.IsError}
	if err := json.Unmarshal([]byte(tc.Text), &o.obj); err != nil {
		tb.Fatalf("the agent's text is not a JSON object: %q", tc.Text)
	}
	if res.IsError {
		o.code, _ = o.obj["error_code"].(string)
		if o.obj["status"] != "ERROR" || o.code == "" || o.obj["hint"] == "" {
			tb.Fatalf("an error result without status, code and hint: %s", tc.Text)
		}
	}
	return o
}

// mustCall is callTool that fails the test on a protocol error.
func mustCall(ctx context.Context, tb testing.TB, cs *mcp.ClientSession, tool, id, run string, args any) outcome {
	tb.Helper()
	o, err := callTool(ctx, tb, cs, tool, id, run, args)
	if err != nil {
		tb.Fatalf("call %s %s: %v", tool, id, err)
	}
	return o
}

// upstreamLog counts the lines of an upstream execution log that equal
// "tool arg".
func countExecutions(tb testing.TB, path, tool, arg string) int {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if line == tool+" "+arg {
			n++
		}
	}
	return n
}

// plantedSecrets are values the test upstream plants in its outputs.
var plantedSecrets = []string{
	"S3cretPassw0rd", "alice.smith+ops@example.com", "10.251.73.220", "AKIAIOSFODNN7EXAMPLE",
	"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "abc123.def456-EXAMPLE", "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
	"hunter2", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJl", "4111 1111 1111 1111", "k-12345EXAMPLE",
	"db01.internal",
}

func mustMarshal(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
