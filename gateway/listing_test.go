package gateway_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/gateway"
)

// What an agent lists is what it may call: the pinned definition with the
// upstream's title and annotations (readOnlyHint true for a read tool),
// and none of the tools its principal is denied, the write tools, or a
// tool whose upstream definition no longer matches its pin.
func TestToolsListShowsWhatThePrincipalMayCall(t *testing.T) {
	dir := t.TempDir()
	cfg := baseConfig(t, stdioUpstream(t, "", ""), "search", "secrets", "write", "echo", "empty")
	tools := cfg["tools"].([]any)
	for i, e := range tools {
		d := e.(gateway.DraftEntry)
		if d.UpstreamTool == "empty" {
			d.Pin = "sha256:" + strings.Repeat("0", 64) // the upstream's definition differs
			tools[i] = d
		}
	}
	// agent-1 is granted everything but secrets, which another principal may call.
	cfg["policy"] = map[string]any{"grants": []any{
		map[string]any{"principals": []string{"agent-1"}, "projects": []string{"support"},
			"allow": []string{"tool.call:up.search", "tool.call:up.write", "tool.call:up.echo", "tool.call:up.empty"}},
		map[string]any{"principals": []string{"someone-else"}, "projects": []string{"support"}, "allow": []string{"tool.call:*"}},
	}}
	cs, stderr := stdioGateway(t, cfg.write(t, dir))
	ctx := context.Background()
	lr, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	var names []string
	for _, tl := range lr.Tools {
		byName[tl.Name], names = tl, append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{"echo", "search"}; !slices.Equal(names, want) {
		t.Fatalf("listed %v, want %v\n%s", names, want, stderr)
	}
	s := byName["search"]
	if s.Title != "Knowledge base search" || s.Annotations == nil || s.Annotations.Title != "Search" ||
		!s.Annotations.ReadOnlyHint || !s.Annotations.IdempotentHint || s.Annotations.OpenWorldHint == nil || *s.Annotations.OpenWorldHint {
		t.Errorf("search is listed as %+v with annotations %+v", s, s.Annotations)
	}
	if e := byName["echo"]; e.Annotations == nil || !e.Annotations.ReadOnlyHint {
		t.Errorf("echo's annotations %+v", e.Annotations)
	}
	// What is not listed is still answered with its stable code.
	for tool, code := range map[string]string{"secrets": "UNAUTHORIZED", "write": "NOT_READ_ONLY", "empty": "TOOL_DEFINITION_CHANGED"} {
		if got := mustCall(ctx, t, cs, tool, "call_"+tool, "run-listing", map[string]any{"query": "x", "text": "x"}); got.code != code {
			t.Errorf("%s: %+v, want %s", tool, got, code)
		}
	}
}
