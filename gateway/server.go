package gateway

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/registry"
)

// NewServer returns an MCP server that lists exactly the tools bound in b,
// with their registry definitions (name, description, input schema, and
// readOnlyHint for read tools), and runs every tools/call through
// b.Invoke. A call of a tool that is not listed is answered, like every
// boundary refusal, as a tool result with isError (UNKNOWN_TOOL).
func NewServer(b *boundary.Boundary, opts Options) (*mcp.Server, error) {
	s, _, err := newServer(b, opts)
	return s, err
}

// newServer is NewServer, with the handler that serves it.
func newServer(b *boundary.Boundary, opts Options) (*mcp.Server, *handler, error) {
	h, err := newHandler(b, opts)
	if err != nil {
		return nil, nil, err
	}
	impl := opts.Implementation
	if impl == nil {
		impl = &mcp.Implementation{Name: "toolcanon", Version: "1"}
	}
	// Logging: an upstream's log messages are relayed (relay.sendLog).
	s := mcp.NewServer(impl, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Logging: &mcp.LoggingCapabilities{}}})
	for _, name := range b.Tools() {
		def, _ := b.Definition(name)
		if err := addTool(s, listing(name, def, nil), h.call); err != nil {
			return nil, nil, err
		}
	}
	if p := opts.Progress; p != nil {
		for _, t := range p.listings() {
			if err := addTool(s, t, h.call); err != nil {
				return nil, nil, err
			}
		}
	}
	s.AddReceivingMiddleware(h.unlisted(s), h.levels.middleware)
	return s, h, nil
}

// listing is how a bound tool is listed: what the registry holds, never
// what an upstream says. from, when given, lends its title and icons.
func listing(name string, def *registry.Tool, from *mcp.Tool) *mcp.Tool {
	t := &mcp.Tool{
		Name:        name,
		Description: def.Description(),
		InputSchema: json.RawMessage(def.InputSchema()),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: def.Effect() == registry.EffectRead},
	}
	if from != nil {
		t.Title, t.Icons = from.Title, from.Icons
		if from.Annotations != nil {
			t.Annotations.Title = from.Annotations.Title
		}
	}
	return t
}

// addTool adds t, turning the SDK's panic on a schema it refuses into an
// error.
func addTool(s *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = canonical.Errorf(canonical.CodeInvalidArgument, "gateway: tool %q cannot be listed: %v", t.Name, v)
		}
	}()
	s.AddTool(t, h)
	return nil
}

// unlisted answers tools/call of names the server does not list, which the
// SDK would otherwise turn into a JSON-RPC error the model never reads.
func (h *handler) unlisted(s *mcp.Server) mcp.Middleware {
	listed := map[string]bool{}
	for _, name := range h.b.Tools() {
		listed[name] = true
	}
	if p := h.opts.Progress; p != nil {
		listed[p.FactsTool], listed[p.ReportTool] = true, true
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.CallToolRequest); ok && method == methodCallTool && r.Params != nil && !listed[r.Params.Name] {
				return asResult(h.call(ctx, r))
			}
			return next(ctx, method, req)
		}
	}
}

const (
	methodCallTool  = "tools/call"
	methodListTools = "tools/list"
)

// asResult keeps a nil result nil when it becomes an interface.
func asResult(res *mcp.CallToolResult, err error) (mcp.Result, error) {
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, fmt.Errorf("gateway: no result")
	}
	return res, nil
}
