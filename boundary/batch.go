package boundary

import (
	"context"
	"sync"

	"github.com/toolcanon/toolcanon/canonical"
)

// DefaultParallel is how many calls of one turn InvokeAll runs at once when
// it is given no bound.
const DefaultParallel = 8

// InvokeAll runs the tool calls of one model turn through Invoke, at most
// parallel at a time (DefaultParallel when parallel < 1), and returns their
// Results in the calls' order. A tool_call_id that repeats within the turn
// runs only after its first call has finished, so that what it gets is
// decided, not raced: DUPLICATE_TOOL_CALL, or under WithReplay the first
// call's stored outcome when the requests match. Nothing runs twice.
func (b *Boundary) InvokeAll(ctx context.Context, run RunContext, calls []Envelope, parallel int) []Result {
	if parallel < 1 {
		parallel = DefaultParallel
	}
	out := make([]Result, len(calls))
	seen := make(map[string]bool, len(calls))
	var first, later []int
	for i, c := range calls {
		if seen[c.ToolCallID] {
			later = append(later, i)
			continue
		}
		seen[c.ToolCallID] = true
		first = append(first, i)
	}
	for _, round := range [][]int{first, later} {
		sem := make(chan struct{}, parallel)
		var wg sync.WaitGroup
		for _, i := range round {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				out[i] = b.Invoke(ctx, run, calls[i])
			}()
		}
		wg.Wait()
	}
	return out
}

// NewToolCallID mints a tool_call_id for a call the model gave none: "tc_"
// and 32 random hex digits. An Envelope that carries one says
// IDFromFramework.
func NewToolCallID() string { return "tc_" + canonical.NewOwner() }
