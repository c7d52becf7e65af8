package otelcanon_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/observe"
	"github.com/toolcanon/toolcanon/otelcanon"
)

// A store operation outside any call is a root span that says which run it
// was for; inside a call it is the call's child and does not repeat it.
func TestStoreOperationOutsideACallIsARootSpan(t *testing.T) {
	w := newWorld(t, storeKinds[0])
	s := observe.Store(w.store, w.obs)
	// Begun unobserved: a close finds only a run that was begun.
	if _, err := w.store.Begin(context.Background(), canonical.BeginRequest{RunID: "run-closing", ToolCallID: "c1", Tool: "t",
		Owner: canonical.NewOwner(), Request: []byte(`{}`), TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := s.CloseRun(context.Background(), "run-closing", ""); err != nil {
		t.Fatal(err)
	}
	spans := w.spans.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	sp := spans[0]
	a := attrMap(sp.Attributes)
	if sp.Name != "EVALSHA close_run" || sp.Parent.IsValid() || a["toolcanon.run.id"] != "run-closing" ||
		a["db.stored_procedure.name"] != "close_run" || a["toolcanon.store.method"] != "CloseRun" || a["db.system.name"] != "memory" {
		t.Errorf("span %q parent %v attributes %v", sp.Name, sp.Parent, a)
	}
}

// A call that is not sampled makes no child spans and no store spans, but
// its metrics are still recorded.
func TestUnsampledCallHasNoChildren(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sdktrace.NeverSample()))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	obs, err := otelcanon.New(tp, mp)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, storeKinds[0])
	w.obs = obs
	b := w.boundary(nil)
	run := w.newRun()
	res := b.Invoke(context.Background(), run, boundary.Envelope{ToolCallID: "call_1", RunID: run.ID, Tool: "search_docs", Input: []byte(`{"query":"x"}`)})
	if res.Code() != "" {
		t.Fatal(res.Err())
	}
	if n := len(spans.GetSpans()); n != 0 {
		t.Errorf("%d spans exported for an unsampled call", n)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	calls := int64(0)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == otelcanon.MetricOutcomes {
				for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
					calls += p.Value
				}
			}
		}
	}
	if calls != 1 {
		t.Errorf("outcomes counted %d calls, want 1", calls)
	}
}

// Attribute sets are cached up to a bound; past it every measurement is
// still recorded with its own attributes.
func TestMetricAttributesPastTheCacheBound(t *testing.T) {
	w := newWorld(t, storeKinds[0])
	const n = 1500 // past the cache's 1024, within the SDK's own cardinality limit of 2000
	for i := range n {
		w.obs.StoreOp(context.Background(), observe.StoreOp{Method: "Get", Command: "CMD" + strconv.Itoa(i), Start: time.Now(), Duration: time.Millisecond})
	}
	w.obs.StoreOp(context.Background(), observe.StoreOp{Method: "Get", Command: "CMD1", Start: time.Now(), Duration: time.Millisecond})
	counts := map[string]uint64{}
	for _, sm := range w.metrics().ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != otelcanon.MetricStoreDuration {
				continue
			}
			for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				v, _ := p.Attributes.Value(attribute.Key("db.operation.name"))
				counts[v.AsString()] += p.Count
			}
		}
	}
	if len(counts) != n || counts["CMD1"] != 2 || counts["CMD1499"] != 1 {
		t.Errorf("%d operation names, CMD1 %d times, CMD1499 %d times; want %d, 2, 1", len(counts), counts["CMD1"], counts["CMD1499"], n)
	}
}

// Without WithAgentResult the observer does not ask for results, so the
// boundary never hands it one.
func TestResultsAreOffByDefault(t *testing.T) {
	obs, err := otelcanon.New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if obs.ObservesResults() {
		t.Error("results are on by default")
	}
	opted, err := otelcanon.New(nil, nil, otelcanon.WithAgentResult())
	if err != nil {
		t.Fatal(err)
	}
	if !opted.ObservesResults() {
		t.Error("WithAgentResult did not turn results on")
	}
	// With the global no-op providers, a call still works and records nothing.
	ctx := opted.Start(context.Background(), observe.Call{Tool: "t", ToolCallID: "c", Start: time.Now()})
	if trace.SpanFromContext(ctx).IsRecording() {
		t.Error("a no-op provider recorded a span")
	}
	opted.Result(ctx, observe.Call{}, []byte(`{}`))
	opted.End(ctx, observe.Call{Start: time.Now()}, observe.Outcome{Status: canonical.StatusReady})
}
