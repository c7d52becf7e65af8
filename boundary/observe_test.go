package boundary_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/observe"
	"github.com/toolcanon/toolcanon/registry"
)

// callLog is everything an observer was told about one call.
type callLog struct {
	call   observe.Call
	starts int
	phases []observe.PhaseEvent
	ends   int
	out    observe.Outcome
	result []byte // only when the recorder opted in
	calls  []observe.Call
}

type logKey struct{ r *recorder }

// recorder is an observer that keeps one callLog per Invoke, found through
// the context its Start returned: Phase and End must be given that context.
type recorder struct {
	mu     sync.Mutex
	logs   []*callLog
	opted  bool
	lost   int // events whose context did not lead to their call
	panics bool
}

func (r *recorder) Start(ctx context.Context, c observe.Call) context.Context {
	l := &callLog{call: c, starts: 1}
	r.mu.Lock()
	r.logs = append(r.logs, l)
	r.mu.Unlock()
	if r.panics {
		panic("observer bug")
	}
	return context.WithValue(ctx, logKey{r}, l)
}

func (r *recorder) log(ctx context.Context, c observe.Call) *callLog {
	l, ok := ctx.Value(logKey{r}).(*callLog)
	if !ok {
		r.mu.Lock()
		r.lost++
		r.mu.Unlock()
		return &callLog{}
	}
	l.calls = append(l.calls, c)
	return l
}

func (r *recorder) Phase(ctx context.Context, c observe.Call, e observe.PhaseEvent) {
	l := r.log(ctx, c)
	l.phases = append(l.phases, e)
	if r.panics {
		panic("observer bug")
	}
}

func (r *recorder) End(ctx context.Context, c observe.Call, o observe.Outcome) {
	l := r.log(ctx, c)
	l.ends++
	l.out = o
	if r.panics {
		panic("observer bug")
	}
}

func (r *recorder) ObservesResults() bool { return r.opted }

func (r *recorder) Result(ctx context.Context, c observe.Call, agentJSON []byte) {
	l := r.log(ctx, c)
	l.result = append([]byte(nil), agentJSON...)
}

// only returns the single call the recorder saw.
func (r *recorder) only(t testing.TB) *callLog {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.logs) != 1 || r.lost != 0 {
		t.Fatalf("observer saw %d calls (%d events lost), want 1", len(r.logs), r.lost)
	}
	return r.logs[0]
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs, r.lost = nil, 0
}

// phaseWant is a phase a call must go through, and the code it ends with.
type phaseWant struct {
	phase observe.Phase
	code  canonical.Code
}

// checkCall checks one call's events against its result: one Start and one
// End, the phases in order with contiguous times and their codes, and the
// Outcome equal to the Result.
func checkCall(t testing.TB, l *callLog, res boundary.Result, phases []phaseWant) {
	t.Helper()
	if l.starts != 1 || l.ends != 1 {
		t.Fatalf("Start %d times, End %d times, want 1 and 1", l.starts, l.ends)
	}
	for _, c := range l.calls {
		if c != l.call {
			t.Errorf("events carry call %+v, Start had %+v", c, l.call)
		}
	}
	if len(l.phases) != len(phases) {
		t.Fatalf("phases = %v, want %v", phaseList(l.phases), phases)
	}
	at := l.call.Start
	var sum time.Duration
	for i, e := range l.phases {
		if e.Phase != phases[i].phase || e.Code != phases[i].code {
			t.Errorf("phase %d = %s/%q, want %s/%q", i, e.Phase, e.Code, phases[i].phase, phases[i].code)
		}
		if !e.Start.Equal(at) || e.Duration < 0 {
			t.Errorf("phase %s starts at %v (+%v), want %v: phases must be contiguous", e.Phase, e.Start, e.Duration, at)
		}
		if got := l.out.PhaseDuration(e.Phase); got != e.Duration {
			t.Errorf("outcome's %s time = %v, the phase said %v", e.Phase, got, e.Duration)
		}
		at = e.Start.Add(e.Duration)
		sum += e.Duration
	}
	o := l.out
	if sum > o.Duration {
		t.Errorf("phases took %v, more than the call's %v", sum, o.Duration)
	}
	if o.Status != res.Status() || o.Code != res.Code() || o.Evidence != res.Evidence() ||
		o.Executed != res.Executed() || o.Replayed != res.Replayed() || o.AgentBytes != len(res.AgentJSON()) {
		t.Errorf("outcome = %+v, result = (%s, %q, %s, executed %v, replayed %v, %d bytes)", o,
			res.Status(), res.Code(), res.Evidence(), res.Executed(), res.Replayed(), len(res.AgentJSON()))
	}
}

func phaseList(es []observe.PhaseEvent) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Phase.String() + "/" + string(e.Code)
	}
	return out
}

var allPassed = []phaseWant{{observe.Preflight, ""}, {observe.Begin, ""}, {observe.Tool, ""}, {observe.Projection, ""}, {observe.Complete, ""}}

func TestObserverSeesEveryPhaseOfAReadyCall(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		rec := &recorder{}
		fx.rebuild(nil, boundary.WithObserver(rec))
		res := fx.invoke("call_obs")
		fx.checkReady(t, res, canonical.EvidenceFound)
		l := rec.only(t)
		checkCall(t, l, res, allPassed)
		want := observe.Call{RunID: fx.run.ID, ToolCallID: "call_obs", Tool: "kb.search", Name: "kb.search", Version: "1.0.0", Start: l.call.Start}
		if l.call != want {
			t.Errorf("call = %+v, want %+v", l.call, want)
		}
		r := fx.checkRecord(t, "call_obs", wantReady(fx, res))
		input, _ := registry.Canonicalize([]byte(okInput))
		sizes := []int{len(input), r.RequestLen, len(fx.raw()), len(res.AgentJSON()), len(fx.raw()) + len(res.AgentJSON())}
		for i, e := range l.phases {
			if e.Bytes != sizes[i] {
				t.Errorf("%s produced %d bytes, want %d", e.Phase, e.Bytes, sizes[i])
			}
		}
		if ev := l.phases[3].Evidence; ev != canonical.EvidenceFound {
			t.Errorf("projection evidence = %q", ev)
		}
		o := l.out
		if o.InputBytes != len(input) || o.RequestBytes != r.RequestLen || o.RawBytes != len(fx.raw()) || o.ResultBytes != len(res.AgentJSON()) {
			t.Errorf("outcome sizes = %+v", o)
		}
		if l.result != nil {
			t.Errorf("an observer that did not opt in was handed the result %q", l.result)
		}
	})
}

func wantReady(fx *fixture, res boundary.Result) want {
	return want{status: canonical.StatusReady, evidence: canonical.EvidenceFound, raw: fx.raw(), result: res.AgentJSON()}
}

// Every way a call ends reaches the observer as the phases it went
// through, the last one carrying the code.
func TestObserverPhasesOfEveryOutcome(t *testing.T) {
	pre := func(c canonical.Code) []phaseWant { return []phaseWant{{observe.Preflight, c}} }
	upTo := func(last observe.Phase, c canonical.Code, then ...phaseWant) []phaseWant {
		out := []phaseWant{}
		for p := observe.Preflight; p < last; p++ {
			out = append(out, phaseWant{p, ""})
		}
		return append(append(out, phaseWant{last, c}), then...)
	}
	completed := phaseWant{observe.Complete, ""}
	cases := []struct {
		name   string
		wrap   func(fx *fixture) func(canonical.Store) canonical.Store
		opts   []boundary.Option
		setup  func(fx *fixture) // runs on the built boundary, before the observed call
		invoke func(fx *fixture) boundary.Result
		code   canonical.Code
		phases []phaseWant
		call   func(fx *fixture) observe.Call
	}{
		{name: "invalid id", code: canonical.CodeInvalidToolCallID, phases: pre(canonical.CodeInvalidToolCallID),
			invoke: func(fx *fixture) boundary.Result {
				return fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call "+fx.marker, "kb.search", okInput))
			},
			call: func(fx *fixture) observe.Call {
				return observe.Call{RunID: fx.run.ID, Tool: "kb.search", Name: "kb.search", Version: "1.0.0"}
			}},
		{name: "unknown tool", code: canonical.CodeUnknownTool, phases: pre(canonical.CodeUnknownTool),
			invoke: func(fx *fixture) boundary.Result {
				return fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_u", "kb."+fx.marker, okInput))
			},
			call: func(fx *fixture) observe.Call { return observe.Call{RunID: fx.run.ID, ToolCallID: "call_u"} }},
		{name: "run mismatch", code: canonical.CodeRunMismatch, phases: pre(canonical.CodeRunMismatch),
			invoke: func(fx *fixture) boundary.Result {
				env := fx.envelope("call_m", "kb.search", okInput)
				env.RunID = "other-" + fx.marker
				return fx.b.Invoke(fx.ctx, fx.run, env)
			}},
		{name: "schema", code: canonical.CodeInvalidInput, phases: pre(canonical.CodeInvalidInput),
			invoke: func(fx *fixture) boundary.Result {
				return fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_s", "kb.search", `{"query":"`+fx.marker+`","limit":500}`))
			}},
		{name: "write tool", code: canonical.CodeNotReadOnly, phases: pre(canonical.CodeNotReadOnly),
			invoke: func(fx *fixture) boundary.Result {
				return fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_w", "kb.write", okInput))
			},
			call: func(fx *fixture) observe.Call {
				return observe.Call{RunID: fx.run.ID, ToolCallID: "call_w", Tool: "kb.write", Name: "kb.write", Version: "1.0.0"}
			}},
		{name: "policy down", code: canonical.CodePolicyUnavailable, phases: pre(canonical.CodePolicyUnavailable),
			invoke: func(fx *fixture) boundary.Result {
				fx.run.Principal.Subject = "user:broken"
				return fx.invoke("call_p")
			}},
		{name: "duplicate", code: canonical.CodeDuplicateToolCall, phases: upTo(observe.Begin, canonical.CodeDuplicateToolCall),
			setup: func(fx *fixture) { fx.invoke("call_d") },
			invoke: func(fx *fixture) boundary.Result {
				return fx.invoke("call_d")
			}},
		{name: "budget", code: canonical.CodeBudgetExhausted, phases: upTo(observe.Begin, canonical.CodeBudgetExhausted),
			setup: func(fx *fixture) { fx.run.Limits.MaxCallsPerRun = 1; fx.invoke("call_b1") },
			invoke: func(fx *fixture) boundary.Result {
				return fx.invoke("call_b2")
			}},
		{name: "closed run", code: canonical.CodeRunInactive, phases: upTo(observe.Begin, canonical.CodeRunInactive),
			setup: func(fx *fixture) {
				fx.invoke("call_c0")
				_ = fx.store.CloseRun(context.Background(), fx.run.ID, fx.run.Principal.Subject)
			},
			invoke: func(fx *fixture) boundary.Result {
				return fx.invoke("call_c")
			}},
		{name: "tool error", code: canonical.CodeExecutionFailed, phases: upTo(observe.Tool, canonical.CodeExecutionFailed, completed),
			setup: func(fx *fixture) {
				fx.tool.fn = func(context.Context, []byte) ([]byte, error) { return nil, errors.New(fx.marker) }
			},
			invoke: func(fx *fixture) boundary.Result { return fx.invoke("call_te") }},
		{name: "run deadline during the tool", code: canonical.CodeDeadlineExceeded, phases: upTo(observe.Tool, canonical.CodeDeadlineExceeded, completed),
			setup: func(fx *fixture) {
				fx.tool.fn = func(ctx context.Context, _ []byte) ([]byte, error) { <-ctx.Done(); return nil, ctx.Err() }
				fx.run.Deadline = time.Now().Add(100 * time.Millisecond)
			},
			invoke: func(fx *fixture) boundary.Result { return fx.invoke("call_tt") }},
		{name: "raw too large", code: canonical.CodeResultTooLarge, phases: upTo(observe.Tool, canonical.CodeResultTooLarge, completed),
			setup: func(fx *fixture) {
				fx.run.Limits.MaxRecordBytes = 4096
				fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
					return []byte(`{"hits":[],"pad":"` + strings.Repeat(fx.marker, 200) + `"}`), nil
				}
			},
			invoke: func(fx *fixture) boundary.Result { return fx.invoke("call_rl") }},
		{name: "projector error", code: canonical.CodeProjectionFailed, phases: upTo(observe.Projection, canonical.CodeProjectionFailed, completed),
			setup: func(fx *fixture) {
				fx.proj.fn = func(context.Context, canonical.Call, []byte) (canonical.Projection, error) {
					return canonical.Projection{}, errors.New(fx.marker)
				}
			},
			invoke: func(fx *fixture) boundary.Result { return fx.invoke("call_pe") }},
		{name: "result too large", code: canonical.CodeResultTooLarge, phases: upTo(observe.Projection, canonical.CodeResultTooLarge, completed),
			setup:  func(fx *fixture) { fx.run.Limits.MaxResultBytes = 10 },
			invoke: func(fx *fixture) boundary.Result { return fx.invoke("call_xl") }},
		{name: "store down at begin", code: canonical.CodeStoreUnavailable, phases: upTo(observe.Begin, canonical.CodeStoreUnavailable),
			wrap: func(fx *fixture) func(canonical.Store) canonical.Store {
				fs := &failingStore{marker: fx.marker}
				fs.beginFails.Store(-1)
				return func(s canonical.Store) canonical.Store { fs.Store = s; return fs }
			},
			invoke: func(fx *fixture) boundary.Result { return fx.invoke("call_sb") }},
		{name: "store down at complete", code: canonical.CodeStoreUnavailable,
			phases: upTo(observe.Complete, canonical.CodeStoreUnavailable),
			wrap: func(fx *fixture) func(canonical.Store) canonical.Store {
				fs := &failingStore{marker: fx.marker}
				fs.completeFails.Store(-1)
				return func(s canonical.Store) canonical.Store { fs.Store = s; return fs }
			},
			invoke: func(fx *fixture) boundary.Result { return fx.invoke("call_sc") }},
		{name: "replay", phases: upTo(observe.Begin, ""),
			opts:  []boundary.Option{boundary.WithReplay()},
			setup: func(fx *fixture) { fx.invoke("call_rp") },
			invoke: func(fx *fixture) boundary.Result {
				return fx.invoke("call_rp")
			}},
		{name: "nil context", code: canonical.CodeInvalidArgument, phases: pre(canonical.CodeInvalidArgument),
			invoke: func(fx *fixture) boundary.Result {
				//nolint:staticcheck // a nil context is what this case is about
				return fx.b.Invoke(nil, fx.run, fx.envelope("call_n", "kb.search", okInput))
			}},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			forEachStore(t, func(t *testing.T, fx *fixture) {
				rec := &recorder{}
				var wrap func(canonical.Store) canonical.Store
				if tc.wrap != nil {
					wrap = tc.wrap(fx)
				}
				fx.rebuild(wrap, append(append([]boundary.Option(nil), tc.opts...), boundary.WithObserver(rec))...)
				if tc.setup != nil {
					tc.setup(fx)
				}
				rec.reset()
				res := tc.invoke(fx)
				if res.Code() != tc.code {
					t.Fatalf("code = %q, want %q (%v)", res.Code(), tc.code, res.Err())
				}
				l := rec.only(t)
				checkCall(t, l, res, tc.phases)
				if tc.call != nil {
					want := tc.call(fx)
					want.Start = l.call.Start
					if l.call != want {
						t.Errorf("call = %+v, want %+v", l.call, want)
					}
				}
				if s := fmt.Sprintf("%+v", l); strings.Contains(s, fx.marker) {
					t.Errorf("the observer was handed the marker: %s", s)
				}
			})
		})
	}
}

func TestObserverContextReachesToolProjectorAndStore(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		seen := map[string]bool{}
		var mu sync.Mutex
		rec := &recorder{}
		mark := func(where string, ctx context.Context) {
			mu.Lock()
			defer mu.Unlock()
			seen[where] = ctx.Value(logKey{rec}) != nil
		}
		ctx, cancel := context.WithCancel(context.Background())
		fx.ctx = ctx
		fx.tool.fn = func(ctx context.Context, _ []byte) ([]byte, error) { mark("tool", ctx); return fx.raw(), nil }
		fx.proj.fn = func(ctx context.Context, call canonical.Call, raw []byte) (canonical.Projection, error) {
			mark("projector", ctx)
			return fx.project(ctx, call, raw)
		}
		// The caller gives up just as the call is recorded: the completion
		// must still run, in the call's context. (Cancelling inside the
		// projector instead would race the projection's own deadline.)
		spy := &ctxStore{mark: mark, beforeComplete: cancel}
		fx.rebuild(func(s canonical.Store) canonical.Store { spy.Store = s; return spy }, boundary.WithObserver(rec))
		res := fx.invoke("call_ctx")
		fx.checkReady(t, res, canonical.EvidenceFound)
		for _, where := range []string{"tool", "projector", "begin", "complete"} {
			if !seen[where] {
				t.Errorf("%s did not run under the observer's context (seen: %v)", where, seen)
			}
		}
		checkCall(t, rec.only(t), res, allPassed)
	})
}

// ctxStore notes whether Begin and Complete ran under the observer's context.
type ctxStore struct {
	canonical.Store
	mark           func(string, context.Context)
	beforeComplete func() // if set, runs first in Complete
}

func (s *ctxStore) Begin(ctx context.Context, req canonical.BeginRequest) (canonical.Record, error) {
	s.mark("begin", ctx)
	return s.Store.Begin(ctx, req)
}

func (s *ctxStore) Complete(ctx context.Context, c canonical.Completion) (canonical.Record, error) {
	if s.beforeComplete != nil {
		s.beforeComplete()
	}
	s.mark("complete", ctx)
	if ctx.Err() != nil {
		return canonical.Record{}, fmt.Errorf("completion ran under a cancelled context: %w", ctx.Err())
	}
	return s.Store.Complete(ctx, c)
}

func TestObserverPanicChangesNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		rec := &recorder{panics: true}
		fx.rebuild(nil, boundary.WithObserver(rec))
		res := fx.invoke("call_op")
		fx.checkReady(t, res, canonical.EvidenceFound)
		fx.checkRecord(t, "call_op", wantReady(fx, res))
		fx.calls(t, 1, 1)
		// Start panicked, so its context is lost; every later event still
		// reached the observer, once each: a panic skips nothing.
		if len(rec.logs) != 1 || rec.lost != len(allPassed)+1 {
			t.Errorf("%d starts, %d later events, want 1 and %d", len(rec.logs), rec.lost, len(allPassed)+1)
		}
	})
}

func TestObserverOptInGetsOnlyTheAgentResult(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		opted, plain := &recorder{opted: true}, &recorder{}
		fx.rebuild(nil, boundary.WithObserver(opted), boundary.WithObserver(plain))
		res := fx.invoke("call_res")
		fx.checkReady(t, res, canonical.EvidenceFound)
		if got := opted.only(t).result; string(got) != string(res.AgentJSON()) {
			t.Errorf("opted-in observer got %q, want the agent JSON %q", got, res.AgentJSON())
		}
		if got := plain.only(t).result; got != nil {
			t.Errorf("an observer that did not opt in got %q", got)
		}
		bad := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_res2", "kb.search", `{"query":"`+fx.marker+`","limit":500}`))
		l := opted.logs[1]
		if string(l.result) != string(bad.AgentJSON()) || strings.Contains(string(l.result), fx.marker) {
			t.Errorf("opted-in observer got %q for an error, want the agent error object %q", l.result, bad.AgentJSON())
		}
	})
}

func TestWithObserverRefusesNil(t *testing.T) {
	_, err := boundary.New(memstore.New(), testRegistry(t), testPolicy("m"), boundary.WithObserver(nil))
	if canonical.CodeOf(err) != canonical.CodeInvalidArgument {
		t.Fatalf("err = %v, want INVALID_ARGUMENT", err)
	}
}

// Parallel calls through one observer: each call's events stay with it.
func TestObserverUnderParallelCalls(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		rec := &recorder{}
		fx.rebuild(nil, boundary.WithObserver(rec))
		const n = 16
		results := make([]boundary.Result, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				results[i] = fx.invoke(fmt.Sprintf("call_par_%d", i%(n/2))) // every id twice: one runs, one is a duplicate
			}(i)
		}
		wg.Wait()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.logs) != n || rec.lost != 0 {
			t.Fatalf("%d calls observed (%d events lost), want %d", len(rec.logs), rec.lost, n)
		}
		ready, dup := 0, 0
		for _, l := range rec.logs {
			if l.starts != 1 || l.ends != 1 || !strings.HasPrefix(l.call.ToolCallID, "call_par_") {
				t.Errorf("call %+v: %d starts, %d ends", l.call, l.starts, l.ends)
			}
			switch l.out.Code {
			case "":
				ready++
				if len(l.phases) != len(allPassed) {
					t.Errorf("READY call %s has phases %v", l.call.ToolCallID, phaseList(l.phases))
				}
			case canonical.CodeDuplicateToolCall, canonical.CodeToolCallInProgress:
				dup++
			}
		}
		if ready != n/2 || dup != n/2 {
			t.Errorf("%d READY and %d duplicates observed, want %d and %d", ready, dup, n/2, n/2)
		}
	})
}
