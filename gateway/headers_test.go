package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
)

// Routing headers that agree with the body are accepted at every revision;
// headers that say another method or name than the body are refused with
// a fixed JSON-RPC error, at every revision (the SDK checks only 2026-07-28
// requests).
func TestRoutingHeadersMustAgreeWithTheBody(t *testing.T) {
	g := openTestGateway(t, nil)
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
	defer srv.Close()
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.github.toolcanon/toolCallId":"call_h1","io.github.toolcanon/runId":"run-h"}}}`
	for _, c := range []struct {
		name, method, body string
		ok                 bool
	}{
		{"echo", "tools/call", call, true},
		{"", "", call, true},
		{"", "tools/call", call, true},
		{"echo", "tools/list", call, false},
		{"other", "tools/call", call, false},
		{"", "tools/list", `{"jsonrpc":"2.0","id":8,"method":"ping"}`, false},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if c.method != "" {
			req.Header.Set(gateway.HeaderMethod, c.method)
		}
		if c.name != "" {
			req.Header.Set(gateway.HeaderName, c.name)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var msg struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if !c.ok {
			err = json.NewDecoder(resp.Body).Decode(&msg)
		}
		resp.Body.Close()
		switch {
		case c.ok && resp.StatusCode != http.StatusOK:
			t.Errorf("Mcp-Method %q Mcp-Name %q: %d", c.method, c.name, resp.StatusCode)
		case !c.ok && (err != nil || resp.StatusCode != http.StatusBadRequest || msg.Error == nil || msg.Error.Code != -32020 || !strings.HasPrefix(msg.Error.Message, "Header mismatch")):
			t.Errorf("Mcp-Method %q Mcp-Name %q on %s: %d %+v", c.method, c.name, c.body[:40], resp.StatusCode, msg.Error)
		case !c.ok && string(msg.ID) != `7` && string(msg.ID) != `8`:
			t.Errorf("the refusal does not name the request: id %s", msg.ID)
		}
	}
}

// The gateway sends its HTTP upstreams the routing headers of each request,
// whatever revision it speaks with them, so that a proxy in between can
// route and limit without reading bodies.
func TestRoutingHeadersAreSentUpstream(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	tool := &mcp.Tool{Name: "shout", Description: "Shout.", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"text":{"type":"string","maxLength":64}},"required":["text"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	up.AddTool(tool, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "HI"}}}, nil
	})
	var mu sync.Mutex
	var seen []string
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, &mcp.StreamableHTTPOptions{Stateless: true})
	upSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get(gateway.HeaderMethod)+" "+r.Header.Get(gateway.HeaderName))
		mu.Unlock()
		sdk.ServeHTTP(w, r)
	}))
	defer upSrv.Close()
	pin, err := gateway.Digest(tool)
	if err != nil {
		t.Fatal(err)
	}
	cfg := configDoc{
		"upstreams": map[string]any{"up": map[string]any{"url": upSrv.URL}},
		"identity":  map[string]any{"project": "support", "principal": "agent-1"},
		"tools": []any{map[string]any{"name": "shout", "upstream": "up", "upstream_tool": "shout", "pin": pin,
			"definition": map[string]any{"name": "up.shout", "version": "1.0.0", "description": "Shout.", "effect": "read", "risk": "low", "timeout": "10s",
				"input_schema": json.RawMessage(tool.InputSchema.(json.RawMessage))}}},
		"policy": map[string]any{"grants": []any{map[string]any{"principals": []string{"*"}, "projects": []string{"support"}, "allow": []string{"tool.call:*"}}}},
	}
	c, err := gateway.LoadConfig(cfg.write(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := gateway.Open(ctx, c, memstore.New(), gateway.OpenOptions{NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cs := connectWith(t, g.Server(), nil, nil)
	if o := mustCall(ctx, t, cs, "shout", "call_rh1", "run-rh", map[string]any{"text": "hi"}); !o.ready {
		t.Fatal(o.text)
	}
	mu.Lock()
	defer mu.Unlock()
	got := strings.Join(seen, ",")
	if !strings.Contains(got, "initialize ,") || !strings.Contains(got, "tools/list ,") || !strings.Contains(got, "tools/call shout") {
		t.Errorf("the upstream saw Mcp-Method and Mcp-Name: %s", got)
	}
}

// Stateless, an initialize of a 2025-era client is answered with an
// Mcp-Session-Id that names nothing: every request is served with it or
// without it, by any replica; with --sessions the id is the session's, as
// before.
func TestStatelessInitializeGivesASessionIDThatNamesNothing(t *testing.T) {
	g := openTestGateway(t, nil)
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
	defer srv.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if id := cs.ID(); !strings.HasPrefix(id, "stateless-") {
		t.Fatalf("session id %q", id)
	}
	// Three concurrent requests under the id, and one under another id.
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := cs.ListTools(context.Background(), nil)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	resp, _ := postRPC(t, srv.URL, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a request without the id: %d", resp.StatusCode)
	}
}
