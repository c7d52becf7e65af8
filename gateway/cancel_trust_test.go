package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/gateway"
)

// rawPost sends one JSON-RPC message to a gateway's endpoint as a stateless
// client does, with the headers given (which replace the defaults), and
// returns the status and the body.
func rawPost(t *testing.T, endpoint string, header http.Header, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	for k, v := range header {
		if k == "Host" {
			req.Host = v[0]
			continue
		}
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitCall is a raw stateless tools/call of the wait tool under JSON-RPC
// id 41, with _meta; it returns when the call has reached the upstream, and
// the channel gives what the POST answered once the call ends.
func waitCall(t *testing.T, endpoint string, header http.Header, logPath, id string, meta map[string]any) <-chan string {
	t.Helper()
	meta[gateway.MetaToolCallID] = id
	body := string(mustMarshal(t, map[string]any{"jsonrpc": "2.0", "id": 41, "method": "tools/call",
		"params": map[string]any{"name": "wait", "arguments": map[string]any{"query": id, "ms": 8000}, "_meta": meta}}))
	out := make(chan string, 1)
	go func() {
		_, b := rawPost(t, endpoint, header, body)
		out <- b
	}()
	waitFor(t, func() bool { return countExecutions(t, logPath, "wait", id) == 1 }, "the call to reach the upstream")
	return out
}

// cancelBody is a notifications/cancelled of JSON-RPC id 41, with _meta.
func cancelBody(t *testing.T, meta map[string]any) string {
	params := map[string]any{"requestId": 41}
	if meta != nil {
		params["_meta"] = meta
	}
	return string(mustMarshal(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}))
}

// notCancelled fails the test if the upstream saw call id cancelled within
// a moment: a cancel is acted on at once when it is acted on.
func notCancelled(t *testing.T, logPath, id, what string) {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	if n := countExecutions(t, logPath, "cancelled", id); n != 0 {
		t.Fatalf("%s cancelled the call", what)
	}
}

// A stateless cancel is acted on only once its message passed the checks
// every message passes: on a loopback gateway without tokens, a cancel a
// page of another site could send — a foreign Host (DNS rebinding), a
// text/plain body, another Origin — is refused and cancels nothing; the
// same cancel sent as a client sends it does.
func TestCrossSiteCancelCancelsNothing(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "upstream.log")
	lg := openLive(t, liveConfig(t, logPath), gateway.OpenOptions{})
	srv := httptest.NewServer(lg.g.Handler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	endpoint := srv.URL + "/mcp"
	u, _ := url.Parse(srv.URL)
	done := waitCall(t, endpoint, nil, logPath, "call_x1", map[string]any{gateway.MetaRunID: "run-x"})

	foreign := []struct {
		name   string
		header http.Header
		status int
	}{
		{"a foreign Host", http.Header{"Host": {"attacker.example:" + u.Port()}}, http.StatusForbidden},
		{"a text/plain body", http.Header{"Content-Type": {"text/plain"}}, http.StatusUnsupportedMediaType},
		{"a browser's text/plain from another site", http.Header{"Content-Type": {"text/plain"},
			"Origin": {"https://attacker.example"}, "Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"JSON from another origin", http.Header{"Origin": {"https://attacker.example"}}, http.StatusForbidden},
	}
	for _, f := range foreign {
		if status, body := rawPost(t, endpoint, f.header, cancelBody(t, nil)); status != f.status {
			t.Errorf("%s: %d %s, want %d", f.name, status, body, f.status)
		}
	}
	notCancelled(t, logPath, "call_x1", "a cancel refused by the checks")

	if status, body := rawPost(t, endpoint, nil, cancelBody(t, nil)); status != http.StatusAccepted {
		t.Fatalf("a client's cancel: %d %s", status, body)
	}
	waitFor(t, func() bool { return countExecutions(t, logPath, "cancelled", "call_x1") == 1 }, "the client's cancel to reach the upstream")
	checkCancelled(t, func() (canonical.Record, error) { return lg.record(t, "run-x", "call_x1"), nil }, "a client's cancel")
	<-done
}

// A call authenticated by a run token in its _meta is cancelled by its
// owner's cancel: with bearer tokens, the cancel the SDK sends (no _meta)
// is matched by the connection's subject; without them, by the run token
// the cancel carries, and a cancel without one cancels nothing.
func TestCancelFindsARunTokenCall(t *testing.T) {
	key := []byte(strings.Repeat("k", 40))
	setup := func(t *testing.T, bearers bool) (lg *liveGateway, endpoint, logPath string) {
		dir := t.TempDir()
		logPath = filepath.Join(dir, "upstream.log")
		if err := os.WriteFile(filepath.Join(dir, "run.key"), key, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := liveConfig(t, logPath)
		cfg["identity"] = map[string]any{"project": "support", "run_token": map[string]any{"audience": "support-test",
			"keys": []any{map[string]any{"id": "k1", "key_file": filepath.Join(dir, "run.key")}}, "required": true}}
		if bearers {
			cfg["http"] = map[string]any{"bearer_tokens": []any{
				map[string]any{"sha256": tokenDigest("tok-alice"), "subject": "alice"},
				map[string]any{"sha256": tokenDigest("tok-bob"), "subject": "bob"}}}
		}
		lg = openLive(t, cfg, gateway.OpenOptions{})
		srv := httptest.NewServer(lg.g.Handler(gateway.HTTPOptions{}))
		t.Cleanup(srv.Close)
		return lg, srv.URL + "/mcp", logPath
	}
	mint := func(run, principal string) string {
		tok, err := gateway.MintRunToken(gateway.RunTokenKey{ID: "k1", Key: key}, "support-test", run, principal, time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	t.Run("bearer", func(t *testing.T) {
		lg, endpoint, logPath := setup(t, true)
		hc := &http.Client{Transport: headerTransport{header: bearer("alice"), next: http.DefaultTransport}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		// Bob's cancel of the same JSON-RPC id cancels nothing of alice's.
		tok := mint("run-host-c", "alice")
		done := waitCall(t, endpoint, bearer("alice"), logPath, "call_b0", map[string]any{gateway.MetaRunToken: tok})
		if status, _ := rawPost(t, endpoint, bearer("bob"), cancelBody(t, nil)); status != http.StatusAccepted {
			t.Fatalf("bob's cancel: %d", status)
		}
		notCancelled(t, logPath, "call_b0", "another principal's cancel")
		if status, _ := rawPost(t, endpoint, bearer("alice"), cancelBody(t, nil)); status != http.StatusAccepted {
			t.Fatalf("alice's cancel: %d", status)
		}
		waitFor(t, func() bool { return countExecutions(t, logPath, "cancelled", "call_b0") == 1 }, "alice's cancel to reach the upstream")
		<-done

		// The SDK's own cancel, as an agent's context ends.
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"query": "call_b1", "ms": 8000},
				Meta: mcp.Meta{gateway.MetaToolCallID: "call_b1", gateway.MetaRunToken: tok}})
			errc <- err
		}()
		waitFor(t, func() bool { return countExecutions(t, logPath, "wait", "call_b1") == 1 }, "the call to reach the upstream")
		cancel()
		<-errc
		waitFor(t, func() bool { return countExecutions(t, logPath, "cancelled", "call_b1") == 1 }, "the SDK's cancel to reach the upstream")
		checkCancelled(t, func() (canonical.Record, error) { return lg.store.Get(context.Background(), "run-host-c", "call_b1") }, "the SDK's cancel")
	})

	t.Run("no bearer", func(t *testing.T) {
		_, endpoint, logPath := setup(t, false)
		tok := mint("run-host-d", "alice")
		done := waitCall(t, endpoint, nil, logPath, "call_n1", map[string]any{gateway.MetaRunToken: tok})
		for name, meta := range map[string]map[string]any{
			"no run token":        nil,
			"bob's run token":     {gateway.MetaRunToken: mint("run-host-d", "bob")},
			"a token of no value": {gateway.MetaRunToken: tok[:len(tok)-2]},
		} {
			if status, _ := rawPost(t, endpoint, nil, cancelBody(t, meta)); status != http.StatusAccepted {
				t.Fatalf("%s: %d", name, status)
			}
			notCancelled(t, logPath, "call_n1", "a cancel with "+name)
		}
		if status, _ := rawPost(t, endpoint, nil, cancelBody(t, map[string]any{gateway.MetaRunToken: tok})); status != http.StatusAccepted {
			t.Fatalf("the owner's cancel: %d", status)
		}
		waitFor(t, func() bool { return countExecutions(t, logPath, "cancelled", "call_n1") == 1 }, "the owner's cancel to reach the upstream")
		<-done
	})
}
