package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/gateway"
)

// sessionRequest sends one request of method to url with a bearer token
// and a session id, as a client of a session does, and returns its status
// and body.
func sessionRequest(t *testing.T, url, method, token, session, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body == "" {
		req.Body = http.NoBody
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A session is its principal's, and to another principal its id is one
// that names nothing: bob's POST, GET and DELETE with alice's session id
// get the answer of an id no session ever had, byte for byte, so that bob
// cannot even learn that alice's session exists; and none of them ends or
// reaches it.
func TestAnotherPrincipalsSessionIsNoSession(t *testing.T) {
	g := openTestGateway(t, func(cfg configDoc) {
		cfg["http"] = map[string]any{"bearer_tokens": []any{
			map[string]any{"sha256": sha("alice-token"), "subject": "alice"},
			map[string]any{"sha256": sha("bob-token"), "subject": "bob"},
		}}
	})
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{Sessions: true}))
	t.Cleanup(srv.Close)
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer alice-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	alices := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || alices == "" {
		t.Fatalf("alice's initialize: %d, session %q", resp.StatusCode, alices)
	}
	const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	if code, body := sessionRequest(t, srv.URL, http.MethodPost, "alice-token", alices, initialized); code != http.StatusAccepted {
		t.Fatalf("alice's initialized: %d %s", code, body)
	}
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	unknown := "S" + strings.Repeat("0", len(alices)-1)
	for _, tc := range []struct{ method, body string }{
		{http.MethodPost, list},
		{http.MethodGet, ""},
		{http.MethodDelete, ""},
	} {
		code, body := sessionRequest(t, srv.URL, tc.method, "bob-token", alices, tc.body)
		noneCode, noneBody := sessionRequest(t, srv.URL, tc.method, "bob-token", unknown, tc.body)
		if code != noneCode || body != noneBody {
			t.Errorf("bob's %s of alice's session: %d %s; of a session that does not exist: %d %s", tc.method, code, body, noneCode, noneBody)
		}
		if strings.Contains(body, alices) {
			t.Errorf("bob's %s was told alice's session id: %s", tc.method, body)
		}
	}
	if code, body := sessionRequest(t, srv.URL, http.MethodPost, "alice-token", alices, list); code != http.StatusOK || !strings.Contains(body, `"echo"`) {
		t.Fatalf("alice's session after bob's requests: %d %s", code, body)
	}
}
