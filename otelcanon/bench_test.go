package otelcanon_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/observe"
	"github.com/toolcanon/toolcanon/otelcanon"
	"github.com/toolcanon/toolcanon/registry"
)

// discard is a span processor that records every span and drops it when it
// ends: the SDK's full cost without an exporter's.
type discard struct{}

func (discard) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (discard) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (discard) Shutdown(context.Context) error                  { return nil }
func (discard) ForceFlush(context.Context) error                { return nil }

// BenchmarkInvoke is one READY call on the in-memory store (where the
// observer's share is largest), without an observer and with the
// OpenTelemetry observer on no-op and on recording providers, the store
// decorated too. The difference in ns/op is the observer's cost per call.
func BenchmarkInvoke(b *testing.B) {
	reg, err := registry.New(def("kb.search", registry.EffectRead))
	if err != nil {
		b.Fatal(err)
	}
	raw := []byte(`{"hits":[{"id":"doc-1","text":"Refunds need a second approver."}]}`)
	tool := boundary.ToolFunc(func(context.Context, []byte) ([]byte, error) { return raw, nil })
	proj := canonical.ProjectorFunc(func(_ context.Context, call canonical.Call, _ []byte) (canonical.Projection, error) {
		return canonical.Projection{Evidence: canonical.EvidenceFound, Result: []byte(`{"evidence":["doc-1"]}`)}, nil
	})
	noop, err := otelcanon.New(tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider())
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(discard{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	recording, err := otelcanon.New(tp, mp)
	if err != nil {
		b.Fatal(err)
	}
	logger := observe.NewLogger(slog.New(slog.NewJSONHandler(io.Discard, nil)))

	type observer interface {
		observe.Observer
		observe.StoreObserver
	}
	cases := []struct {
		name string
		obs  observer
	}{
		{"none", nil},
		{"otel-noop", noop},
		{"otel-recording", recording},
		{"slog", logger},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var bd *boundary.Boundary
			fresh := func() {
				var s canonical.Store = memstore.New()
				opts := []boundary.Option{boundary.Bind("search_docs", "kb.search", "1.0.0", tool, proj)}
				if c.obs != nil {
					s = observe.Store(s, c.obs)
					opts = append(opts, boundary.WithObserver(c.obs))
				}
				if bd, err = boundary.New(s, reg, policy("m"), opts...); err != nil {
					b.Fatal(err)
				}
			}
			run := boundary.RunContext{
				Project: "support", Principal: registry.Principal{Subject: "user:alice", ExpiresAt: time.Now().Add(time.Hour)},
				Active: true, TTL: time.Minute,
			}
			env := boundary.Envelope{Tool: "search_docs", Input: []byte(`{"query":"refund rules"}`)}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if i%50 == 0 { // a run's default budget is 64 calls per tool; a fresh store keeps memory flat
					b.StopTimer()
					if i%1000 == 0 {
						fresh()
					}
					run.ID = "run-" + strconv.Itoa(i)
					b.StartTimer()
				}
				env.RunID, env.ToolCallID = run.ID, "call_"+strconv.Itoa(i)
				if res := bd.Invoke(ctx, run, env); res.Code() != "" {
					b.Fatalf("%s: %v", res.Code(), res.Err())
				}
			}
		})
	}
}
