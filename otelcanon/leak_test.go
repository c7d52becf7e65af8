package otelcanon_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
	"github.com/toolcanon/toolcanon/otelcanon"
)

// markers are planted, each in one kind of place, so that a leak says where
// it came from.
type markers struct {
	input, raw, result, err, secret string
}

func newMarkers() markers {
	m := func(kind string) string { return kind + canonical.NewOwner()[:12] }
	return markers{input: m("INPUTMARK"), raw: m("RAWMARK"), result: m("RESULTMARK"), err: m("ERRMARK"),
		secret: "hunter2-" + m("SECRETMARK")}
}

func (m markers) all() []string { return []string{m.input, m.raw, m.result, m.err, m.secret} }

// forbidden is what must never reach telemetry besides the markers: keys,
// Redis replies and error text, stack traces, secrets' shapes.
var forbidden = []string{"tc:{", ":call:", "ERR ", "WRONGTYPE", "user_script", "connection refused", "dial tcp",
	"i/o timeout", "goroutine ", ".go:", "panicked", "password", "sk_live", "hunter2", "context_pack"}

// leakyTool answers by its query: it plants markers and secrets in raw
// responses and in errors, and panics with them.
func leakyTool(m markers) func(ctx context.Context, input []byte) ([]byte, error) {
	return func(ctx context.Context, input []byte) ([]byte, error) {
		var in struct{ Query string }
		_ = json.Unmarshal(input, &in)
		redisText := " ERR " + m.err + " tc:{run-x}:call:call_1 dial tcp 127.0.0.1:6379: connect: connection refused password=" + m.secret
		switch {
		case strings.HasPrefix(in.Query, "fail"):
			return nil, errors.New("backend" + redisText)
		case strings.HasPrefix(in.Query, "panic"):
			panic("tool" + redisText)
		case strings.HasPrefix(in.Query, "huge"):
			return []byte(`{"hits":[],"pad":"` + strings.Repeat(m.raw+m.secret, 8000) + `"}`), nil
		case strings.HasPrefix(in.Query, "empty"):
			return []byte(`{"hits":[],"password":"` + m.secret + `","trace":"` + m.raw + `"}`), nil
		}
		return []byte(`{"hits":[{"id":"doc-1"}],"password":"` + m.secret + `","context_pack":"` + m.raw + `"}`), nil
	}
}

// leakyProjector puts the result marker into every result it makes, and
// the error marker into its errors and panics.
func leakyProjector(m markers) func(ctx context.Context, call canonical.Call, raw []byte) (canonical.Projection, error) {
	return func(_ context.Context, call canonical.Call, raw []byte) (canonical.Projection, error) {
		var in struct{ Query string }
		_ = json.Unmarshal(call.Input, &in)
		switch {
		case strings.HasPrefix(in.Query, "projfail"):
			return canonical.Projection{}, errors.New("projector ERR " + m.err + " " + m.secret)
		case strings.HasPrefix(in.Query, "projpanic"):
			panic("projector " + m.err + " " + m.secret)
		case strings.HasPrefix(in.Query, "badjson"):
			return canonical.Projection{Evidence: canonical.EvidenceFound, Result: []byte(m.result + " " + m.err)}, nil
		case strings.HasPrefix(in.Query, "badev"):
			return canonical.Projection{Evidence: canonical.Evidence(m.err), Result: []byte(`{"x":"` + m.result + `"}`)}, nil
		case strings.HasPrefix(in.Query, "big"):
			return canonical.Projection{Evidence: canonical.EvidenceFound, Result: []byte(`{"x":"` + strings.Repeat(m.result, 2000) + `"}`)}, nil
		}
		ev := canonical.EvidenceFound
		if strings.HasPrefix(in.Query, "empty") {
			ev = canonical.NoEvidence
		}
		return canonical.Projection{Evidence: ev, Result: []byte(`{"tool_call_id":"` + call.ToolCallID + `","note":"` + m.result + `"}`)}, nil
	}
}

// hostileCodeStore returns a typed error whose code is free text.
type hostileCodeStore struct {
	canonical.Store
	code string
}

func (h hostileCodeStore) Complete(context.Context, canonical.Completion) (canonical.Record, error) {
	return canonical.Record{}, &canonical.Error{Code: canonical.Code(h.code), Msg: h.code}
}

func TestNothingOfAPayloadReachesTelemetry(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			m := newMarkers()
			w := newWorld(t, kind)
			leakCalls(t, w, m)
			checkNoLeak(t, w, m, nil)
		})
	}
}

func TestOptInRecordsOnlyTheAgentResult(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			m := newMarkers()
			w := newWorld(t, kind, otelcanon.WithAgentResult())
			results := leakCalls(t, w, m)
			// Every call's span carries exactly what its agent saw.
			agent := map[string]bool{}
			for _, r := range results {
				agent[string(r.AgentJSON())] = true
			}
			n := 0
			for _, s := range w.spans.GetSpans() {
				if v, ok := attrMap(s.Attributes)[string(otelcanon.GenAIToolCallResultKey)]; ok {
					n++
					if !agent[v] {
						t.Errorf("span %q records a result no agent saw: %.120q", s.Name, v)
					}
				}
			}
			if n != len(results) {
				t.Errorf("%d spans carry a result, %d calls were made", n, len(results))
			}
			checkNoLeak(t, w, m, map[string]bool{string(otelcanon.GenAIToolCallResultKey): true})
		})
	}
}

// leakCalls makes many calls with markers planted everywhere, each in a way
// that ends differently, some in parallel, and returns their results.
func leakCalls(t *testing.T, w *world, m markers) []boundary.Result {
	t.Helper()
	w.tool, w.proj = leakyTool(m), leakyProjector(m)
	var (
		mu      sync.Mutex
		results []boundary.Result
	)
	keep := func(r boundary.Result) {
		mu.Lock()
		defer mu.Unlock()
		results = append(results, r)
	}
	q := func(prefix string) []byte {
		return []byte(`{"query":"` + prefix + " " + m.input + " " + m.secret + `"}`)
	}
	b := w.boundary(nil, boundary.WithReplay())
	run := w.newRun()
	env := func(id, tool string, input []byte) boundary.Envelope {
		return boundary.Envelope{ToolCallID: id, RunID: run.ID, Tool: tool, Input: input}
	}
	ctx := context.Background()
	calls := []boundary.Envelope{
		env("call_ok", "search_docs", q("ok")),
		env("call_empty", "search_docs", q("empty")),
		env("call_fail", "search_docs", q("fail")),
		env("call_panic", "search_docs", q("panic")),
		env("call_huge", "search_docs", q("huge")),
		env("call_projfail", "search_docs", q("projfail")),
		env("call_projpanic", "search_docs", q("projpanic")),
		env("call_badjson", "search_docs", q("badjson")),
		env("call_badev", "search_docs", q("badev")),
		env("call_big", "search_docs", q("big")),
		env("call_ok", "search_docs", q("ok")),       // a replay
		env("call_ok", "search_docs", q("other")),    // a duplicate with another request
		env("call "+m.input, "search_docs", q("ok")), // an id that is not one
		env("call_tool", "t"+m.input, q("ok")),       // a tool that is not bound
		env("call_schema", "search_docs", []byte(`{"query":"x","`+m.input+`":"`+m.secret+`"}`)),
		env("call_json", "search_docs", []byte(`{"query":"`+m.input+`"`)),
		env("call_write", "update_ticket", q("ok")),
	}
	for _, e := range calls {
		keep(b.Invoke(ctx, run, e))
	}
	mismatch := env("call_mm", "search_docs", q("ok"))
	mismatch.RunID = "run " + m.input
	keep(b.Invoke(ctx, run, mismatch))
	badRun := run
	badRun.ID = "run " + m.input
	keep(b.Invoke(ctx, badRun, boundary.Envelope{ToolCallID: "call_br", RunID: badRun.ID, Tool: "search_docs", Input: q("ok")}))
	broken := run
	broken.Principal.Subject = "user:broken"
	keep(b.Invoke(ctx, broken, env("call_policy", "search_docs", q("ok"))))

	// Stores that fail with text: a connection error, a code that is free
	// text.
	down := w.boundary(func(s canonical.Store) canonical.Store { return downStore{Store: s, marker: m.err + " " + m.secret} },
		boundary.WithStoreAttempts(1))
	keep(down.Invoke(ctx, run, env("call_down", "search_docs", q("ok"))))
	hostile := w.boundary(func(s canonical.Store) canonical.Store {
		return hostileCodeStore{Store: s, code: m.err + " tc:{x}:call:y"}
	},
		boundary.WithStoreAttempts(1))
	keep(hostile.Invoke(ctx, run, env("call_hostile", "search_docs", q("ok"))))

	// Many calls in parallel, in another run.
	par := w.newRun()
	par.Limits.MaxCallsPerRun, par.Limits.MaxCallsPerTool = 256, 256
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			kinds := []string{"ok", "empty", "fail", "projfail", "big"}
			e := boundary.Envelope{ToolCallID: "call_p" + string(rune('a'+i%26)), RunID: par.ID, Tool: "search_docs", Input: q(kinds[i%len(kinds)])}
			keep(b.Invoke(ctx, par, e))
		}(i)
	}
	wg.Wait()

	if w.kind.system == "redis" {
		keep(wrongTypeCall(t, w, b, m, q("ok")))
		keep(deadRedisCall(t, w, m, q("ok")))
	}
	codes := map[canonical.Code]int{}
	for _, r := range results {
		codes[r.Code()]++
	}
	for _, c := range []canonical.Code{"", canonical.CodeExecutionFailed, canonical.CodeProjectionFailed, canonical.CodeResultTooLarge,
		canonical.CodeDuplicateToolCall, canonical.CodeInvalidToolCallID, canonical.CodeUnknownTool, canonical.CodeInvalidInput,
		canonical.CodeNotReadOnly, canonical.CodeRunMismatch, canonical.CodeInvalidRunID, canonical.CodePolicyUnavailable,
		canonical.CodeStoreUnavailable} {
		if codes[c] == 0 {
			t.Errorf("no call ended with %q: the leak test lost a path (%v)", c, codes)
		}
	}
	return results
}

// wrongTypeCall plants a key of the wrong type where the record will be, so
// that the begin script fails with Redis' own error text.
func wrongTypeCall(t *testing.T, w *world, b *boundary.Boundary, m markers, input []byte) boundary.Result {
	t.Helper()
	run := w.newRun()
	key := "tc:{" + run.ID + "}:call:call_wrongtype"
	if _, err := redistest.Command(redistest.Addr(t), "SET", key, m.secret, "PX", "60000"); err != nil {
		t.Fatal(err)
	}
	res := b.Invoke(context.Background(), run, boundary.Envelope{ToolCallID: "call_wrongtype", RunID: run.ID, Tool: "search_docs", Input: input})
	if res.Code() != canonical.CodeStoreUnavailable || !strings.Contains(res.Err().Error(), "WRONGTYPE") {
		t.Errorf("a wrong-type key gave %q: %v", res.Code(), res.Err())
	}
	return res
}

// deadRedisCall runs a call on a Redis that has just been killed.
func deadRedisCall(t *testing.T, w *world, m markers, input []byte) boundary.Result {
	t.Helper()
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	rs, err := redisstore.New(redisstore.Options{Addrs: []string{srv.Addr}, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	srv.Kill()
	saved := w.store
	w.store = rs
	b := w.boundary(nil, boundary.WithStoreAttempts(1), boundary.WithStoreTimeout(500*time.Millisecond))
	w.store = saved
	run := w.newRun()
	res := b.Invoke(context.Background(), run, boundary.Envelope{ToolCallID: "call_dead", RunID: run.ID, Tool: "search_docs", Input: input})
	if res.Code() != canonical.CodeStoreUnavailable {
		t.Errorf("a dead Redis gave %q: %v", res.Code(), res.Err())
	}
	return res
}

// checkNoLeak looks at every span (name, attributes, events, status, links),
// every metric data point's attributes and exemplars, and every log line.
// allowed names attributes that may hold the result marker (the opt-in).
func checkNoLeak(t *testing.T, w *world, m markers, allowed map[string]bool) {
	t.Helper()
	bad := append(append([]string{}, m.all()...), forbidden...)
	check := func(where, text string, allowResult bool) {
		for _, s := range bad {
			if allowResult && s == m.result {
				continue
			}
			if strings.Contains(text, s) {
				t.Errorf("%s holds %q: %.200q", where, s, text)
			}
		}
	}
	checkAttrs := func(where string, kvs []attribute.KeyValue) {
		for _, kv := range kvs {
			check(where+" key", string(kv.Key), false)
			check(where+" "+string(kv.Key), kv.Value.Emit(), allowed[string(kv.Key)])
		}
	}
	spans := w.spans.GetSpans()
	if len(spans) < 40 {
		t.Fatalf("only %d spans recorded", len(spans))
	}
	for _, s := range spans {
		where := "span " + s.Name
		check(where+" name", s.Name, false)
		check(where+" status", s.Status.Description, false)
		checkAttrs(where, s.Attributes)
		for _, e := range s.Events {
			check(where+" event", e.Name, false)
			checkAttrs(where+" event", e.Attributes)
		}
		for _, l := range s.Links {
			checkAttrs(where+" link", l.Attributes)
		}
	}
	rm := w.metrics()
	points := 0
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			switch d := mt.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					points++
					checkAttrs("metric "+mt.Name, p.Attributes.ToSlice())
					for _, e := range p.Exemplars {
						checkAttrs("exemplar "+mt.Name, e.FilteredAttributes)
					}
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					points++
					checkAttrs("metric "+mt.Name, p.Attributes.ToSlice())
					for _, e := range p.Exemplars {
						checkAttrs("exemplar "+mt.Name, e.FilteredAttributes)
					}
				}
			}
		}
	}
	if points < 10 {
		t.Errorf("only %d metric points recorded", points)
	}
	lines := strings.Split(strings.TrimSpace(w.logs.String()), "\n")
	calls := 0
	for _, l := range lines {
		check("log line", l, false)
		if strings.Contains(l, `"msg":"tool call"`) {
			calls++
		}
	}
	if calls < 40 {
		t.Errorf("only %d call lines logged", calls)
	}
}
