package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
)

// A gateway whose listener is an OAuth resource server: a request without
// a token is sent to the protected resource metadata, which names the
// authorization server and the scopes the grants name.
func ExampleGateway_MetadataPaths() {
	cfg, err := gateway.ParseConfig("gateway.json", []byte(`{
	  "upstreams": {"kb": {"url": "http://127.0.0.1:1/mcp"}},
	  "identity": {"project": "support"},
	  "tools": [{"name": "search_docs", "upstream": "kb", "upstream_tool": "search",
	    "pin": "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	    "definition": {"name": "kb.search", "version": "1.0.0", "description": "Search.", "effect": "read", "risk": "low",
	      "timeout": "30s", "input_schema": {"type": "object", "additionalProperties": false, "required": ["q"],
	        "properties": {"q": {"type": "string", "maxLength": 64}}}}}],
	  "policy": {"grants": [{"principals": ["*"], "projects": ["support"], "scopes": ["kb.read"], "allow": ["tool.call:kb.search"]}]},
	  "http": {"oauth": {"resource": "https://gateway.example.com/mcp", "issuer": "https://auth.example.com"}}
	}`))
	if err != nil {
		panic(err)
	}
	g, err := gateway.Open(context.Background(), cfg, memstore.New(), gateway.OpenOptions{NoReaper: true})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.HTTPHandler(false))
	defer srv.Close()

	fmt.Println(g.MetadataPaths())
	resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	resp, err = http.Get(srv.URL + g.MetadataPaths()[0])
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(body))
	// Output:
	// [/.well-known/oauth-protected-resource/mcp /.well-known/oauth-protected-resource]
	// 401 Bearer resource_metadata="https://gateway.example.com/.well-known/oauth-protected-resource/mcp"
	// {"resource":"https://gateway.example.com/mcp","authorization_servers":["https://auth.example.com"],"scopes_supported":["kb.read"],"bearer_methods_supported":["header"]}
}
