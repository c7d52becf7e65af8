// Package einocanon runs every tool call of an eino ToolsNode through a
// toolcanon boundary.
//
//	import einocanon "github.com/toolcanon/toolcanon/adapters/eino"
//
// Middleware returns a compose.ToolMiddleware for
// compose.ToolsNodeConfig.ToolCallMiddlewares. Each call runs through
// boundary.InvokeWith with the model's CallID, the tool's agent-facing name
// and the run that WithRun put in the context; the tool's own endpoint (eino's
// `next`) is the execution, so the host binds its definitions with
// boundary.BindNext and keeps no second table of tools. The tool's result is
// the boundary's AgentJSON: the bounded projection, or the error object with
// a stable code and a fixed hint. A boundary refusal or a failed tool is
// never a Go error, which would fail the whole ToolsNode.
//
// A streamable tool's stream is read whole (at most WithMaxStreamBytes) and
// recorded as one response; the model gets one chunk, the AgentJSON. An
// enhanced (multimodal) tool is refused with INVALID_ARGUMENT, unrun, as the
// boundary records bytes rather than parts. A call without a CallID gets an
// id minted here (boundary.NewToolCallID), recorded as the framework's. A
// repeated id is refused or replayed as the boundary's boundary.WithReplay
// says, and never runs twice; within one message it waits for its first
// call, so its answer does not depend on timing.
package einocanon

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
)

type runKey struct{}

// WithRun returns ctx carrying run, the run the graph's tool calls belong
// to. A call whose context carries none is refused (INVALID_RUN_ID).
func WithRun(ctx context.Context, run boundary.RunContext) context.Context {
	return context.WithValue(ctx, runKey{}, run)
}

// DefaultMaxStreamBytes bounds what is read of a streamable tool's stream.
const DefaultMaxStreamBytes = 8 << 20

type config struct {
	source    boundary.IDSource
	maxStream int
	running   *running
}

// running holds the (run, id) pairs being invoked: eino runs one message's
// calls in parallel, and a repeated id waits for its first call, so that
// what it gets is decided (DUPLICATE_TOOL_CALL, or the replay) rather than
// raced (TOOL_CALL_IN_PROGRESS).
type running struct {
	mu sync.Mutex
	m  map[[2]string]chan struct{}
}

// hold waits until no call of key runs (or ctx ends) and takes key; release
// gives it back.
func (r *running) hold(ctx context.Context, key [2]string) (release func()) {
	for {
		r.mu.Lock()
		ch, busy := r.m[key]
		if !busy {
			ch = make(chan struct{})
			r.m[key] = ch
			r.mu.Unlock()
			return func() {
				r.mu.Lock()
				delete(r.m, key)
				r.mu.Unlock()
				close(ch)
			}
		}
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return func() {} // the boundary answers DEADLINE_EXCEEDED
		}
	}
}

// Option configures Middleware.
type Option func(*config)

// WithIDSource says who chose the CallIDs (default boundary.IDFromModel): a
// host whose chat model mints ids for a provider that gives none says
// boundary.IDFromFramework, and the records say so.
func WithIDSource(s boundary.IDSource) Option { return func(c *config) { c.source = s } }

// WithMaxStreamBytes bounds what is read of a streamable tool's stream
// (default DefaultMaxStreamBytes); a longer stream is the tool's failure,
// EXECUTION_FAILED.
func WithMaxStreamBytes(n int) Option { return func(c *config) { c.maxStream = n } }

var errNoOutput = errors.New("einocanon: the tool gave no output")

var errStreamTooLong = errors.New("einocanon: the tool's stream is longer than its bound")

// Middleware returns the middleware that runs every tool call of a
// ToolsNode through b.
func Middleware(b *boundary.Boundary, opts ...Option) compose.ToolMiddleware {
	c := config{source: boundary.IDFromModel, maxStream: DefaultMaxStreamBytes, running: &running{m: map[[2]string]chan struct{}{}}}
	for _, o := range opts {
		o(&c)
	}
	return compose.ToolMiddleware{
		Invokable: func(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
				res := c.invoke(ctx, b, in, func(ctx context.Context, call *compose.ToolInput) ([]byte, error) {
					out, err := next(ctx, call)
					if out == nil {
						return nil, errors.Join(err, errNoOutput)
					}
					return []byte(out.Result), err // a failed tool's answer is kept for the harness
				})
				return &compose.ToolOutput{Result: string(res.AgentJSON())}, nil
			}
		},
		Streamable: func(next compose.StreamableToolEndpoint) compose.StreamableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.StreamToolOutput, error) {
				res := c.invoke(ctx, b, in, func(ctx context.Context, call *compose.ToolInput) ([]byte, error) {
					out, err := next(ctx, call)
					if err != nil || out == nil || out.Result == nil {
						return nil, errors.Join(err, errNoOutput)
					}
					return c.drain(out.Result)
				})
				return &compose.StreamToolOutput{Result: schema.StreamReaderFromArray([]string{string(res.AgentJSON())})}, nil
			}
		},
		EnhancedInvokable: func(compose.EnhancedInvokableToolEndpoint) compose.EnhancedInvokableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedInvokableToolOutput, error) {
				return &compose.EnhancedInvokableToolOutput{Result: refusal(in)}, nil
			}
		},
		EnhancedStreamable: func(compose.EnhancedStreamableToolEndpoint) compose.EnhancedStreamableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedStreamableToolOutput, error) {
				return &compose.EnhancedStreamableToolOutput{Result: schema.StreamReaderFromArray([]*schema.ToolResult{refusal(in)})}, nil
			}
		},
	}
}

// invoke runs one call through b with run as its execution, which gets the
// call with the canonical input as its arguments.
func (c config) invoke(ctx context.Context, b *boundary.Boundary, in *compose.ToolInput, run func(context.Context, *compose.ToolInput) ([]byte, error)) boundary.Result {
	env := boundary.Envelope{ToolCallID: in.CallID, ToolCallIDSource: c.source, Tool: in.Name, Input: []byte(in.Arguments)}
	if env.ToolCallID == "" {
		env.ToolCallID, env.ToolCallIDSource = boundary.NewToolCallID(), boundary.IDFromFramework
	}
	rc, _ := ctx.Value(runKey{}).(boundary.RunContext)
	env.RunID = rc.ID
	defer c.running.hold(ctx, [2]string{rc.ID, env.ToolCallID})()
	return b.InvokeWith(ctx, rc, env, boundary.ToolFunc(func(ctx context.Context, input []byte) ([]byte, error) {
		call := *in
		call.Arguments = string(input)
		return run(ctx, &call)
	}))
}

// drain reads the stream whole, within the bound, and closes it.
func (c config) drain(r *schema.StreamReader[string]) ([]byte, error) {
	defer r.Close()
	var out []byte
	for {
		chunk, err := r.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if len(out)+len(chunk) > c.maxStream {
			return nil, errStreamTooLong
		}
		out = append(out, chunk...)
	}
}

// refusal is the answer to an enhanced tool call: nothing runs or is
// recorded.
func refusal(in *compose.ToolInput) *schema.ToolResult {
	res := boundary.Refuse(in.CallID, canonical.CodeInvalidArgument,
		canonical.Errorf(canonical.CodeInvalidArgument, "einocanon: enhanced tool %q is not run through the boundary", in.Name))
	return &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: string(res.AgentJSON())}}}
}
