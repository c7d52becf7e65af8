package observe_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/observe"
)

type ctxKey string

// tagger records the order of its calls in a shared log, and tags the
// context it returns so that the next observer can see it.
type tagger struct {
	name    string
	log     *[]string
	opted   bool
	panics  bool
	seenCtx []string // the tags each of its calls saw
}

func (g *tagger) Start(ctx context.Context, _ observe.Call) context.Context {
	*g.log = append(*g.log, g.name+".start")
	g.seenCtx = append(g.seenCtx, tags(ctx))
	if g.panics {
		panic("start")
	}
	return context.WithValue(ctx, ctxKey(g.name), true)
}

func (g *tagger) Phase(ctx context.Context, _ observe.Call, e observe.PhaseEvent) {
	*g.log = append(*g.log, g.name+"."+e.Phase.String())
	if g.panics {
		panic("phase")
	}
}

func (g *tagger) End(ctx context.Context, _ observe.Call, o observe.Outcome) {
	*g.log = append(*g.log, g.name+".end")
	g.seenCtx = append(g.seenCtx, tags(ctx))
	if g.panics {
		panic("end")
	}
}

func (g *tagger) ObservesResults() bool { return g.opted }

func (g *tagger) Result(_ context.Context, _ observe.Call, agentJSON []byte) {
	*g.log = append(*g.log, g.name+".result:"+string(agentJSON))
}

func tags(ctx context.Context) string {
	s := ""
	for _, k := range []string{"a", "b", "c"} {
		if ctx.Value(ctxKey(k)) != nil {
			s += k
		}
	}
	return s
}

func TestJoinCallsInOrderAndChainsContexts(t *testing.T) {
	var log []string
	a := &tagger{name: "a", log: &log}
	b := &tagger{name: "b", log: &log, panics: true}
	c := &tagger{name: "c", log: &log, opted: true}
	j := observe.Join(a, nil, b, c)
	ctx := j.Start(context.Background(), observe.Call{})
	j.Phase(ctx, observe.Call{}, observe.PhaseEvent{Phase: observe.Tool})
	r, ok := j.(observe.ResultObserver)
	if !ok || !r.ObservesResults() {
		t.Fatal("a join with an opted-in member must observe results")
	}
	r.Result(ctx, observe.Call{}, []byte(`{"x":1}`))
	j.End(ctx, observe.Call{}, observe.Outcome{})

	want := []string{"a.start", "b.start", "c.start", "a.tool", "b.tool", "c.tool", "c.result:{\"x\":1}", "a.end", "b.end", "c.end"}
	if len(log) != len(want) {
		t.Fatalf("calls = %q, want %q", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("calls = %q, want %q", log, want)
		}
	}
	// a's context reached c; b panicked, so its tag is missing, and c still ran.
	if c.seenCtx[0] != "a" || tags(ctx) != "ac" || a.seenCtx[1] != "ac" {
		t.Errorf("contexts seen: a %q, c %q; final %q", a.seenCtx, c.seenCtx, tags(ctx))
	}
}

func TestJoinWithoutOptInObservesNoResults(t *testing.T) {
	var log []string
	j := observe.Join(&tagger{name: "a", log: &log}, &tagger{name: "b", log: &log})
	if r, ok := j.(observe.ResultObserver); ok && r.ObservesResults() {
		t.Error("no member opted in, yet the join observes results")
	}
}

func TestPhaseNamesAndDurations(t *testing.T) {
	names := map[observe.Phase]string{observe.Preflight: "preflight", observe.Begin: "begin", observe.Tool: "tool",
		observe.Projection: "projection", observe.Complete: "complete", 0: "unknown", observe.NumPhases + 1: "unknown"}
	for p, want := range names {
		if p.String() != want {
			t.Errorf("Phase(%d) = %q, want %q", p, p.String(), want)
		}
	}
	o := observe.Outcome{Phases: [observe.NumPhases]time.Duration{1, 2, 3, 4, 5}}
	for p := observe.Preflight; p <= observe.Complete; p++ {
		if got := o.PhaseDuration(p); got != time.Duration(p) {
			t.Errorf("PhaseDuration(%s) = %v, want %v", p, got, time.Duration(p))
		}
	}
	if o.PhaseDuration(0) != 0 || o.PhaseDuration(observe.NumPhases+1) != 0 {
		t.Error("an unknown phase has a duration")
	}
}

func TestSafeCode(t *testing.T) {
	cases := map[canonical.Code]canonical.Code{
		"":                               "",
		canonical.CodeToolTimeout:        canonical.CodeToolTimeout,
		canonical.CodeToolCallInProgress: canonical.CodeToolCallInProgress,
		"hunter2 tc:{run}:call:1":        canonical.CodeStoreUnavailable,
		"tool_timeout":                   canonical.CodeStoreUnavailable,
	}
	for in, want := range cases {
		if got := observe.SafeCode(in); got != want {
			t.Errorf("SafeCode(%q) = %q, want %q", in, got, want)
		}
	}
}
