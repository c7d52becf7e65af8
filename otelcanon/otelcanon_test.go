package otelcanon_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/otelcanon"
)

// Child spans as the tests spell them: the name, then "!" and error.type
// when the span failed.
const (
	pre      = "preflight"
	begin    = "EVALSHA begin"
	tool     = "tool"
	proj     = "projector"
	complete = "EVALSHA complete"
)

var passed = []string{pre, begin, tool, proj, complete}

func fail(span string, c canonical.Code) string { return span + "!" + string(c) }

// scenario is one way an Invoke ends. Each runs in a run of its own; setup
// may make calls first (they are counted in the metrics, not in the spans
// checked).
type scenario struct {
	name     string
	tool     string // agent-facing name ("search_docs" when empty)
	id       string // tool_call_id ("call_" + a number when empty)
	input    string // default {"query":"refund rules"}
	code     canonical.Code
	evidence canonical.Evidence // READY only
	executed bool
	replayed bool
	children []string
	// setup runs before the call on w, in the call's run; it may change
	// the run or the envelope, or pick another boundary.
	setup func(w *world, c *call)
	// wrap wraps the store of this scenario's boundary.
	wrap func(canonical.Store) canonical.Store
	opts []boundary.Option
}

// call is one Invoke about to be made.
type call struct {
	b   *boundary.Boundary
	run boundary.RunContext
	env boundary.Envelope
	tl  *tally
}

// invoke makes a call through c's boundary in c's run, counted in the tally.
func (c *call) invoke(env boundary.Envelope) boundary.Result {
	res := c.b.Invoke(context.Background(), c.run, env)
	c.tl.add(env.Tool, res)
	return res
}

// downStore fails every Begin the way a dropped connection does.
type downStore struct {
	canonical.Store
	marker string
}

func (d downStore) Begin(context.Context, canonical.BeginRequest) (canonical.Record, error) {
	return canonical.Record{}, errors.New("dial tcp 127.0.0.1:6379: connect: connection refused ERR " + d.marker + " tc:{r}:call:c")
}

// The demo's scenarios, and every other way a call ends.
func scenarios() []scenario {
	return []scenario{
		{name: "evidence found", evidence: canonical.EvidenceFound, executed: true, children: passed},
		{name: "no evidence", input: `{"query":"quantum ledger sharding"}`, evidence: canonical.NoEvidence, executed: true, children: passed},
		{name: "duplicate id", id: "call_dup", code: canonical.CodeDuplicateToolCall,
			children: []string{pre, fail(begin, canonical.CodeDuplicateToolCall)},
			setup:    func(w *world, c *call) { c.invoke(c.env) }},
		{name: "replayed duplicate", id: "call_rep", evidence: canonical.EvidenceFound, replayed: true,
			opts: []boundary.Option{boundary.WithReplay()},
			// The duplicate's begin carries the finished record it replays:
			// no read of its own.
			children: []string{pre, fail(begin, canonical.CodeDuplicateToolCall)},
			setup:    func(w *world, c *call) { c.invoke(c.env) }},
		{name: "another run", code: canonical.CodeRunMismatch, children: []string{fail(pre, canonical.CodeRunMismatch)},
			setup: func(w *world, c *call) { c.env.RunID = "other-run" }},
		{name: "far too much", input: `{"query":"dump everything"}`, code: canonical.CodeResultTooLarge, executed: true,
			children: []string{pre, begin, fail(tool, canonical.CodeResultTooLarge), complete}},
		{name: "schema", input: `{"query":"refunds","limit":500}`, code: canonical.CodeInvalidInput,
			children: []string{fail(pre, canonical.CodeInvalidInput)}},
		{name: "write tool", tool: "update_ticket", code: canonical.CodeNotReadOnly, children: []string{fail(pre, canonical.CodeNotReadOnly)}},
		{name: "unsafe id", id: "call 5; DROP", code: canonical.CodeInvalidToolCallID, children: []string{fail(pre, canonical.CodeInvalidToolCallID)}},
		{name: "unknown tool", tool: "drop_tables", code: canonical.CodeUnknownTool, children: []string{fail(pre, canonical.CodeUnknownTool)}},
		{name: "denied", code: canonical.CodeUnauthorized, children: []string{fail(pre, canonical.CodeUnauthorized)},
			setup: func(w *world, c *call) { c.run.Principal.Subject = "user:mallory" }},
		{name: "policy down", code: canonical.CodePolicyUnavailable, children: []string{fail(pre, canonical.CodePolicyUnavailable)},
			setup: func(w *world, c *call) { c.run.Principal.Subject = "user:broken" }},
		{name: "approval", tool: "approve_docs", code: canonical.CodeApprovalRequired, children: []string{fail(pre, canonical.CodeApprovalRequired)}},
		{name: "tool fails", input: `{"query":"fail"}`, code: canonical.CodeExecutionFailed, executed: true,
			children: []string{pre, begin, fail(tool, canonical.CodeExecutionFailed), complete}},
		{name: "tool panics", input: `{"query":"panic"}`, code: canonical.CodeExecutionFailed, executed: true,
			children: []string{pre, begin, fail(tool, canonical.CodeExecutionFailed), complete}},
		{name: "run deadline passes while the tool runs", input: `{"query":"slow"}`, code: canonical.CodeDeadlineExceeded, executed: true,
			children: []string{pre, begin, fail(tool, canonical.CodeDeadlineExceeded), complete},
			setup:    func(w *world, c *call) { c.run.Deadline = time.Now().Add(150 * time.Millisecond) }},
		{name: "projector fails", input: `{"query":"garbage"}`, code: canonical.CodeProjectionFailed, executed: true,
			children: []string{pre, begin, tool, fail(proj, canonical.CodeProjectionFailed), complete}},
		{name: "budget", code: canonical.CodeBudgetExhausted,
			children: []string{pre, fail(begin, canonical.CodeBudgetExhausted)},
			setup: func(w *world, c *call) {
				c.run.Limits.MaxCallsPerRun = 1
				first := c.env
				first.ToolCallID = "call_first"
				c.invoke(first)
			}},
		{name: "closed run", code: canonical.CodeRunInactive, children: []string{pre, fail(begin, canonical.CodeRunInactive)},
			setup: func(w *world, c *call) {
				// A close finds only a run that was begun.
				first := c.env
				first.ToolCallID = "call_first"
				c.invoke(first)
				if err := w.store.CloseRun(context.Background(), c.run.ID, c.run.Principal.Subject); err != nil {
					w.t.Fatal(err)
				}
			}},
		{name: "store down", code: canonical.CodeStoreUnavailable,
			opts:     []boundary.Option{boundary.WithStoreAttempts(2)},
			wrap:     func(s canonical.Store) canonical.Store { return downStore{Store: s, marker: "DOWN"} },
			children: []string{pre, fail(begin, canonical.CodeStoreUnavailable), fail(begin, canonical.CodeStoreUnavailable)}},
	}
}

var bound = map[string]bool{"search_docs": true, "update_ticket": true, "approve_docs": true}

// tally counts what the metrics must hold.
type tally struct {
	durations map[[2]string]int64 // (tool, error.type)
	outcomes  map[[4]string]int64 // (tool, status, code|evidence, replayed)
	refusals  map[[2]string]int64 // (tool, code)
	calls     int64
}

func (tl *tally) add(toolName string, res boundary.Result) {
	if !bound[toolName] {
		toolName = ""
	}
	tl.calls++
	tl.durations[[2]string{toolName, string(res.Code())}]++
	detail := string(res.Code())
	if detail == "" {
		detail = string(res.Evidence())
	}
	tl.outcomes[[4]string{toolName, string(res.Status()), detail, fmt.Sprint(res.Replayed())}]++
	switch res.Code() {
	case canonical.CodeBudgetExhausted, canonical.CodeDuplicateToolCall, canonical.CodeToolCallInProgress:
		if !res.Executed() && !res.Replayed() {
			tl.refusals[[2]string{toolName, string(res.Code())}]++
		}
	}
}

func TestEveryOutcomeIsOneExecuteToolSpanAndCounted(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, kind)
			tl := &tally{durations: map[[2]string]int64{}, outcomes: map[[4]string]int64{}, refusals: map[[2]string]int64{}}
			for i, sc := range scenarios() {
				c := &call{b: w.boundary(sc.wrap, sc.opts...), run: w.newRun(), tl: tl}
				c.env = boundary.Envelope{ToolCallID: sc.id, RunID: c.run.ID, Tool: sc.tool, Input: []byte(sc.input)}
				if c.env.ToolCallID == "" {
					c.env.ToolCallID = fmt.Sprintf("call_%d", i)
				}
				if c.env.Tool == "" {
					c.env.Tool = "search_docs"
				}
				if sc.input == "" {
					c.env.Input = []byte(`{"query":"refund rules"}`)
				}
				if sc.setup != nil {
					sc.setup(w, c)
				}
				seen := len(w.spans.GetSpans())
				res := c.invoke(c.env)
				if res.Code() != sc.code || res.Executed() != sc.executed || res.Replayed() != sc.replayed {
					t.Fatalf("%s: result (%q, executed %v, replayed %v), want (%q, %v, %v): %v", sc.name,
						res.Code(), res.Executed(), res.Replayed(), sc.code, sc.executed, sc.replayed, res.Err())
				}
				spans := w.spans.GetSpans()[seen:]
				checkCallSpans(t, sc, c, res, spans, bound[c.env.Tool], kind)
			}
			checkMetrics(t, w, tl)
		})
	}
}

// checkCallSpans checks that a call made exactly one execute_tool span,
// with its attributes, and the expected children under it.
func checkCallSpans(t *testing.T, sc scenario, c *call, res boundary.Result, spans tracetest.SpanStubs, bound bool, kind storeKind) {
	t.Helper()
	var roots tracetest.SpanStubs
	for _, s := range spans {
		if strings.HasPrefix(s.Name, otelcanon.OperationExecuteTool) {
			roots = append(roots, s)
		}
	}
	if len(roots) != 1 {
		t.Fatalf("%s: %d execute_tool spans, want 1: %v", sc.name, len(roots), names(spans))
	}
	root := roots[0]
	wantName := "execute_tool"
	if bound {
		wantName += " " + c.env.Tool
	}
	if root.Name != wantName || root.SpanKind != trace.SpanKindInternal || root.Parent.IsValid() {
		t.Errorf("%s: root span %q kind %v parent %v, want %q INTERNAL with no parent", sc.name, root.Name, root.SpanKind, root.Parent, wantName)
	}
	attrs := attrMap(root.Attributes)
	want := map[string]string{
		"gen_ai.operation.name": "execute_tool", "toolcanon.run.id": c.run.ID,
		"toolcanon.status": string(res.Status()), "toolcanon.evidence": string(res.Evidence()),
		"toolcanon.executed": fmt.Sprint(sc.executed), "toolcanon.replayed": fmt.Sprint(sc.replayed),
	}
	absent := []string{"gen_ai.tool.call.result"}
	if bound {
		want["gen_ai.tool.name"] = c.env.Tool
	} else {
		absent = append(absent, "gen_ai.tool.name")
	}
	if canonical.ValidateToolCallID(c.env.ToolCallID) == nil {
		want["gen_ai.tool.call.id"] = c.env.ToolCallID
	} else {
		absent = append(absent, "gen_ai.tool.call.id")
	}
	if sc.code != "" {
		want["error.type"], want["toolcanon.code"] = string(sc.code), string(sc.code)
		if root.Status.Code != codes.Error || root.Status.Description != string(sc.code) {
			t.Errorf("%s: status %+v, want Error %q", sc.name, root.Status, sc.code)
		}
	} else {
		absent = append(absent, "error.type", "toolcanon.code")
		if root.Status.Code != codes.Unset {
			t.Errorf("%s: status %+v on success", sc.name, root.Status)
		}
	}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("%s: %s = %q, want %q", sc.name, k, attrs[k], v)
		}
	}
	for _, k := range absent {
		if _, ok := attrs[k]; ok {
			t.Errorf("%s: has %s = %q", sc.name, k, attrs[k])
		}
	}
	// GenAI attributes set at creation, for samplers.
	if !hasAttr(root.Attributes, "gen_ai.operation.name") {
		t.Errorf("%s: gen_ai.operation.name missing", sc.name)
	}

	var children tracetest.SpanStubs
	for _, s := range spans {
		if s.SpanContext.SpanID() == root.SpanContext.SpanID() {
			continue
		}
		if s.Parent.SpanID() != root.SpanContext.SpanID() || s.SpanContext.TraceID() != root.SpanContext.TraceID() {
			t.Errorf("%s: span %q is not a child of the call's span", sc.name, s.Name)
			continue
		}
		children = append(children, s)
	}
	sort.SliceStable(children, func(i, j int) bool { return children[i].StartTime.Before(children[j].StartTime) })
	got := make([]string, len(children))
	for i, s := range children {
		got[i] = s.Name
		if e := attrMap(s.Attributes)["error.type"]; e != "" {
			got[i] += "!" + e
		}
		if s.StartTime.Before(root.StartTime) || s.EndTime.After(root.EndTime) {
			t.Errorf("%s: child %q [%v, %v] outside the call [%v, %v]", sc.name, s.Name, s.StartTime, s.EndTime, root.StartTime, root.EndTime)
		}
		if len(s.Events) != 0 {
			t.Errorf("%s: child %q has events %v", sc.name, s.Name, s.Events)
		}
		checkStoreSpan(t, sc.name, s, kind)
	}
	if !slices.Equal(got, sc.children) {
		t.Errorf("%s: children %q, want %q", sc.name, got, sc.children)
	}
	if len(root.Events) != 0 {
		t.Errorf("%s: call span has events %v", sc.name, root.Events)
	}
}

// checkStoreSpan checks the database attributes of a store span.
func checkStoreSpan(t *testing.T, scName string, s tracetest.SpanStub, kind storeKind) {
	t.Helper()
	a := attrMap(s.Attributes)
	op, script, isScript := strings.Cut(s.Name, " ")
	if s.Name != "HMGET" && !isScript {
		return // a phase span
	}
	wantKind := trace.SpanKindInternal
	if kind.system == "redis" {
		wantKind = trace.SpanKindClient
	}
	if a["db.system.name"] != kind.system || a["db.operation.name"] != op || a["db.stored_procedure.name"] != script || s.SpanKind != wantKind {
		t.Errorf("%s: store span %q: kind %v, attributes %v", scName, s.Name, s.SpanKind, a)
	}
}

func checkMetrics(t *testing.T, w *world, tl *tally) {
	t.Helper()
	rm := w.metrics()
	found := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelcanon.ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			found[m.Name] = true
			forEachPoint(t, m, func(set attribute.Set, n int64) {
				for _, k := range []attribute.Key{otelcanon.RunIDKey, otelcanon.GenAIToolCallIDKey} {
					if set.HasValue(k) {
						t.Errorf("metric %s carries %s", m.Name, k)
					}
				}
			})
		}
	}
	for _, name := range []string{otelcanon.MetricExecuteToolDuration, otelcanon.MetricOutcomes, otelcanon.MetricRefusals,
		otelcanon.MetricPhaseDuration, otelcanon.MetricStoreDuration} {
		if !found[name] {
			t.Errorf("metric %s not recorded", name)
		}
	}

	durations := map[[2]string]int64{}
	outcomes := map[[4]string]int64{}
	refusals := map[[2]string]int64{}
	preflights := int64(0)
	stores := map[[3]string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			forEachPoint(t, m, func(set attribute.Set, n int64) {
				get := func(k string) string { v, _ := set.Value(attribute.Key(k)); return v.Emit() }
				switch m.Name {
				case otelcanon.MetricExecuteToolDuration:
					if get("gen_ai.operation.name") != "execute_tool" {
						t.Errorf("%s without gen_ai.operation.name", m.Name)
					}
					durations[[2]string{get("gen_ai.tool.name"), get("error.type")}] += n
				case otelcanon.MetricOutcomes:
					detail := get("toolcanon.code")
					if detail == "" {
						detail = get("toolcanon.evidence")
					}
					outcomes[[4]string{get("gen_ai.tool.name"), get("toolcanon.status"), detail, get("toolcanon.replayed")}] += n
				case otelcanon.MetricRefusals:
					refusals[[2]string{get("gen_ai.tool.name"), get("toolcanon.code")}] += n
				case otelcanon.MetricPhaseDuration:
					if get("toolcanon.phase") == "preflight" {
						preflights += n
					}
				case otelcanon.MetricStoreDuration:
					if get("db.system.name") != w.kind.system {
						t.Errorf("store metric system %q", get("db.system.name"))
					}
					stores[[3]string{get("db.operation.name"), get("db.stored_procedure.name"), get("error.type")}] += n
				}
			})
		}
	}
	if !mapsEqual(durations, tl.durations) {
		t.Errorf("gen_ai.execute_tool.duration counts\n got %v\nwant %v", durations, tl.durations)
	}
	if !mapsEqual(outcomes, tl.outcomes) {
		t.Errorf("outcome counts\n got %v\nwant %v", outcomes, tl.outcomes)
	}
	if !mapsEqual(refusals, tl.refusals) {
		t.Errorf("refusal counts\n got %v\nwant %v", refusals, tl.refusals)
	}
	if preflights != tl.calls {
		t.Errorf("%d preflight phases measured, %d calls made", preflights, tl.calls)
	}
	// The store's metric counts what its spans show.
	fromSpans := map[[3]string]int64{}
	for _, s := range w.spans.GetSpans() {
		op, script, isScript := strings.Cut(s.Name, " ")
		if s.Name == "HMGET" || isScript && op == "EVALSHA" {
			fromSpans[[3]string{op, script, attrMap(s.Attributes)["error.type"]}]++
		}
	}
	if !mapsEqual(stores, fromSpans) {
		t.Errorf("db.client.operation.duration counts\n got %v\nfrom spans %v", stores, fromSpans)
	}
	if fromSpans[[3]string{"EVALSHA", "begin", ""}] == 0 || fromSpans[[3]string{"EVALSHA", "complete", ""}] == 0 {
		t.Errorf("no successful begin or complete counted: %v", fromSpans)
	}
}

// forEachPoint calls f with each data point's attributes and count.
func forEachPoint(t *testing.T, m metricdata.Metrics, f func(attribute.Set, int64)) {
	t.Helper()
	switch d := m.Data.(type) {
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			f(p.Attributes, int64(p.Count))
		}
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			f(p.Attributes, p.Value)
		}
	default:
		t.Errorf("metric %s has data %T", m.Name, m.Data)
	}
}

func mapsEqual[K comparable](a, b map[K]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func attrMap(kvs []attribute.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func hasAttr(kvs []attribute.KeyValue, k string) bool {
	for _, kv := range kvs {
		if string(kv.Key) == k {
			return true
		}
	}
	return false
}

func names(spans tracetest.SpanStubs) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}
