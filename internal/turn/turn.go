// Package turn runs the tool calls of one model turn through a boundary for
// the loop adapters (adapters/openai, adapters/anthropic): an id for a call
// that has none, calls the adapter refuses in their place, the rest through
// boundary.InvokeAll.
package turn

import (
	"context"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
)

// Runner is what the adapters' Runners hold.
type Runner struct {
	B        *boundary.Boundary
	Parallel int               // calls at once; < 1 is boundary.DefaultParallel
	Source   boundary.IDSource // who chose the ids the model gives; "" is boundary.IDFromModel
}

// Option configures a Runner; the adapters' WithParallel and WithIDSource
// return one.
type Option func(*Runner)

// New returns a Runner over b.
func New(b *boundary.Boundary, opts ...Option) Runner {
	r := Runner{B: b}
	for _, o := range opts {
		o(&r)
	}
	return r
}

// Parallel bounds the calls that run at once.
func Parallel(n int) Option { return func(r *Runner) { r.Parallel = n } }

// Source says who chose the ids.
func Source(s boundary.IDSource) Option { return func(r *Runner) { r.Source = s } }

// Call is one tool call as the model named it.
type Call struct {
	ID, Tool string
	Input    []byte
	Refuse   canonical.Code // set: refused in its place with this code, nothing recorded
}

// Run invokes the calls and returns their Results in order. A call without
// an id gets boundary.NewToolCallID, recorded as the framework's.
func (r Runner) Run(ctx context.Context, run boundary.RunContext, calls []Call) []boundary.Result {
	src := r.Source
	if src == "" {
		src = boundary.IDFromModel
	}
	envs := make([]boundary.Envelope, 0, len(calls))
	at := make([]int, 0, len(calls))
	out := make([]boundary.Result, len(calls))
	for i, c := range calls {
		env := boundary.Envelope{ToolCallID: c.ID, ToolCallIDSource: src, RunID: run.ID, Tool: c.Tool, Input: c.Input}
		if env.ToolCallID == "" {
			env.ToolCallID, env.ToolCallIDSource = boundary.NewToolCallID(), boundary.IDFromFramework
		}
		if c.Refuse != "" {
			out[i] = boundary.Refuse(env.ToolCallID, c.Refuse, canonical.Errorf(c.Refuse, "refused by the adapter: %q", c.Tool))
			continue
		}
		envs = append(envs, env)
		at = append(at, i)
	}
	for j, res := range r.B.InvokeAll(ctx, run, envs, r.Parallel) {
		out[at[j]] = res
	}
	return out
}
