package boundary_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/registry"
)

// next stands for a framework's own continuation: it counts its calls and
// keeps the input it was given.
type next struct {
	calls atomic.Int64
	input atomic.Value
	raw   []byte
	err   error
}

func (n *next) Call(_ context.Context, input []byte) ([]byte, error) {
	n.calls.Add(1)
	n.input.Store(string(input))
	return n.raw, n.err
}

// tooled is w for a call made under another agent-facing name.
func (w want) tooled(name string) want { w.tool = name; return w }

func TestInvokeWithRunsTheCallersExecution(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.rebuild(nil, boundary.BindNext("kb.next", "kb.search", "1.0.0", fx.proj))
		n := &next{raw: fx.raw()}

		res := fx.b.InvokeWith(fx.ctx, fx.run, fx.envelope("call_n1", "kb.next", `{ "query": "redis ttl", "limit": 5 }`), n)
		fx.checkReady(t, res, canonical.EvidenceFound)
		fx.checkRecord(t, "call_n1", wantRec(canonical.StatusReady, canonical.EvidenceFound, "", fx.raw(), res.AgentJSON()).tooled("kb.next"))
		if got := n.input.Load(); got != `{"limit":5,"query":"redis ttl"}` {
			t.Errorf("the continuation got %v, want the canonical input", got)
		}
		fx.calls(t, 0, 1) // the bound fake tool never ran

		// The same id again: refused, and the continuation does not run twice.
		again := fx.b.InvokeWith(fx.ctx, fx.run, fx.envelope("call_n1", "kb.next", okInput), n)
		fx.checkError(t, again, "call_n1", canonical.CodeDuplicateToolCall, false)
		if n.calls.Load() != 1 {
			t.Errorf("continuation ran %d times, want 1", n.calls.Load())
		}

		// A binding with a tool of its own: InvokeWith runs the caller's.
		fx.checkReady(t, fx.b.InvokeWith(fx.ctx, fx.run, fx.envelope("call_n2", "kb.search", okInput), n), canonical.EvidenceFound)
		fx.calls(t, 0, 2)
		if n.calls.Load() != 2 {
			t.Errorf("continuation ran %d times, want 2", n.calls.Load())
		}
	})
}

func TestInvokeWithRefusals(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.rebuild(nil, boundary.BindNext("kb.next", "kb.search", "1.0.0", fx.proj))
		// A BindNext binding has no execution of its own.
		fx.checkError(t, fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_r1", "kb.next", okInput)), "call_r1", canonical.CodeInvalidArgument, false)
		fx.checkAbsent(t, "call_r1")
		// Nor does a nil continuation, of either kind.
		fx.checkError(t, fx.b.InvokeWith(fx.ctx, fx.run, fx.envelope("call_r2", "kb.next", okInput), nil), "call_r2", canonical.CodeInvalidArgument, false)
		fx.checkError(t, fx.b.InvokeWith(fx.ctx, fx.run, fx.envelope("call_r3", "kb.search", okInput), boundary.ToolFunc(nil)),
			"call_r3", canonical.CodeInvalidArgument, false)
		fx.checkNothingWritten(t)

		// A failing continuation is the tool's failure, recorded with what it answered.
		n := &next{raw: []byte(`{"upstream":"` + fx.marker + `"}`), err: errors.New("upstream 503 " + fx.marker)}
		fx.checkError(t, fx.b.InvokeWith(fx.ctx, fx.run, fx.envelope("call_r4", "kb.next", okInput), n), "call_r4", canonical.CodeExecutionFailed, true)
		fx.checkRecord(t, "call_r4", wantRec(canonical.StatusError, canonical.EvidenceError, canonical.CodeExecutionFailed, n.raw, nil).tooled("kb.next"))
		fx.calls(t, 0, 0)
	})
}

func TestBindNextChecksAsBindDoes(t *testing.T) {
	reg := testRegistry(t)
	p := canonical.ProjectorFunc(func(context.Context, canonical.Call, []byte) (canonical.Projection, error) {
		return canonical.Projection{}, nil
	})
	for name, opt := range map[string]boundary.Option{
		"unknown definition": boundary.BindNext("kb.x", "kb.nope", "1.0.0", p),
		"nil projector":      boundary.BindNext("kb.x", "kb.search", "1.0.0", nil),
		"malformed name":     boundary.BindNext("kb x", "kb.search", "1.0.0", p),
	} {
		if _, err := boundary.New(memstore.New(), reg, testPolicy("m"), opt); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	_, err := boundary.New(memstore.New(), reg, testPolicy("m"),
		boundary.BindNext("kb.x", "kb.search", "1.0.0", p), boundary.Bind("kb.x", "kb.search", "1.0.0", boundary.ToolFunc(func(context.Context, []byte) ([]byte, error) { return nil, nil }), p))
	if canonical.CodeOf(err) != canonical.CodeInvalidArgument {
		t.Errorf("a name bound twice: %v", err)
	}
}

func TestToolCallIDSourceIsRecordedAndReplayMatchesIt(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.rebuild(nil, boundary.WithReplay())
		env := fx.envelope("call_src", "kb.search", okInput)
		env.ToolCallIDSource = boundary.IDFromFramework
		first := fx.b.Invoke(fx.ctx, fx.run, env)
		fx.checkReady(t, first, canonical.EvidenceFound)
		rec := fx.checkRecord(t, "call_src", wantRec(canonical.StatusReady, canonical.EvidenceFound, "", fx.raw(), first.AgentJSON()))
		var req map[string]any
		if err := json.Unmarshal(rec.Request, &req); err != nil || req["tool_call_id_source"] != "framework" {
			t.Errorf("request %s does not say the framework chose the id", rec.Request)
		}
		if c, err := registry.Canonicalize(rec.Request); err != nil || string(c) != string(rec.Request) {
			t.Errorf("request is not canonical: %s", rec.Request)
		}

		// The same id from the same source replays; from the model it is another call.
		again := fx.b.Invoke(fx.ctx, fx.run, env)
		if !again.Replayed() || string(again.AgentJSON()) != string(first.AgentJSON()) {
			t.Errorf("same source: replayed %v, %s", again.Replayed(), again.AgentJSON())
		}
		env.ToolCallIDSource = boundary.IDFromModel
		fx.checkError(t, fx.b.Invoke(fx.ctx, fx.run, env), "call_src", canonical.CodeDuplicateToolCall, false)
		fx.calls(t, 1, 1)

		// A source the boundary does not know is refused before anything is written.
		env = fx.envelope("call_src2", "kb.search", okInput)
		env.ToolCallIDSource = "llm"
		fx.checkError(t, fx.b.Invoke(fx.ctx, fx.run, env), "call_src2", canonical.CodeInvalidArgument, false)
		fx.checkAbsent(t, "call_src2")

		// An envelope that does not say leaves the key out.
		res := fx.invoke("call_src3")
		rec = fx.checkRecord(t, "call_src3", wantRec(canonical.StatusReady, canonical.EvidenceFound, "", fx.raw(), res.AgentJSON()))
		if strings.Contains(string(rec.Request), "tool_call_id_source") {
			t.Errorf("request %s names a source nobody gave", rec.Request)
		}
	})
}
