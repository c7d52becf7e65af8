package gateway

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors/redact"
	"github.com/toolcanon/toolcanon/registry"
)

// Options configure NewServer and Middleware.
type Options struct {
	// Identity adds _meta aliases of the tool_call_id and the run id.
	Identity Identity
	// Runs resolves each call's run. Required.
	Runs RunResolver
	// Guard, when set, is asked before each call of a bound tool; an error
	// refuses the call before anything is recorded or run, with the error's
	// stable code; an error without one is TOOL_DEFINITION_CHANGED (an
	// upstream tool that no longer matches its pin).
	Guard func(ctx context.Context, tool string) error
	// Visible, when set, is asked at each tools/list for each tool the
	// server would list (def is nil for the progress tools); false leaves
	// the tool out of what this caller sees, as for a tool its principal
	// may never call. Tools whose effect is not read and those Guard
	// refuses are never listed, since every call of them is refused.
	Visible func(ctx context.Context, call *Call, tool string, def *registry.Tool) bool
	// Upstream, when set, returns the upstream's definition of a bound
	// tool, or nil: its title and annotations are listed with the tool
	// (readOnlyHint true for a read tool, whatever the upstream says).
	Upstream func(tool string) *mcp.Tool
	// Progress, when set, adds the two built-in progress tools.
	Progress *ProgressTools
	// Observe, when set, is called after each call of a bound tool with its
	// outcome, for metrics and tracing (call.Meta carries the request's
	// trace context). It must not keep or change what it is given.
	Observe func(ctx context.Context, call *Call, res boundary.Result, elapsed time.Duration)
	// Propagator, when set, reads each request's trace context from its
	// _meta before anything else is done with the call, so that the spans
	// of the call (an observer's execute_tool span) are its children. A
	// missing or malformed trace context is ignored.
	Propagator Propagator
	// Logger receives one record per refused or failed call, with the
	// operator-facing cause; nil discards them.
	Logger *slog.Logger
	// Caps bound each principal's calls in flight and new runs per minute.
	Caps Caps
	// Implementation names the server (NewServer only); default "toolcanon".
	Implementation *mcp.Implementation
	// CancelRelay, when set, carries the cancel of a stateless HTTP call
	// to the replica running it (see CancelRelay); without it a cancel
	// reaches only the calls of the replica that receives it.
	CancelRelay CancelRelay

	surface *surface // the prompts, resources and completions a Gateway serves
	tasks   *tasks   // a Gateway's tasks
}

// handler runs tools/call requests through the boundary.
type handler struct {
	b       *boundary.Boundary
	opts    Options
	log     *slog.Logger
	caps    *limiter
	cancels *cancels
	levels  levels
	tasks   *tasks // nil: no tasks (NewServer, Middleware)
}

func newHandler(b *boundary.Boundary, opts Options) (*handler, error) {
	if b == nil {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: nil boundary")
	}
	if opts.Runs == nil {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: a RunResolver is required")
	}
	for _, k := range append(append([]string{}, opts.Identity.ToolCallIDKeys...), opts.Identity.RunIDKeys...) {
		if k == "" || len(k) > 128 {
			return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: _meta key %q must be 1-128 bytes", k)
		}
	}
	if p := opts.Progress; p != nil {
		if err := p.validate(); err != nil {
			return nil, err
		}
		for _, name := range []string{p.FactsTool, p.ReportTool} {
			if _, bound := b.Definition(name); bound {
				return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: progress tool %q is also a bound tool", name)
			}
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &handler{b: b, opts: opts, log: log, caps: newLimiter(opts.Caps), cancels: &cancels{relay: opts.CancelRelay, log: log}, tasks: opts.tasks}, nil
}

// call answers one tools/call. Boundary outcomes are tool results (isError
// for ERROR, with the agent JSON as text); only a call without a run or an
// unauthenticated one gets a JSON-RPC error.
func (h *handler) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if p := h.opts.Propagator; p != nil {
		ctx = p.Extract(ctx, req.Params.Meta)
	}
	c := &Call{Tool: req.Params.Name}
	h.opts.Identity.read(req.Params.Meta, c)
	if extra := req.Extra; extra != nil {
		c.Header, c.Token = extra.Header, extra.TokenInfo
	}
	ctx = withCallToken(ctx, c.Token) // the policy reads an OAuth token's scopes
	if p := h.opts.Progress; p != nil && (c.Tool == p.FactsTool || c.Tool == p.ReportTool) {
		return h.progress(ctx, c, req.Params.Arguments)
	}
	run, err := h.opts.Runs.ResolveRun(ctx, c)
	if err != nil {
		return nil, h.rpcError(c, err)
	}
	start := time.Now()
	var res boundary.Result
	if release, err := h.caps.acquire(run.Principal.Subject, run.ID, h.liveFor(run), start); err != nil {
		res = boundary.Refuse(c.ToolCallID, canonical.CodeOf(err), err)
	} else {
		if r := newRelay(ctx, req, h.levels.set(req.Session), ctx.Value(statelessKey{}) != nil); r != nil {
			ctx = withRelay(ctx, r)
			defer r.finish()
		}
		ctx, untrack := h.track(ctx, c, run)
		if cont, err := continuationOf(req.Params); err != nil {
			res = boundary.Refuse(c.ToolCallID, canonical.CodeOf(err), err)
		} else {
			res = h.invoke(ctx, c, run, req.Params.Arguments, cont)
		}
		untrack()
		release()
	}
	if res.Status() == canonical.StatusError {
		h.log.LogAttrs(ctx, slog.LevelWarn, "tool call refused or failed",
			slog.String("tool", c.Tool), slog.String("tool_call_id", res.ToolCallID()), slog.String("run_id", run.ID),
			slog.String("code", string(res.Code())), slog.Bool("executed", res.Executed()), slog.String("cause", causeText(res.Err())))
	}
	if h.opts.Observe != nil {
		h.opts.Observe(ctx, c, res, time.Since(start))
	}
	if requests, token, ok := res.InputRequired(); ok {
		// The call waits for the agent's input (continue.go).
		return inputResult(requests, token)
	}
	return toolResult(res), nil
}

// liveFor is how long a call keeps its run live at least, for the caps: its
// record's TTL (a run with the store's default, which the gateway does not
// know, counts DefaultRunTTL).
func (h *handler) liveFor(run boundary.RunContext) time.Duration {
	return cmp.Or(run.TTL, DefaultRunTTL)
}

// invoke runs one call through the boundary; cont, when set, continues a
// call that waits for the agent's input.
func (h *handler) invoke(ctx context.Context, c *Call, run boundary.RunContext, args json.RawMessage, cont *boundary.Continuation) boundary.Result {
	if err := canonical.ValidateToolCallID(c.ToolCallID); err != nil {
		// Refused first and always: the gateway never makes up an id.
		return boundary.Refuse("", canonical.CodeInvalidToolCallID, err)
	}
	envRun := c.RunID
	if envRun == "" || sameRun(envRun, run) {
		envRun = run.ID // the run it names, as the resolver found it
	}
	if h.opts.Guard != nil {
		if _, bound := h.b.Definition(c.Tool); bound {
			if err := h.opts.Guard(ctx, c.Tool); err != nil {
				code := canonical.CodeToolDefinitionChanged
				if ce := (*canonical.Error)(nil); errors.As(err, &ce) && ce.Code.Valid() {
					code = ce.Code
				}
				return boundary.Refuse(c.ToolCallID, code, err)
			}
		}
	}
	input := []byte(args)
	if len(input) == 0 {
		input = []byte("{}") // a call without arguments passes none
	}
	return h.b.Invoke(ctx, run, boundary.Envelope{ToolCallID: c.ToolCallID, RunID: envRun, Tool: c.Tool, Input: input, Continue: cont})
}

func (h *handler) rpcError(c *Call, err error) error {
	h.log.Warn("tool call without a run", slog.String("tool", c.Tool), slog.String("cause", causeText(err)))
	switch {
	case errors.Is(err, ErrUnauthenticated):
		return &jsonrpc.Error{Code: CodeUnauthenticated, Message: "toolcanon: not authenticated"}
	case errors.Is(err, ErrNoRun):
		return &jsonrpc.Error{Code: CodeNoRun, Message: fmt.Sprintf("toolcanon: this call names no run; pass its id in _meta[%q]", MetaRunID)}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "toolcanon: the run could not be resolved"}
}

// maxCauseBytes bounds the cause a log record carries.
const maxCauseBytes = 1024

// causeText is an operator-facing cause as the log carries it: redacted,
// since an upstream's error text may quote what it was sent or holds, and
// bounded.
func causeText(err error) string {
	if err == nil {
		return ""
	}
	return cutText(redact.String(err.Error()), maxCauseBytes)
}

// toolResult turns a boundary outcome into what the agent receives: the
// agent JSON as text (and as structured content when READY), isError for
// ERROR, so that the model reads the code and its hint.
func toolResult(res boundary.Result) *mcp.CallToolResult {
	return toolResultOf(res.Status(), res.AgentJSON())
}

// toolResultOf is toolResult of an outcome's status and agent JSON.
func toolResultOf(status canonical.Status, out []byte) *mcp.CallToolResult {
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}
	if status != canonical.StatusReady {
		r.IsError = true
	} else if len(out) > 0 && out[0] == '{' {
		text, blocks := attachments(out)
		r.Content = append([]mcp.Content{&mcp.TextContent{Text: string(text)}}, blocks...)
		r.StructuredContent = json.RawMessage(text)
	}
	return r
}

// attachments turns the "attachments" of an MCP-result projection (package
// mcpresult, Media) into content blocks after the text, and takes the
// "media" data that ends it out of the text: the model reads the text, the
// client shows the blocks.
func attachments(out []byte) (text []byte, blocks []mcp.Content) {
	var p struct {
		Attachments []struct {
			Type     string `json:"type"`
			MIMEType string `json:"mimeType"`
			URI      string `json:"uri"`
			Name     string `json:"name"`
			Text     string `json:"text"`
			Media    *int   `json:"media"`
		} `json:"attachments"`
		Media []string `json:"media"`
	}
	if !bytes.Contains(out, []byte(`"attachments":[`)) || json.Unmarshal(out, &p) != nil || len(p.Attachments) == 0 {
		return out, nil
	}
	text = out
	if len(p.Media) > 0 {
		if i := bytes.LastIndex(out, []byte(`,"media":[`)); i > 0 {
			text = append(append([]byte{}, out[:i]...), '}')
		}
	}
	for _, a := range p.Attachments {
		var data []byte
		if a.Media != nil && *a.Media >= 0 && *a.Media < len(p.Media) {
			var err error
			if data, err = base64.StdEncoding.DecodeString(p.Media[*a.Media]); err != nil {
				continue
			}
		}
		switch {
		case a.Type == "image" && data != nil:
			blocks = append(blocks, &mcp.ImageContent{Data: data, MIMEType: a.MIMEType})
		case a.Type == "audio" && data != nil:
			blocks = append(blocks, &mcp.AudioContent{Data: data, MIMEType: a.MIMEType})
		case a.Type == "resource_link":
			blocks = append(blocks, &mcp.ResourceLink{URI: a.URI, Name: cmp.Or(a.Name, a.URI), MIMEType: a.MIMEType})
		case a.Type == "resource":
			blocks = append(blocks, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: a.URI, MIMEType: a.MIMEType, Text: a.Text}})
		}
	}
	return text, blocks
}
