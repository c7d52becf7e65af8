package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
)

// headerTransport adds fixed headers to every request of an SDK client.
type headerTransport struct {
	header http.Header
	next   http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header[k] = v
	}
	return h.next.RoundTrip(r)
}

// ownedWorld is a gateway over streamable HTTP with one bearer token per
// principal, the progress tools and a store the test can look into.
type ownedWorld struct {
	url   string
	store *memstore.Store
	dir   string
}

func tokenDigest(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// newOwnedWorld serves cfg's gateway; edit may change the configuration.
func newOwnedWorld(t *testing.T, edit func(cfg configDoc, dir string)) *ownedWorld {
	t.Helper()
	dir := t.TempDir()
	cfg := baseConfig(t, stdioUpstream(t, filepath.Join(dir, "upstream.log"), ""), "echo")
	var toks []any
	for _, p := range []string{"alice", "bob", "carol"} {
		toks = append(toks, map[string]any{"sha256": tokenDigest("tok-" + p), "subject": p})
	}
	cfg["http"] = map[string]any{"bearer_tokens": toks}
	cfg["identity"] = map[string]any{"project": "support", "run_header": "X-Toolcanon-Run"}
	cfg["progress"] = map[string]any{"threshold": 3}
	// carol may call the upstream tool but not the progress tools.
	cfg["policy"] = map[string]any{"grants": []any{
		map[string]any{"principals": []string{"alice", "bob"}, "projects": []string{"support"}, "allow": []string{"tool.call:*"}},
		map[string]any{"principals": []string{"carol"}, "projects": []string{"support"},
			"allow": []string{"tool.call:" + upstreamDrafts(t)["echo"].Definition.Name}},
	}}
	if edit != nil {
		edit(cfg, dir)
	}
	loaded, err := gateway.LoadConfig(cfg.write(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := &ownedWorld{store: memstore.New(), dir: dir}
	g, err := gateway.Open(ctx, loaded, w.store, gateway.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	srv := httptest.NewServer(g.HTTPHandler(false))
	t.Cleanup(srv.Close)
	w.url = srv.URL
	return w
}

// client connects the official SDK client with the given headers.
func (w *ownedWorld) client(t *testing.T, header http.Header) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: headerTransport{header: header, next: http.DefaultTransport}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: w.url, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func bearer(p string) http.Header { return http.Header{"Authorization": {"Bearer tok-" + p}} }

// progressCall calls a progress tool naming run in _meta (when not "").
func progressCall(t *testing.T, cs *mcp.ClientSession, tool, run string, args any) outcome {
	t.Helper()
	meta := mcp.Meta{}
	if run != "" {
		meta[gateway.MetaRunID] = run
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return decode(t, res)
}

func TestRunsBelongToTheirPrincipals(t *testing.T) {
	w := newOwnedWorld(t, nil)
	ctx := context.Background()
	alice, bob := w.client(t, bearer("alice")), w.client(t, bearer("bob"))
	echo := map[string]any{"text": "hello"}

	if o := mustCall(ctx, t, alice, "echo", "call_a1", "run-a", echo); !o.ready {
		t.Fatalf("alice's call: %s", o.text)
	}
	facts := progressCall(t, alice, "progress_facts", "run-a", map[string]any{})
	if !facts.ready || !strings.Contains(facts.text, `"call_a1"`) {
		t.Fatalf("alice's facts: %s", facts.text)
	}
	before, err := w.store.Usage(ctx, "run-a")
	if err != nil {
		t.Fatal(err)
	}

	// Bob names alice's run in _meta, and through the run header.
	bobHeader := bearer("bob")
	bobHeader.Set("X-Toolcanon-Run", "run-a")
	bobByHeader := w.client(t, bobHeader)
	for _, id := range []string{"call_a1", "call_a2"} { // a used id, and alice's next one
		if o := mustCall(ctx, t, bob, "echo", id, "run-a", echo); o.code != string(canonical.CodeRunForbidden) {
			t.Fatalf("bob's tools/call %s in alice's run: %s", id, o.text)
		}
		if o := mustCall(ctx, t, bobByHeader, "echo", id, "", echo); o.code != string(canonical.CodeRunForbidden) {
			t.Fatalf("bob's tools/call %s by header: %s", id, o.text)
		}
	}
	if o := progressCall(t, bob, "progress_facts", "run-a", map[string]any{}); o.code != string(canonical.CodeRunForbidden) ||
		strings.Contains(o.text, "call_a1") {
		t.Fatalf("bob's progress_facts on alice's run: %s", o.text)
	}
	bad := map[string]any{"claims": []any{map[string]any{"text": "x", "kind": "positive", "cites": []string{"nope"}}}}
	for range 3 { // the threshold: had they counted, alice's run would be violated
		if o := progressCall(t, bob, "progress_report", "run-a", bad); o.code != string(canonical.CodeRunForbidden) {
			t.Fatalf("bob's progress_report on alice's run: %s", o.text)
		}
		if o := progressCall(t, bobByHeader, "progress_report", "", bad); o.code != string(canonical.CodeRunForbidden) {
			t.Fatalf("bob's progress_report by header: %s", o.text)
		}
	}
	after, err := w.store.Usage(ctx, "run-a")
	if err != nil {
		t.Fatal(err)
	}
	before.TTL, after.TTL = 0, 0
	if after.Calls != before.Calls || after.Protocol != before.Protocol || after.Completed != before.Completed {
		t.Fatalf("bob changed alice's run: %+v, was %+v", after, before)
	}

	// Alice's next id is still hers, and her protocol state is clean.
	if o := mustCall(ctx, t, alice, "echo", "call_a2", "run-a", echo); !o.ready {
		t.Fatalf("alice's call_a2 after bob's attempts: %s", o.text)
	}
	good := map[string]any{"claims": []any{map[string]any{"text": "hello was echoed", "kind": "positive", "cites": []string{"call_a1"}}}}
	o := progressCall(t, alice, "progress_report", "run-a", good)
	if !o.ready || !strings.Contains(o.text, `"violations":0`) || !strings.Contains(o.text, `"reports":1`) {
		t.Fatalf("alice's report after bob's attempts: %s", o.text)
	}
}

func TestProgressToolsAskThePolicy(t *testing.T) {
	w := newOwnedWorld(t, nil)
	carol := w.client(t, bearer("carol"))
	if o := mustCall(context.Background(), t, carol, "echo", "call_c1", "run-c", map[string]any{"text": "hi"}); !o.ready {
		t.Fatalf("carol's echo: %s", o.text)
	}
	for _, tool := range []string{"progress_facts", "progress_report"} {
		args := map[string]any{}
		if tool == "progress_report" {
			args = map[string]any{"claims": []any{map[string]any{"text": "x", "kind": "positive", "cites": []string{"call_c1"}}}}
		}
		if o := progressCall(t, carol, tool, "run-c", args); o.code != string(canonical.CodeUnauthorized) {
			t.Fatalf("%s without a grant: %s", tool, o.text)
		}
	}
	u, err := w.store.Usage(context.Background(), "run-c")
	if err != nil || u.Protocol.Reports != 0 {
		t.Fatalf("a refused report was counted: %+v, %v", u, err)
	}
}

func TestSignedRunTokenWithTheSDKClient(t *testing.T) {
	key := []byte(strings.Repeat("k", 24) + "0123456789abcdef")
	w := newOwnedWorld(t, func(cfg configDoc, dir string) {
		if err := os.WriteFile(filepath.Join(dir, "run.key"), append(key, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
		id := cfg["identity"].(map[string]any)
		id["run_token"] = map[string]any{"audience": "support-test", "keys": []any{map[string]any{"id": "k1", "key_file": "run.key"}}, "required": true}
	})
	ctx := context.Background()
	now := time.Now()
	mint := func(run, principal string, ttl time.Duration, at time.Time) string {
		t.Helper()
		tok, err := gateway.MintRunToken(gateway.RunTokenKey{ID: "k1", Key: key}, "support-test", run, principal, ttl, at)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	withToken := func(p, tok string) http.Header {
		h := bearer(p)
		h.Set(gateway.RunTokenHeader, tok)
		return h
	}
	tok := mint("run-host-7", "alice", time.Hour, now)

	// The host's token names the run: the agent's calls need no run id.
	alice := w.client(t, withToken("alice", tok))
	if o := mustCall(ctx, t, alice, "echo", "call_t1", "", map[string]any{"text": "hi"}); !o.ready {
		t.Fatalf("call with a run token: %s", o.text)
	}
	if rec, err := w.store.Get(ctx, "run-host-7", "call_t1"); err != nil || rec.Status != canonical.StatusReady {
		t.Fatalf("record of the token's run: %+v, %v", rec, err)
	}
	if o := mustCall(ctx, t, alice, "echo", "call_t2", "run-other", map[string]any{"text": "hi"}); o.code != string(canonical.CodeRunMismatch) {
		t.Fatalf("a call naming another run than its token's: %s", o.text)
	}
	if o := progressCall(t, alice, "progress_facts", "", map[string]any{}); !o.ready || !strings.Contains(o.text, "call_t1") {
		t.Fatalf("progress_facts with a run token: %s", o.text)
	}
	// Expired 10 s ago, within the 30 s of clock skew the token tolerates:
	// the call runs, not only the token's check.
	skewed := w.client(t, withToken("alice", mint("run-host-7", "alice", time.Second, now.Add(-11*time.Second))))
	if o := mustCall(ctx, t, skewed, "echo", "call_t4", "", map[string]any{"text": "hi"}); !o.ready {
		t.Fatalf("a call with a token within the skew: %s", o.text)
	}
	// The same token in _meta instead of the header.
	plain := w.client(t, bearer("alice"))
	res, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"},
		Meta: mcp.Meta{gateway.MetaToolCallID: "call_t3", gateway.MetaRunToken: tok}})
	if err != nil || res.IsError {
		t.Fatalf("a run token in _meta: %v %+v", err, res)
	}

	tampered := []byte(tok)
	tampered[3] ^= 1
	refused := map[string]*mcp.ClientSession{
		"no token (required)":       plain,
		"alice's token, bob's call": w.client(t, withToken("bob", tok)),
		"expired":                   w.client(t, withToken("alice", mint("run-host-7", "alice", time.Minute, now.Add(-time.Hour)))),
		"tampered":                  w.client(t, withToken("alice", string(tampered))),
		"another key": w.client(t, withToken("alice", func() string {
			other, _ := gateway.MintRunToken(gateway.RunTokenKey{ID: "k1", Key: []byte(strings.Repeat("x", 40))}, "support-test", "run-host-7", "alice", time.Hour, now)
			return other
		}())),
	}
	for name, cs := range refused {
		_, err := callTool(ctx, t, cs, "echo", "call_r1", "", map[string]any{"text": "hi"})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != gateway.CodeUnauthenticated {
			t.Errorf("%s: got %v, want the JSON-RPC error %d", name, err, gateway.CodeUnauthenticated)
		}
	}
	if _, err := w.store.Get(ctx, "run-host-7", "call_r1"); canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Fatalf("a refused call left a record: %v", err)
	}
}

func TestRunTokenMintedByTheCommandOverStdio(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "run.key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("z", 48)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(t, stdioUpstream(t, filepath.Join(dir, "upstream.log"), ""), "echo")
	// No principal of its own: over stdio only a run token says who calls.
	cfg["identity"] = map[string]any{"project": "support", "run_token": map[string]any{"audience": "support-stdio",
		"keys": []any{map[string]any{"id": "k1", "key_file": "run.key"}}, "required": true}}
	cfg["progress"] = map[string]any{}
	path := cfg.write(t, dir)
	cs, stderr := stdioGateway(t, path)

	bin, _ := binaries(t)
	out, err := exec.Command(bin, "run-token", "--config", path, "--run", "run-stdio", "--principal", "alice", "--ttl", "5m").Output()
	if err != nil {
		t.Fatalf("run-token: %v", err)
	}
	tok := strings.TrimSpace(string(out))
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"},
		Meta: mcp.Meta{gateway.MetaToolCallID: "call_s1", gateway.MetaRunToken: tok}})
	if err != nil || res.IsError {
		t.Fatalf("a call with the minted token: %v %+v\n%s", err, res, stderr)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "progress_facts", Arguments: map[string]any{},
		Meta: mcp.Meta{gateway.MetaRunToken: tok}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"call_s1"`) {
		t.Fatalf("progress_facts with the minted token: %v %+v", err, res)
	}
	_, err = callTool(ctx, t, cs, "echo", "call_s2", "run-stdio", map[string]any{"text": "hi"})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != gateway.CodeUnauthenticated {
		t.Fatalf("a call without a token: %v", err)
	}
}
