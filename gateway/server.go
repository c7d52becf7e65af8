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

// NewServer returns an MCP server that lists the tools bound in b that the
// caller may call (read tools that Options.Guard and Options.Visible do not
// refuse), with their registry definitions (name, description, input
// schema, and readOnlyHint true) and the upstream's title and annotations
// (Options.Upstream), and runs every tools/call through b.Invoke. A call
// of a tool that is not listed is answered, like every boundary refusal,
// as a tool result with isError (UNKNOWN_TOOL).
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
	so := &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Logging: &mcp.LoggingCapabilities{}},
		// Every list is the principal's own: no intermediary may serve one
		// principal's list to another.
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { cacheable(c) }}
	sf := opts.surface
	if sf != nil {
		sf.h = h
		sf.configure(so)
	}
	if h.tasks != nil {
		so.Capabilities.AddExtension(ExtensionTasks, nil)
	}
	s := mcp.NewServer(impl, so)
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
	s.AddReceivingMiddleware(h.unlisted(s), h.levels.middleware, h.listed())
	if h.tasks != nil {
		if err := h.registerTaskMethods(s); err != nil {
			return nil, nil, err
		}
		// Around the others (each call wraps what is there): it declares
		// tasks on the list listed() made, and answers a task-asking call
		// before the SDK's own tool dispatch.
		s.AddReceivingMiddleware(h.taskMiddleware)
	}
	if sf != nil {
		sf.server = s
		s.AddReceivingMiddleware(sf.middleware)
	}
	return s, h, nil
}

// listed rewrites each tools/list answer for its caller: what it may call,
// each as the registry defines it with the upstream's title and
// annotations.
func (h *handler) listed() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			lr, ok := res.(*mcp.ListToolsResult)
			if err != nil || !ok || method != methodListTools {
				return res, err
			}
			c := &Call{}
			if extra := req.GetExtra(); extra != nil {
				c.Header, c.Token = extra.Header, extra.TokenInfo
			}
			out := *lr
			out.Tools = make([]*mcp.Tool, 0, len(lr.Tools))
			for _, t := range lr.Tools {
				if t = h.visible(ctx, c, t); t != nil {
					out.Tools = append(out.Tools, t)
				}
			}
			return &out, nil
		}
	}
}

// visible returns t as caller c sees it, or nil when c may not call it.
func (h *handler) visible(ctx context.Context, c *Call, t *mcp.Tool) *mcp.Tool {
	def, bound := h.b.Definition(t.Name)
	if !bound {
		if h.opts.Visible != nil && !h.opts.Visible(ctx, c, t.Name, nil) {
			return nil
		}
		return t
	}
	if def.Effect() != registry.EffectRead {
		return nil
	}
	if h.opts.Guard != nil && h.opts.Guard(ctx, t.Name) != nil {
		return nil
	}
	if h.opts.Visible != nil && !h.opts.Visible(ctx, c, t.Name, def) {
		return nil
	}
	var from *mcp.Tool
	if h.opts.Upstream != nil {
		from = h.opts.Upstream(t.Name)
	}
	return listing(t.Name, def, from)
}

// listing is how a bound tool is listed: its name, description and input
// schema as the registry holds them, never as an upstream says. from, when
// given, lends its title, icons and annotations, which are not pinned;
// readOnlyHint follows the registry's effect.
func listing(name string, def *registry.Tool, from *mcp.Tool) *mcp.Tool {
	t := &mcp.Tool{
		Name:        name,
		Description: def.Description(),
		InputSchema: json.RawMessage(def.InputSchema()),
		Annotations: &mcp.ToolAnnotations{},
	}
	if from != nil {
		t.Title, t.Icons = from.Title, from.Icons
		if from.Annotations != nil {
			a := *from.Annotations
			t.Annotations = &a
		}
	}
	t.Annotations.ReadOnlyHint = def.Effect() == registry.EffectRead
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
