package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/toolcanon/toolcanon/canonical"
)

// The routing headers of MCP 2026-07-28: a request's method, and the name
// it acts on (the tool, prompt or task; a resource's URI), so that a proxy
// can route and limit without reading bodies.
const (
	HeaderMethod = "Mcp-Method"
	HeaderName   = "Mcp-Name"
)

// codeHeaderMismatch is the JSON-RPC code of a request whose routing
// headers say another method or name than its body (the SDK's).
const codeHeaderMismatch = -32020

// head is what the gateway reads of a JSON-RPC message without decoding
// its arguments' values.
type head struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		URI       string          `json:"uri"`
		TaskID    string          `json:"taskId"`
		RequestID json.RawMessage `json:"requestId"`
		Meta      json.RawMessage `json:"_meta"` // read only for a cancel
	} `json:"params"`
}

// readHead decodes the head of a message; ok is false when it is not a
// JSON object of that shape.
func readHead(body []byte) (h head, ok bool) {
	return h, json.Unmarshal(body, &h) == nil
}

// name is the value Mcp-Name carries for the request: the tool or prompt
// name, the resource URI or the task id; "" for a method that names none.
func (h head) name() string {
	switch h.Method {
	case methodCallTool, methodGetPrompt:
		return h.Params.Name
	case methodReadResource:
		return h.Params.URI
	case methodTasksGet, methodTasksResult, methodTasksCancel, methodTasksUpdate:
		return h.Params.TaskID
	}
	return ""
}

// headersAgree reports whether the routing headers a request carries, if
// any, say what its body says. A request without them is accepted (the
// SDK requires them of 2026-07-28 requests itself).
func headersAgree(hdr http.Header, h head) bool {
	if m := hdr.Get(HeaderMethod); m != "" && m != h.Method {
		return false
	}
	if n := hdr.Get(HeaderName); n != "" && h.Method != "" && n != h.name() {
		return false
	}
	return true
}

// headerMismatch is the fixed answer to a request whose routing headers
// disagree with its body.
const headerMismatch = "Header mismatch: Mcp-Method or Mcp-Name does not match the request's body"

// routingHeaders sets Mcp-Method and Mcp-Name on a request the gateway
// sends an HTTP upstream, whatever the protocol version spoken, so that
// proxies between the gateway and its upstreams can route it. A body that
// cannot be read again, or is not one JSON-RPC request, gets none.
func routingHeaders(r *http.Request) *http.Request {
	if r.Method != http.MethodPost || r.Header.Get(HeaderMethod) != "" {
		return r
	}
	if rt, ok := r.Context().Value(routeKey{}).(route); ok {
		// A tools/call says what it is: its body is not read again.
		r = r.Clone(r.Context())
		r.Header.Set(HeaderMethod, rt.method)
		if headerSafe(rt.name) {
			r.Header.Set(HeaderName, rt.name)
		}
		return r
	}
	if r.GetBody == nil {
		return r
	}
	rc, err := r.GetBody()
	if err != nil {
		return r
	}
	body, err := io.ReadAll(io.LimitReader(rc, DefaultMaxBodyBytes+1))
	rc.Close()
	if err != nil || len(body) > DefaultMaxBodyBytes || !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		return r
	}
	h, ok := readHead(body)
	if !ok || h.Method == "" || len(h.ID) == 0 {
		return r
	}
	r = r.Clone(r.Context())
	r.Header.Set(HeaderMethod, h.Method)
	if n := h.name(); n != "" && headerSafe(n) {
		r.Header.Set(HeaderName, n)
	}
	return r
}

// route is what the routing headers of a request the gateway sends will
// say, when the sender knows it: a tools/call and its tool.
type route struct{ method, name string }

// routeKey carries a route in the context of the request it is for.
type routeKey struct{}

// headerSafe reports whether s can be a header value as it stands: 1 to
// 1024 printable ASCII bytes, spaces included, no leading or trailing one.
func headerSafe(s string) bool {
	if len(s) == 0 || len(s) > 1024 || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// statelessSessionID is the Mcp-Session-Id a stateless gateway gives a
// client of a protocol before 2026-07-28 on its initialize: it names no
// state (every replica serves every request, with or without it, and none
// reads it), and lets a client that wants an id for its streams open
// several.
func statelessSessionID() string { return "stateless-" + canonical.NewOwner() }

// initializeWriter adds the stateless session id to the answer of an
// initialize.
type initializeWriter struct {
	http.ResponseWriter
	done bool
}

func (w *initializeWriter) WriteHeader(status int) {
	if !w.done {
		w.done = true
		if status == http.StatusOK && w.Header().Get("Mcp-Session-Id") == "" {
			w.Header().Set("Mcp-Session-Id", statelessSessionID())
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *initializeWriter) Write(p []byte) (int, error) {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *initializeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
