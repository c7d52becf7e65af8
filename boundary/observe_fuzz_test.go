package boundary_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/observe"
)

// FuzzObserverSeesOnlyValidatedIdentity drives Invoke with arbitrary ids,
// tool names, envelope runs, inputs and raw responses, and checks what the
// observer is told: an id only when valid, a tool only when bound, the run
// context's run, one Start and one End, phases in order and contiguous, only
// stable codes, and an outcome equal to the result.
func FuzzObserverSeesOnlyValidatedIdentity(f *testing.F) {
	f.Add("call_1", "kb.search", true, []byte(`{"query":"redis ttl"}`), []byte(`{"hits":[{"source":"kb","document_id":"d1"}]}`), false)
	f.Add("call 1", "kb.search", true, []byte(`{"query":"x"}`), []byte(`{"hits":[]}`), false)
	f.Add("call_2", "kb.nope", true, []byte(`{"query":"x"}`), []byte(`{}`), false)
	f.Add("call_3", "kb.search", false, []byte(`{"query":"x"}`), []byte(`{}`), false)
	f.Add("call_4", "kb.write", true, []byte(`{"query":"x"}`), []byte(`{}`), false)
	f.Add("call_5", "kb.search", true, []byte(`{"query":1}`), []byte(`{}`), false)
	f.Add("call_6", "kb.search", true, []byte(`{"query":"x"}`), []byte(`not json`), false)
	f.Add("call_7", "kb.search", true, []byte(`{"query":"x"}`), []byte(nil), true)
	f.Add("", "", true, []byte(``), []byte(``), false)

	fx := newFixture(f, factories[0])
	rec := &recorder{}
	fx.rebuild(nil, boundary.WithObserver(rec))
	bound := fx.b.Tools()
	f.Fuzz(func(t *testing.T, id, tool string, sameRun bool, input, raw []byte, toolFails bool) {
		rec.reset()
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
			if toolFails {
				return nil, errors.New(string(raw))
			}
			return raw, nil
		}
		env := boundary.Envelope{ToolCallID: id, RunID: fx.run.ID, Tool: tool, Input: input}
		if !sameRun {
			env.RunID = id
		}
		res := fx.b.Invoke(context.Background(), fx.run, env)
		l := rec.only(t)

		want := observe.Call{RunID: fx.run.ID, Start: l.call.Start}
		if canonical.ValidateToolCallID(id) == nil {
			want.ToolCallID = id
		}
		if slices.Contains(bound, tool) {
			want.Tool, want.Name, want.Version = tool, l.call.Name, "1.0.0"
			if l.call.Name == "" {
				t.Errorf("bound tool %q reported without its definition", tool)
			}
		}
		if l.call != want {
			t.Fatalf("call = %+v, want %+v", l.call, want)
		}
		if l.starts != 1 || l.ends != 1 {
			t.Fatalf("Start %d, End %d", l.starts, l.ends)
		}
		if len(l.phases) == 0 || l.phases[0].Phase != observe.Preflight {
			t.Fatalf("phases %v do not begin with preflight", phaseList(l.phases))
		}
		at := l.call.Start
		for i, e := range l.phases {
			if i > 0 && e.Phase <= l.phases[i-1].Phase {
				t.Fatalf("phases out of order: %v", phaseList(l.phases))
			}
			if e.Code != "" && !e.Code.Valid() {
				t.Fatalf("phase %s reported code %q", e.Phase, e.Code)
			}
			if e.Code != "" && i != len(l.phases)-1 && e.Phase != observe.Tool && e.Phase != observe.Projection {
				t.Fatalf("phase %s failed but the call went on: %v", e.Phase, phaseList(l.phases))
			}
			if !e.Start.Equal(at) || e.Duration < 0 {
				t.Fatalf("phase %s is not contiguous", e.Phase)
			}
			at = e.Start.Add(e.Duration)
		}
		o := l.out
		if o.Status != res.Status() || o.Code != res.Code() || o.Evidence != res.Evidence() || o.Executed != res.Executed() ||
			o.AgentBytes != len(res.AgentJSON()) {
			t.Fatalf("outcome %+v differs from the result (%s %s %s)", o, res.Status(), res.Code(), res.Evidence())
		}
		if o.Code != "" && !o.Code.Valid() {
			t.Fatalf("outcome code %q", o.Code)
		}
	})
}
