package otelcanon_test

import (
	"context"
	"fmt"
	"sort"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/observe"
	"github.com/toolcanon/toolcanon/otelcanon"
	"github.com/toolcanon/toolcanon/registry"
)

func Example() {
	// The host's OpenTelemetry SDK; here spans stay in memory.
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))

	// Switching tracing on: one observer, given to the store and the boundary.
	obs, err := otelcanon.New(tp, mp, otelcanon.WithDBSystem("memory"))
	if err != nil {
		panic(err)
	}
	store := observe.Store(memstore.New(), obs)
	reg, err := registry.New(registry.Definition{
		Name: "kb.search", Version: "1.0.0", Description: "Search the knowledge base.", Effect: registry.EffectRead, Risk: registry.RiskLow, Timeout: 10 * time.Second,
		InputSchema: []byte(`{"type":"object","additionalProperties":false,"required":["query"],
			"properties":{"query":{"type":"string","minLength":1,"maxLength":256}}}`),
	})
	if err != nil {
		panic(err)
	}
	allow := registry.PolicyFunc(func(context.Context, string, registry.Principal, string) (registry.Decision, error) {
		return registry.Decision{Verdict: registry.VerdictAllow, Fence: registry.Fence{ProjectVersion: "1", RoleBindingVersion: "1"}}, nil
	})
	search := boundary.ToolFunc(func(context.Context, []byte) ([]byte, error) {
		return []byte(`{"hits":[{"id":"doc-7"}],"api_key":"sk-live-123"}`), nil
	})
	project := canonical.ProjectorFunc(func(_ context.Context, call canonical.Call, _ []byte) (canonical.Projection, error) {
		return canonical.Projection{Evidence: canonical.EvidenceFound, Result: []byte(`{"evidence":["doc-7"]}`)}, nil
	})
	b, err := boundary.New(store, reg, allow,
		boundary.Bind("search_docs", "kb.search", "1.0.0", search, project), boundary.WithObserver(obs))
	if err != nil {
		panic(err)
	}

	run := boundary.RunContext{ID: "run-42", Project: "support", Active: true, TTL: time.Hour,
		Principal: registry.Principal{Subject: "user:alice", ExpiresAt: time.Now().Add(time.Hour)}}
	b.Invoke(context.Background(), run, boundary.Envelope{
		ToolCallID: "call_1", RunID: run.ID, Tool: "search_docs", Input: []byte(`{"query":"refunds"}`)})

	// The call's span, then its children in the order they started.
	got := spans.GetSpans()
	sort.SliceStable(got, func(i, j int) bool { return got[i].StartTime.Before(got[j].StartTime) })
	for _, s := range got {
		if !s.Parent.IsValid() {
			fmt.Println(s.Name)
		}
	}
	for _, s := range got {
		if s.Parent.IsValid() {
			fmt.Println("  " + s.Name)
		}
	}
	// Output:
	// execute_tool search_docs
	//   preflight
	//   EVALSHA begin
	//   tool
	//   projector
	//   EVALSHA complete
}

func ExampleMetaPropagator() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	p := otelcanon.NewMetaPropagator() // a gateway.Propagator: gateway.OpenOptions{Propagator: p}

	// An agent's tools/call carries its trace context in _meta.
	request := map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	ctx, span := tp.Tracer("example").Start(p.Extract(context.Background(), request), "execute_tool search")

	// The upstream's tools/call carries the call's span as its parent.
	upstream := map[string]any{}
	p.Inject(ctx, upstream)
	span.End()

	got := spans.Ended()[0]
	fmt.Println("trace:", got.SpanContext().TraceID())
	fmt.Println("parent:", got.Parent().SpanID(), "remote:", got.Parent().IsRemote())
	fmt.Println("upstream parent is ours:", upstream["traceparent"] == "00-"+got.SpanContext().TraceID().String()+"-"+got.SpanContext().SpanID().String()+"-01")
	// Output:
	// trace: 4bf92f3577b34da6a3ce929d0e0e4736
	// parent: 00f067aa0ba902b7 remote: true
	// upstream parent is ours: true
}
