package otelcanon_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/baggage"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/otelcanon"
)

var _ gateway.Propagator = (*otelcanon.MetaPropagator)(nil)

const (
	inTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	inSpanID  = "00f067aa0ba902b7"
	inParent  = "00-" + inTraceID + "-" + inSpanID + "-01"
	inState   = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
)

func TestMetaPropagatorJoinsAndForwardsTheTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	p := otelcanon.NewMetaPropagator()

	in := map[string]any{"traceparent": inParent, "tracestate": inState, "baggage": "user=alice",
		"io.github.toolcanon/toolCallId": "call_1"}
	before := len(in)
	ctx := p.Extract(context.Background(), in)
	if len(in) != before {
		t.Fatalf("Extract changed the request's _meta: %v", in)
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsRemote() || sc.TraceID().String() != inTraceID || sc.SpanID().String() != inSpanID || !sc.IsSampled() {
		t.Fatalf("extracted %+v", sc)
	}
	if sc.TraceState().String() != inState {
		t.Errorf("tracestate %q", sc.TraceState().String())
	}
	if baggage.FromContext(ctx).Len() != 0 {
		t.Error("baggage extracted without WithBaggage")
	}

	ctx, span := tp.Tracer("test").Start(ctx, "execute_tool search")
	out := map[string]any{}
	p.Inject(ctx, out)
	span.End()
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"traceparent", "tracestate"}) {
		t.Fatalf("injected keys %v, want the trace context only", keys)
	}
	want := "00-" + inTraceID + "-" + span.SpanContext().SpanID().String() + "-01"
	if out["traceparent"] != want || out["tracestate"] != inState {
		t.Errorf("injected %v, want traceparent %s", out, want)
	}
	ended := rec.Ended()
	if len(ended) != 1 || ended[0].Parent().SpanID().String() != inSpanID || !ended[0].Parent().IsRemote() {
		t.Fatalf("the span's parent is not the request's: %+v", ended)
	}

	// Nothing to inject without a span, nor into nil.
	empty := map[string]any{}
	p.Inject(context.Background(), empty)
	p.Inject(ctx, nil)
	if len(empty) != 0 {
		t.Errorf("injected %v without a span", empty)
	}
	if f := p.Fields(); !slices.Equal(f, []string{"traceparent", "tracestate"}) {
		t.Errorf("fields %v", f)
	}
}

func TestMetaPropagatorBaggageIsOptIn(t *testing.T) {
	p := otelcanon.NewMetaPropagator(otelcanon.WithBaggage())
	ctx := p.Extract(context.Background(), map[string]any{"traceparent": inParent, "baggage": "user=alice,tier=gold"})
	if got := baggage.FromContext(ctx).Member("user").Value(); got != "alice" {
		t.Fatalf("baggage user=%q", got)
	}
	out := map[string]any{}
	p.Inject(ctx, out)
	b, _ := out["baggage"].(string)
	if !strings.Contains(b, "user=alice") || !strings.Contains(b, "tier=gold") || out["traceparent"] != inParent {
		t.Errorf("forwarded %v", out)
	}
	if f := p.Fields(); !slices.Contains(f, "baggage") {
		t.Errorf("fields %v", f)
	}
}

func TestMetaPropagatorIgnoresWhatIsNoTraceContext(t *testing.T) {
	p := otelcanon.NewMetaPropagator(otelcanon.WithBaggage())
	for _, meta := range []map[string]any{
		nil,
		{},
		{"traceparent": 42},
		{"traceparent": []any{inParent}},
		{"traceparent": map[string]any{"traceparent": inParent}},
		{"traceparent": nil},
		{"Traceparent": inParent},
		{"traceparent": " " + inParent},
		{"traceparent": "00-" + inTraceID + "-" + inSpanID + "-01-"},
		{"traceparent": "00-" + inTraceID + "-" + inSpanID + "-1"},
		{"baggage": 7, "tracestate": inState},
	} {
		ctx := p.Extract(context.Background(), meta)
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			t.Errorf("%v: extracted %s/%s", meta, sc.TraceID(), sc.SpanID())
		}
		if baggage.FromContext(ctx).Len() != 0 {
			t.Errorf("%v: extracted baggage", meta)
		}
	}
	// A malformed traceparent leaves a span the context already had.
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	ctx := p.Extract(trace.ContextWithSpanContext(context.Background(), parent), map[string]any{"traceparent": "garbage"})
	if !trace.SpanContextFromContext(ctx).Equal(parent) {
		t.Error("a malformed traceparent replaced the context's span")
	}
}

func TestMetaCarrier(t *testing.T) {
	c := otelcanon.MetaCarrier{"a": "1", "b": 2, "c": nil, "d": ""}
	if c.Get("a") != "1" || c.Get("b") != "" || c.Get("c") != "" || c.Get("missing") != "" {
		t.Errorf("get: %q %q %q", c.Get("a"), c.Get("b"), c.Get("c"))
	}
	keys := c.Keys()
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"a", "d"}) {
		t.Errorf("keys %v, want the string members", keys)
	}
	c.Set("b", "3")
	if c.Get("b") != "3" {
		t.Errorf("set: %v", c)
	}
	if otelcanon.MetaCarrier(nil).Get("a") != "" || len(otelcanon.MetaCarrier(nil).Keys()) != 0 {
		t.Error("a nil carrier has members")
	}
}

// FuzzMetaPropagator feeds Extract a _meta of hostile traceparent,
// tracestate and baggage values, or any JSON object: it never panics,
// extracts a context only from a traceparent whose ids it carries, and
// what Inject writes back is the trace context alone and extracts again
// to the same context.
func FuzzMetaPropagator(f *testing.F) {
	f.Add(inParent, inState, "user=alice", []byte(`{}`))
	f.Add("00-"+inTraceID+"-"+inSpanID+"-00", "", "", []byte(`{"traceparent":1}`))
	f.Add("01-"+inTraceID+"-"+inSpanID+"-03-future", "a=b", "k=v;p=1", []byte(`{"traceparent":"`+inParent+`","tracestate":["x"]}`))
	f.Add("00-"+inTraceID+"-"+inSpanID+"-ff", strings.Repeat("k=v,", 33)+"k=v", strings.Repeat("a=b,", 200), []byte(`null`))
	f.Add("zz-"+inTraceID+"-"+inSpanID+"-01", "=,=", "%zz=1", []byte(`{"baggage":"user=bob","traceparent":"00-`+inTraceID+`-`+inSpanID+`-01"}`))
	plain, withBaggage := otelcanon.NewMetaPropagator(), otelcanon.NewMetaPropagator(otelcanon.WithBaggage())
	f.Fuzz(func(t *testing.T, parent, state, bag string, doc []byte) {
		metas := []map[string]any{{"traceparent": parent, "tracestate": state, "baggage": bag}}
		var m map[string]any
		if json.Unmarshal(doc, &m) == nil {
			metas = append(metas, m)
		}
		for _, meta := range metas {
			for _, p := range []*otelcanon.MetaPropagator{plain, withBaggage} {
				ctx := p.Extract(context.Background(), meta)
				sc := trace.SpanContextFromContext(ctx)
				if sc.IsValid() {
					tp, _ := meta["traceparent"].(string)
					if len(tp) < 55 || (tp[:3] == "00-" && len(tp) != 55) ||
						tp[3:35] != sc.TraceID().String() || tp[36:52] != sc.SpanID().String() || !sc.IsRemote() {
						t.Fatalf("extracted %s/%s from traceparent %q", sc.TraceID(), sc.SpanID(), tp)
					}
				}
				out := map[string]any{}
				p.Inject(ctx, out)
				for k := range out {
					if !slices.Contains(p.Fields(), k) {
						t.Fatalf("injected the key %q", k)
					}
				}
				if _, ok := out["traceparent"]; ok != sc.IsValid() {
					t.Fatalf("injected traceparent %v for a context valid=%v", out["traceparent"], sc.IsValid())
				}
				again := trace.SpanContextFromContext(p.Extract(context.Background(), out))
				if !again.Equal(sc) {
					t.Fatalf("round trip: %+v, want %+v (via %v)", again, sc, out)
				}
			}
		}
	})
}
