// Package mcpgocanon runs every tools/call of an mcp-go server through a
// toolcanon boundary.
//
//	import mcpgocanon "github.com/toolcanon/toolcanon/adapters/mcpgo"
//
// Middleware returns a server.ToolHandlerMiddleware for
// server.WithToolHandlerMiddleware (or MCPServer.Use). Each call runs
// through boundary.InvokeWith under the tool's name, with the tool call id
// the client put in the request's _meta (MetaToolCallID, as the toolcanon
// gateway reads it) and the run a RunResolver names; the server's own
// handler (mcp-go's `next`) is the execution, so the host binds its
// definitions with boundary.BindNext and keeps no second table of tools.
//
// The handler gets exactly the canonical input that was recorded, and its
// whole CallToolResult, as JSON, is the record's raw response, as under the
// gateway: a projector written for one serves the other. A result with
// isError is the tool's failure (EXECUTION_FAILED, its JSON kept as raw
// data for operators). What the client gets is one text content, the
// boundary's AgentJSON: the bounded projection, or the error object with a
// stable code and a fixed hint, with isError set for an ERROR outcome. A
// boundary refusal or a failed tool is never a JSON-RPC error; only a call
// whose run cannot be resolved is (nothing is recorded for it).
//
// A call without a tool call id gets one minted here (boundary.NewToolCallID),
// recorded as the framework's. A repeated id is refused or replayed as the
// boundary's boundary.WithReplay says, and never runs twice. A tool the
// boundary does not bind is refused like any unknown tool: nothing runs
// outside it.
package mcpgocanon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
)

// MetaToolCallID is the _meta key a client names a call's tool_call_id
// under; the toolcanon gateway reads the same key.
const MetaToolCallID = "io.github.toolcanon/toolCallId"

// RunResolver names the run a call belongs to, from what the request
// carries (its headers on HTTP, its _meta) and what the host knows of the
// caller. An error refuses the call with a JSON-RPC error and records
// nothing.
type RunResolver func(ctx context.Context, req mcp.CallToolRequest) (boundary.RunContext, error)

// ErrToolError is the error of a tool whose result has isError: the tool
// ran and reported a failure. The record is ERROR/EXECUTION_FAILED and
// keeps the result as raw data; the client sees only the code and hint.
var ErrToolError = errors.New("mcpgocanon: the tool returned an error result")

var errNoResult = errors.New("mcpgocanon: the tool's handler returned no result")

type config struct {
	source boundary.IDSource
	keys   []string // the _meta keys of the id, MetaToolCallID first
}

// Option configures Middleware.
type Option func(*config)

// WithIDSource says who chose the ids clients send (default
// boundary.IDFromModel): a host whose clients mint them says
// boundary.IDFromFramework, and the records say so.
func WithIDSource(s boundary.IDSource) Option { return func(c *config) { c.source = s } }

// WithIDKeys adds _meta keys read, in order, when MetaToolCallID is absent:
// for clients that already send a call id under a name of their own.
func WithIDKeys(keys ...string) Option {
	return func(c *config) { c.keys = append(c.keys, keys...) }
}

// Middleware returns the middleware that runs every tools/call of an
// mcp-go server through b, in the run runs names.
func Middleware(b *boundary.Boundary, runs RunResolver, opts ...Option) server.ToolHandlerMiddleware {
	c := config{source: boundary.IDFromModel, keys: []string{MetaToolCallID}}
	for _, o := range opts {
		o(&c)
	}
	unusable := b == nil || runs == nil
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if unusable {
				return nil, canonical.Errorf(canonical.CodeInvalidArgument, "mcpgocanon: nil boundary or run resolver")
			}
			run, err := runs(ctx, req)
			if err != nil {
				return nil, err
			}
			env := boundary.Envelope{ToolCallID: c.id(req.Params.Meta), ToolCallIDSource: c.source,
				RunID: run.ID, Tool: req.Params.Name, Input: arguments(req.Params)}
			if env.ToolCallID == "" {
				env.ToolCallID, env.ToolCallIDSource = boundary.NewToolCallID(), boundary.IDFromFramework
			}
			res := b.InvokeWith(ctx, run, env, boundary.ToolFunc(func(ctx context.Context, input []byte) ([]byte, error) {
				return call(ctx, next, req, input)
			}))
			out := mcp.NewToolResultText(string(res.AgentJSON()))
			out.IsError = res.Status() == canonical.StatusError
			return out, nil
		}
	}
}

// id is the call's tool_call_id from _meta, or "" when it names none. A
// value that is not a string is passed on as its JSON, which the boundary
// refuses as an invalid id rather than taking another.
func (c config) id(meta *mcp.Meta) string {
	if meta == nil {
		return ""
	}
	for _, k := range c.keys {
		v, ok := meta.AdditionalFields[k]
		if !ok {
			continue
		}
		if s, ok := v.(string); ok {
			return s
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	return ""
}

// arguments are the call's arguments as the client sent them: the bytes
// off the wire when mcp-go kept them, else their JSON; none is {}.
func arguments(p mcp.CallToolParams) []byte {
	if raw := bytes.TrimSpace(p.RawArguments); len(raw) > 0 {
		return raw
	}
	if p.Arguments == nil {
		return []byte(`{}`)
	}
	b, err := json.Marshal(p.Arguments)
	if err != nil {
		return []byte(`null`) // refused by the schema check as INVALID_INPUT
	}
	return b
}

// call runs the server's handler with exactly input, the canonical input
// that was recorded, and returns its whole result as the raw response. The
// arguments are decoded as mcp-go decodes them off the wire (numbers as
// float64, for GetInt and its kin), and kept as bytes for BindArguments,
// which so sees every digit.
func call(ctx context.Context, next server.ToolHandlerFunc, req mcp.CallToolRequest, input []byte) ([]byte, error) {
	var args map[string]any
	if err := json.Unmarshal(input, &args); err != nil {
		return nil, err
	}
	req.Params.Arguments, req.Params.RawArguments = args, json.RawMessage(input)
	res, err := next(ctx, req)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, errNoResult
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return raw, ErrToolError
	}
	return raw, nil
}
