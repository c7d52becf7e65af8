package gateway

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
)

// Middleware returns a receiving middleware for an existing go-sdk server
// (Server.AddReceivingMiddleware): every tools/call runs through b, with
// the identity, run, guard and progress tools of opts, exactly as under
// NewServer. Bind the server's own tools in b with ServerTool: the server's
// handler then runs as the tool, with exactly the canonical input that was
// recorded, and its whole CallToolResult is the record's raw response.
//
// tools/list is answered from the server's own list, keeping only the bound
// tools, each as the registry defines it, and the progress tools.
func Middleware(b *boundary.Boundary, opts Options) (mcp.Middleware, error) {
	h, err := newHandler(b, opts)
	if err != nil {
		return nil, err
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case methodCallTool:
				if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
					ctx = context.WithValue(ctx, passKey{}, &passthrough{next: next, req: r})
					return asResult(h.call(ctx, r))
				}
			case methodListTools:
				res, err := next(ctx, method, req)
				if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
					return h.filter(lr), nil
				}
				return res, err
			}
			return next(ctx, method, req)
		}
	}, nil
}

// filter keeps the bound tools of a list page, as the registry defines
// them, and adds the progress tools to the last page.
func (h *handler) filter(lr *mcp.ListToolsResult) *mcp.ListToolsResult {
	out := *lr
	out.Tools = []*mcp.Tool{}
	for _, t := range lr.Tools {
		if t == nil {
			continue
		}
		if def, ok := h.b.Definition(t.Name); ok {
			out.Tools = append(out.Tools, listing(t.Name, def, t))
		}
	}
	if p := h.opts.Progress; p != nil && lr.NextCursor == "" {
		out.Tools = append(out.Tools, p.listings()...)
	}
	return &out
}

// ServerTool is the boundary.Tool to bind, under Middleware, for the tools
// the server implements itself. Outside Middleware it fails every call.
var ServerTool boundary.Tool = serverTool{}

// ErrToolError is the error of a tool whose result has isError: the tool
// ran and reported a failure. The record is ERROR/EXECUTION_FAILED and
// keeps the result as raw data for operators; the agent sees only the code.
var ErrToolError = errors.New("gateway: the tool returned an error result")

type passKey struct{}

// passthrough is the rest of the server's chain for the call in progress.
type passthrough struct {
	next mcp.MethodHandler
	req  *mcp.CallToolRequest
}

type serverTool struct{}

// Call runs the rest of the server's chain for the call in progress.
func (serverTool) Call(ctx context.Context, input []byte) ([]byte, error) {
	pt, _ := ctx.Value(passKey{}).(*passthrough)
	if pt == nil {
		return nil, errors.New("gateway: ServerTool runs only inside Middleware")
	}
	req := *pt.req
	params := *pt.req.Params
	params.Arguments = json.RawMessage(input)
	req.Params = &params
	res, err := pt.next(ctx, methodCallTool, &req)
	if err != nil {
		return nil, err
	}
	r, ok := res.(*mcp.CallToolResult)
	if !ok || r == nil {
		return nil, errors.New("gateway: the server's handler returned no tool result")
	}
	return resultRaw(r)
}

// resultRaw is a tool result as the record keeps it: the whole
// CallToolResult as JSON; an isError result is returned with ErrToolError.
func resultRaw(r *mcp.CallToolResult) ([]byte, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if r.IsError {
		return raw, ErrToolError
	}
	return raw, nil
}
