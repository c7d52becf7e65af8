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

// A run an agent names is its principal's own: bob naming alice's run, in
// _meta or through the run header, reaches a run of his of that name, and
// nothing of alice's: not her records, her future call ids, her facts nor
// her protocol state.
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
	aliceRun := gateway.PrincipalRun("alice", "run-a")
	before, err := w.store.Usage(ctx, aliceRun)
	if err != nil {
		t.Fatal(err)
	}

	// Bob names alice's run in _meta, and through the run header: his calls
	// run in his own run of that name.
	bobHeader := bearer("bob")
	bobHeader.Set("X-Toolcanon-Run", "run-a")
	bobByHeader := w.client(t, bobHeader)
	if o := mustCall(ctx, t, bob, "echo", "call_a2", "run-a", echo); !o.ready {
		t.Fatalf("bob's tools/call in his run-a: %s", o.text)
	}
	if o := mustCall(ctx, t, bobByHeader, "echo", "call_a2", "", echo); o.code != string(canonical.CodeDuplicateToolCall) {
		t.Fatalf("bob's same id by header, in the same run of his: %s", o.text)
	}
	if o := progressCall(t, bob, "progress_facts", "run-a", map[string]any{}); !o.ready ||
		strings.Contains(o.text, "call_a1") || !strings.Contains(o.text, "call_a2") {
		t.Fatalf("bob's progress_facts of his run-a: %s", o.text)
	}
	bad := map[string]any{"claims": []any{map[string]any{"text": "x", "kind": "positive", "cites": []string{"nope"}}}}
	for range 3 { // the threshold: had they counted in alice's run, it would be violated
		if o := progressCall(t, bob, "progress_report", "run-a", bad); o.code != "" || !strings.Contains(o.text, `"valid":false`) {
			t.Fatalf("bob's progress_report on his run-a: %s", o.text)
		}
	}
	after, err := w.store.Usage(ctx, aliceRun)
	if err != nil {
		t.Fatal(err)
	}
	if after.Calls != before.Calls || after.Protocol != before.Protocol || after.Completed != before.Completed {
		t.Fatalf("bob changed alice's run: %+v, was %+v", after, before)
	}
	if err := w.store.CheckPrincipal(ctx, gateway.PrincipalRun("bob", "run-a"), "bob"); err != nil {
		t.Fatalf("bob's run-a is not his: %v", err)
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

// A run nobody began is claimed by nobody: a cheap progress report (or a
// call) by another principal naming it first, in _meta or the run header,
// does not lock out the principal it is meant for, and a report writes no
// state at all.
func TestNamingARunFirstClaimsNothing(t *testing.T) {
	w := newOwnedWorld(t, nil)
	ctx := context.Background()
	alice, bob := w.client(t, bearer("alice")), w.client(t, bearer("bob"))
	bad := map[string]any{"claims": []any{map[string]any{"text": "x", "kind": "positive", "cites": []string{"nope"}}}}
	o := progressCall(t, bob, "progress_report", "run-squat", bad)
	if o.code != "" || !strings.Contains(o.text, `"reports":0`) {
		t.Fatalf("bob's report on a run nobody began: %s", o.text)
	}
	for _, p := range []string{"bob", "alice"} {
		if _, err := w.store.Usage(ctx, gateway.PrincipalRun(p, "run-squat")); canonical.CodeOf(err) != canonical.CodeNotFound {
			t.Fatalf("a report on a run nobody began left state for %s: %v", p, err)
		}
	}
	if o := mustCall(ctx, t, bob, "echo", "call_b1", "run-squat2", map[string]any{"text": "hi"}); !o.ready {
		t.Fatalf("bob's call: %s", o.text)
	}
	for _, run := range []string{"run-squat", "run-squat2"} {
		if o := mustCall(ctx, t, alice, "echo", "call_x1", run, map[string]any{"text": "hi"}); !o.ready {
			t.Fatalf("alice's first call in %s, which bob named first: %s", run, o.text)
		}
		if err := w.store.CheckPrincipal(ctx, gateway.PrincipalRun("alice", run), "alice"); err != nil {
			t.Fatalf("alice's %s is not hers: %v", run, err)
		}
	}
}

// identity.default_run with several bearer subjects is one run per
// principal: every principal's calls that name no run go on, none locked
// out by the first.
func TestDefaultRunIsOnePerPrincipal(t *testing.T) {
	w := newOwnedWorld(t, func(cfg configDoc, _ string) {
		cfg["identity"].(map[string]any)["default_run"] = "shared"
	})
	ctx := context.Background()
	for _, p := range []string{"alice", "bob", "carol"} {
		cs := w.client(t, bearer(p))
		if o := mustCall(ctx, t, cs, "echo", "call_d1", "", map[string]any{"text": "hi"}); !o.ready {
			t.Fatalf("%s's call in the default run: %s", p, o.text)
		}
		if _, err := w.store.Get(ctx, gateway.PrincipalRun(p, "shared"), "call_d1"); err != nil {
			t.Fatalf("%s's record: %v", p, err)
		}
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
	u, err := w.store.Usage(context.Background(), gateway.PrincipalRun("carol", "run-c"))
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

// A run a host names in a run token is claimed only through a token: a
// principal without one naming the same run id first reaches a run of its
// own namespace, and the token's principal then begins the host's run.
func TestTokenRunCannotBeSquatted(t *testing.T) {
	key := []byte(strings.Repeat("k", 40))
	w := newOwnedWorld(t, func(cfg configDoc, dir string) {
		if err := os.WriteFile(filepath.Join(dir, "run.key"), key, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg["identity"].(map[string]any)["run_token"] = map[string]any{"audience": "support-test",
			"keys": []any{map[string]any{"id": "k1", "key_file": "run.key"}}}
	})
	ctx := context.Background()
	bob := w.client(t, bearer("bob"))
	if o := mustCall(ctx, t, bob, "echo", "call_b1", "run-host-9", map[string]any{"text": "hi"}); !o.ready {
		t.Fatalf("bob's call naming the host's run: %s", o.text)
	}
	bad := map[string]any{"claims": []any{map[string]any{"text": "x", "kind": "positive", "cites": []string{"nope"}}}}
	progressCall(t, bob, "progress_report", "run-host-9", bad)
	tok, err := gateway.MintRunToken(gateway.RunTokenKey{ID: "k1", Key: key}, "support-test", "run-host-9", "alice", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	h := bearer("alice")
	h.Set(gateway.RunTokenHeader, tok)
	alice := w.client(t, h)
	if o := mustCall(ctx, t, alice, "echo", "call_a1", "", map[string]any{"text": "hi"}); !o.ready {
		t.Fatalf("alice's call with the host's token: %s", o.text)
	}
	if err := w.store.CheckPrincipal(ctx, "run-host-9", "alice"); err != nil {
		t.Fatalf("the host's run is not alice's: %v", err)
	}
	if o := progressCall(t, alice, "progress_facts", "", map[string]any{}); !o.ready || strings.Contains(o.text, "call_b1") {
		t.Fatalf("alice's facts: %s", o.text)
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
