// Package anthropiccanon runs the tool_use blocks of an anthropic-sdk-go
// Messages loop through a toolcanon boundary.
//
//	import anthropiccanon "github.com/toolcanon/toolcanon/adapters/anthropic"
//
// Given the content of the model's message, a Runner invokes its tool_use
// blocks through the boundary concurrently (at most WithParallel at a time)
// and returns one tool_result block per tool_use, under the block's id, in
// the message's order: the boundary's AgentJSON as its text, is_error set for
// an ERROR outcome. A refusal or a failed tool is never a Go error: the model
// gets the stable code and fixed hint as the tool's result, and the Results
// say the rest to the harness.
//
// The tools are the boundary's bindings (boundary.Bind). The SDK's
// BetaToolRunner never passes a tool_use id to its tools, so this is a loop
// helper rather than a runner tool. A block without an id gets one minted
// here, recorded as the framework's; a repeated id is refused or replayed as
// the boundary's boundary.WithReplay says, and never runs twice.
package anthropiccanon

import (
	"context"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/turn"
)

// Runner runs the tool_use blocks of one message through a boundary. It is
// immutable and safe for concurrent use.
type Runner struct{ t turn.Runner }

// Option configures a Runner.
type Option = turn.Option

// WithParallel bounds how many tool_use blocks of one message run at once
// (default boundary.DefaultParallel; 1 runs them one after another).
func WithParallel(n int) Option { return turn.Parallel(n) }

// WithIDSource says who chose the ids the Runner is given (default
// boundary.IDFromModel); a proxy that mints them says
// boundary.IDFromFramework, and the records say so.
func WithIDSource(s boundary.IDSource) Option { return turn.Source(s) }

// New returns a Runner over b.
func New(b *boundary.Boundary, opts ...Option) *Runner { return &Runner{t: turn.New(b, opts...)} }

// ToolResults runs the tool_use blocks among content (message.Content;
// other blocks are passed over) and returns a tool_result block for each,
// in order, and the Results for the harness. Send them as the next user
// message: anthropic.NewUserMessage(blocks...), after message.ToParam().
func (r *Runner) ToolResults(ctx context.Context, run boundary.RunContext, content []anthropic.ContentBlockUnion) ([]anthropic.ContentBlockParamUnion, []boundary.Result) {
	var calls []turn.Call
	for _, block := range content {
		if block.Type == "tool_use" {
			tu := block.AsToolUse()
			calls = append(calls, turn.Call{ID: tu.ID, Tool: tu.Name, Input: tu.Input})
		}
	}
	results := r.t.Run(ctx, run, calls)
	blocks := make([]anthropic.ContentBlockParamUnion, len(results))
	for i, res := range results {
		blocks[i] = anthropic.NewToolResultBlock(res.ToolCallID(), string(res.AgentJSON()), res.Status() == canonical.StatusError)
	}
	return blocks, results
}
