// Package openaicanon runs the tool calls of an openai-go loop through a
// toolcanon boundary, for the Chat Completions and the Responses APIs.
//
//	import openaicanon "github.com/toolcanon/toolcanon/adapters/openai"
//
// Given the model's tool calls of one turn, a Runner invokes them through
// the boundary concurrently (at most WithParallel at a time) and returns
// what goes back to the model: one tool message (Chat Completions) or
// function_call_output item (Responses) per call, under the model's own id,
// in the model's order. A refusal or a failed tool is never a Go error: the
// model gets the boundary's error object (stable code, fixed hint) as the
// call's output, and the Results say the rest to the harness.
//
// The tools are the boundary's bindings (boundary.Bind): the Runner holds
// no tools of its own. A call that names no function (a custom tool call)
// is UNKNOWN_TOOL. A call without an id gets one minted here
// (boundary.NewToolCallID), recorded as the framework's; a repeated id is
// refused or replayed as the boundary's boundary.WithReplay says, and never
// runs twice.
package openaicanon

import (
	"context"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/turn"
)

// Runner runs one model turn's tool calls through a boundary. It is
// immutable and safe for concurrent use.
type Runner struct{ t turn.Runner }

// Option configures a Runner.
type Option = turn.Option

// WithParallel bounds how many calls of one turn run at once (default
// boundary.DefaultParallel; 1 runs them one after another).
func WithParallel(n int) Option { return turn.Parallel(n) }

// WithIDSource says who chose the ids the Runner is given (default
// boundary.IDFromModel): a host whose ids a framework or proxy minted says
// boundary.IDFromFramework, and the records say so.
func WithIDSource(s boundary.IDSource) Option { return turn.Source(s) }

// New returns a Runner over b.
func New(b *boundary.Boundary, opts ...Option) *Runner { return &Runner{t: turn.New(b, opts...)} }

// unknown refuses a custom tool call, which no binding can serve.
func unknown(custom bool) canonical.Code {
	if custom {
		return canonical.CodeUnknownTool
	}
	return ""
}

// ChatToolMessages runs the tool calls of a Chat Completions message
// (choice.Message.ToolCalls) and returns one tool message per call, in the
// calls' order, each with its call's id and the boundary's AgentJSON as its
// content, and the Results for the harness. Append the assistant message
// (message.ToParam()) and then the tool messages to the conversation.
func (r *Runner) ChatToolMessages(ctx context.Context, run boundary.RunContext, calls []openai.ChatCompletionMessageToolCallUnion) ([]openai.ChatCompletionMessageParamUnion, []boundary.Result) {
	cs := make([]turn.Call, len(calls))
	for i, tc := range calls {
		cs[i] = turn.Call{ID: tc.ID, Tool: tc.Function.Name, Input: []byte(tc.Function.Arguments), Refuse: unknown(tc.Type == "custom")}
		if tc.Type == "custom" {
			cs[i].Tool = tc.Custom.Name
		}
	}
	results := r.t.Run(ctx, run, cs)
	msgs := make([]openai.ChatCompletionMessageParamUnion, len(results))
	for i, res := range results {
		msgs[i] = openai.ToolMessage(string(res.AgentJSON()), res.ToolCallID())
	}
	return msgs, results
}

// ResponseOutputs runs the function calls among a response's output items
// (response.Output; other items are passed over) and returns one
// function_call_output input item per call (custom_tool_call_output for a
// custom tool call, which is UNKNOWN_TOOL), in the calls' order, with its
// call_id and the boundary's AgentJSON as its output, and the Results for
// the harness. Send them as the next request's input (with
// PreviousResponseID, or after the response's output items).
func (r *Runner) ResponseOutputs(ctx context.Context, run boundary.RunContext, output []responses.ResponseOutputItemUnion) ([]responses.ResponseInputItemUnionParam, []boundary.Result) {
	var cs []turn.Call
	for _, item := range output {
		switch item.Type {
		case "function_call":
			fc := item.AsFunctionCall()
			cs = append(cs, turn.Call{ID: fc.CallID, Tool: fc.Name, Input: []byte(fc.Arguments)})
		case "custom_tool_call":
			cc := item.AsCustomToolCall()
			cs = append(cs, turn.Call{ID: cc.CallID, Tool: cc.Name, Refuse: canonical.CodeUnknownTool})
		}
	}
	results := r.t.Run(ctx, run, cs)
	items := make([]responses.ResponseInputItemUnionParam, len(results))
	for i, res := range results {
		if cs[i].Refuse != "" {
			items[i] = responses.ResponseInputItemParamOfCustomToolCallOutput(res.ToolCallID(), string(res.AgentJSON()))
			continue
		}
		// In v3.100 the helper no longer takes the id: it is set here.
		items[i] = responses.ResponseInputItemParamOfFunctionCallOutput(string(res.AgentJSON()))
		items[i].OfFunctionCallOutput.CallID = openai.String(res.ToolCallID())
	}
	return items, results
}
