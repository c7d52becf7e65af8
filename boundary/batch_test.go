package boundary_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
)

func TestInvokeAllKeepsOrderAndBound(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		var inFlight, most atomic.Int64
		fx.tool.fn = func(ctx context.Context, input []byte) ([]byte, error) {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			// Hold the slot a while, so that an unbounded batch would show.
			time.Sleep(40 * time.Millisecond)
			return fx.raw(), nil
		}
		var calls []boundary.Envelope
		for i := range 6 {
			calls = append(calls, fx.envelope(fmt.Sprintf("call_b%d", 5-i), "kb.search", okInput))
		}
		calls[3].Tool = "kb.nope" // refused in place, not reordered
		res := fx.b.InvokeAll(fx.ctx, fx.run, calls, 2)
		if len(res) != len(calls) {
			t.Fatalf("%d results for %d calls", len(res), len(calls))
		}
		for i, r := range res {
			if r.ToolCallID() != calls[i].ToolCallID {
				t.Errorf("result %d is %s, want %s", i, r.ToolCallID(), calls[i].ToolCallID)
			}
			if want := i != 3; (r.Status() == canonical.StatusReady) != want {
				t.Errorf("result %d: %s %s", i, r.Status(), r.Code())
			}
		}
		if res[3].Code() != canonical.CodeUnknownTool {
			t.Errorf("unknown tool: %s", res[3].Code())
		}
		if m := most.Load(); m != 2 {
			t.Errorf("at most %d calls ran at once, want 2", m)
		}
		fx.calls(t, 5, 5)
	})
}

func TestInvokeAllRepeatedIDWaitsForTheFirst(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
			time.Sleep(30 * time.Millisecond) // the repeat would race the first without the wait
			return fx.raw(), nil
		}
		calls := []boundary.Envelope{
			fx.envelope("call_dup", "kb.search", okInput),
			fx.envelope("call_dup", "kb.search", okInput),
			fx.envelope("call_dup", "kb.search", `{"query":"other"}`),
		}
		res := fx.b.InvokeAll(fx.ctx, fx.run, calls, 0)
		fx.checkReady(t, res[0], canonical.EvidenceFound)
		fx.checkError(t, res[1], "call_dup", canonical.CodeDuplicateToolCall, false)
		fx.checkError(t, res[2], "call_dup", canonical.CodeDuplicateToolCall, false)

		fx.rebuild(nil, boundary.WithReplay())
		for i := range calls {
			calls[i].ToolCallID = "call_dup2"
		}
		res = fx.b.InvokeAll(fx.ctx, fx.run, calls, 0)
		fx.checkReady(t, res[0], canonical.EvidenceFound)
		if !res[1].Replayed() || string(res[1].AgentJSON()) != string(res[0].AgentJSON()) {
			t.Errorf("repeat with the same request: replayed %v, %s %s", res[1].Replayed(), res[1].Code(), res[1].AgentJSON())
		}
		fx.checkError(t, res[2], "call_dup2", canonical.CodeDuplicateToolCall, false)
		fx.calls(t, 2, 2)
	})
}

func TestNewToolCallIDIsValidAndFresh(t *testing.T) {
	a, b := boundary.NewToolCallID(), boundary.NewToolCallID()
	if canonical.ValidateToolCallID(a) != nil || !strings.HasPrefix(a, "tc_") || len(a) != 35 || a == b {
		t.Errorf("minted %q and %q", a, b)
	}
}
