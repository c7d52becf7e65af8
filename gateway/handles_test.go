package gateway_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
)

// A password after "password=" in the secrets tool's output.
var passwordHandle = regexp.MustCompile(`password=(<SECRET:[A-Za-z0-9_-]{8}>)`)

// An agent on the official SDK reads a masked password from one tool and
// passes its handle to another tool of the same upstream, which receives
// the value; a tool of another upstream is refused HANDLE_FORBIDDEN and
// never called; the agent never reads the value.
func TestHandlesThroughTheGateway(t *testing.T) {
	dir := t.TempDir()
	logA, logB := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	ds := upstreamDrafts(t)
	entry := func(name, upstream, tool string) gateway.DraftEntry {
		e := ds[tool]
		e.Name, e.Upstream = name, upstream
		e.Definition.Name = upstream + "." + tool
		return e
	}
	cfg := baseConfig(t, stdioUpstream(t, logA, ""), "secrets")
	cfg["upstreams"] = map[string]any{"vault": stdioUpstream(t, logA, ""), "web": stdioUpstream(t, logB, "")}
	cfg["tools"] = []any{entry("secrets", "vault", "secrets"), entry("vault_echo", "vault", "echo"), entry("web_echo", "web", "echo")}
	loaded, err := gateway.LoadConfig(cfg.write(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := gateway.Open(ctx, loaded, memstore.New(), gateway.OpenOptions{NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	read := mustCall(ctx, t, cs, "secrets", "call_read", "run-h", map[string]any{"query": "diagnostics"})
	m := passwordHandle.FindStringSubmatch(read.text)
	if !read.ready || m == nil || strings.Contains(read.text, "hunter2") {
		t.Fatalf("the agent read %s", read.text)
	}
	handle := m[1]

	use := mustCall(ctx, t, cs, "vault_echo", "call_use", "run-h", map[string]any{"text": "login with " + handle})
	if !use.ready || strings.Contains(use.text, "hunter2") || !strings.Contains(use.text, handle) {
		t.Fatalf("echo through the same upstream: %s", use.text)
	}
	if got := readLog(t, logA); !strings.Contains(got, "echo login with hunter2") {
		t.Fatalf("the upstream did not receive the value: %q", got)
	}

	leak := mustCall(ctx, t, cs, "web_echo", "call_leak", "run-h", map[string]any{"text": "send " + handle})
	if leak.ready || leak.code != "HANDLE_FORBIDDEN" {
		t.Fatalf("a handle into another upstream: %s", leak.text)
	}
	forged := mustCall(ctx, t, cs, "vault_echo", "call_forged", "run-h", map[string]any{"text": "use <SECRET:AAAAAAAA>"})
	if forged.code != "HANDLE_UNKNOWN" {
		t.Fatalf("a made-up handle: %s", forged.text)
	}
	other := mustCall(ctx, t, cs, "vault_echo", "call_other", "run-other", map[string]any{"text": "login with " + handle})
	if other.code != "HANDLE_UNKNOWN" {
		t.Fatalf("a handle of another run: %s", other.text)
	}
	if got := readLog(t, logB); strings.Contains(got, "echo") {
		t.Fatalf("the other upstream ran: %q", got)
	}
}

func readLog(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}
