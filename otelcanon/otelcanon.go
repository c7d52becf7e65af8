package otelcanon

import (
	"context"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/observe"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/toolcanon/toolcanon/otelcanon"

// OperationExecuteTool is the GenAI operation name of an Invoke.
const OperationExecuteTool = "execute_tool"

// Names of the child spans of a call's phases. Begin and Complete have
// none of their own: they are the store's script spans (see Store).
const (
	SpanPreflight = "preflight"
	SpanTool      = "tool"
	SpanProjector = "projector"
)

// Option configures an Observer.
type Option func(*config)

type config struct {
	results  bool
	dbSystem string
}

// WithAgentResult records each call's agent-facing result — the bytes
// Result.AgentJSON returns, and nothing else of the call's payloads — as the
// span attribute gen_ai.tool.call.result. Off by default: turn it on only
// where a trace store may hold what the agent saw.
func WithAgentResult() Option { return func(c *config) { c.results = true } }

// WithDBSystem sets db.system.name of the store's spans and metrics (default
// "redis"). Store spans are CLIENT spans for Redis and INTERNAL spans for any
// other system, such as an in-memory store.
func WithDBSystem(name string) Option { return func(c *config) { c.dbSystem = name } }

// Observer records calls and store operations as OpenTelemetry spans and
// metrics. It is an observe.ResultObserver (for boundary.WithObserver) and an
// observe.StoreObserver (for observe.Store), safe for concurrent use.
type Observer struct {
	tracer   trace.Tracer
	results  bool
	dbSystem attribute.KeyValue
	dbKind   trace.SpanKind

	duration  metric.Float64Histogram // gen_ai.execute_tool.duration
	outcomes  metric.Int64Counter     // toolcanon.call.outcomes
	refusals  metric.Int64Counter     // toolcanon.call.refusals
	phases    metric.Float64Histogram // toolcanon.call.phase.duration
	storeDurs metric.Float64Histogram // db.client.operation.duration

	sets attrSets // metric attributes, by what they are made of
}

var (
	_ observe.ResultObserver = (*Observer)(nil)
	_ observe.StoreObserver  = (*Observer)(nil)
)

// New returns an Observer recording to tp and mp; a nil provider means the
// global one (otel.GetTracerProvider, otel.GetMeterProvider). It fails only
// when the meter refuses an instrument.
func New(tp trace.TracerProvider, mp metric.MeterProvider, opts ...Option) (*Observer, error) {
	cfg := config{dbSystem: semconv.DBSystemNameRedis.Value.AsString()}
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	o := &Observer{
		tracer:   tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		results:  cfg.results,
		dbSystem: semconv.DBSystemNameKey.String(cfg.dbSystem),
		dbKind:   trace.SpanKindInternal,
	}
	if cfg.dbSystem == semconv.DBSystemNameRedis.Value.AsString() {
		o.dbKind = trace.SpanKindClient
	}
	if err := o.instruments(mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))); err != nil {
		return nil, canonical.Wrap(canonical.CodeInvalidArgument, err, "otelcanon: create instruments")
	}
	return o, nil
}

// callKey finds, in a call's context, the span this Observer started for it.
type callKey struct{ o *Observer }

// Start implements observe.Observer: it starts the call's span,
// "execute_tool {tool}", kind INTERNAL, with the GenAI attributes a sampler
// may look at.
func (o *Observer) Start(ctx context.Context, c observe.Call) context.Context {
	name := OperationExecuteTool
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, GenAIOperationNameKey.String(OperationExecuteTool))
	if c.Tool != "" {
		name += " " + c.Tool
		attrs = append(attrs, GenAIToolNameKey.String(c.Tool), ToolDefinitionKey.String(c.Name+"@"+c.Version))
	}
	if c.ToolCallID != "" {
		attrs = append(attrs, GenAIToolCallIDKey.String(c.ToolCallID))
	}
	if c.RunID != "" {
		attrs = append(attrs, RunIDKey.String(c.RunID))
	}
	ctx, span := o.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(c.Start), trace.WithAttributes(attrs...))
	// A store with audit on names the call's span in its events.
	if sc := span.SpanContext(); sc.IsValid() {
		ctx = canonical.WithTrace(ctx, canonical.Trace{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String()})
	}
	return context.WithValue(ctx, callKey{o}, span)
}

// Phase implements observe.Observer: a child span for preflight, the tool
// and the projector, and the phase's duration metric.
func (o *Observer) Phase(ctx context.Context, c observe.Call, e observe.PhaseEvent) {
	if o.phases.Enabled(ctx) {
		opt := o.sets.get(setKey{metric: mPhase, a: e.Phase.String(), b: c.Tool, c: string(e.Code)}, func(k setKey) []attribute.KeyValue {
			return appendError(appendTool(append(make([]attribute.KeyValue, 0, 3), PhaseKey.String(k.a)), k.b), canonical.Code(k.c))
		})
		o.phases.Record(ctx, e.Duration.Seconds(), opt)
	}
	var name string
	switch e.Phase {
	case observe.Preflight:
		name = SpanPreflight
	case observe.Tool:
		name = SpanTool
	case observe.Projection:
		name = SpanProjector
	default:
		return
	}
	parent, ok := ctx.Value(callKey{o}).(trace.Span)
	if !ok || !parent.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 4)
	attrs = append(attrs, PhaseKey.String(e.Phase.String()), SizeKey.Int(e.Bytes))
	if e.Evidence != "" {
		attrs = append(attrs, EvidenceKey.String(string(e.Evidence)))
	}
	attrs = appendError(attrs, e.Code)
	_, span := o.tracer.Start(trace.ContextWithSpan(ctx, parent), name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(e.Start), trace.WithAttributes(attrs...))
	if e.Code != "" {
		span.SetStatus(codes.Error, string(e.Code))
	}
	span.End(trace.WithTimestamp(e.Start.Add(e.Duration)))
}

// ObservesResults implements observe.ResultObserver: true only under
// WithAgentResult.
func (o *Observer) ObservesResults() bool { return o.results }

// Result implements observe.ResultObserver: the agent-facing result as
// gen_ai.tool.call.result, under WithAgentResult only.
func (o *Observer) Result(ctx context.Context, _ observe.Call, agentJSON []byte) {
	if !o.results {
		return
	}
	if span, ok := ctx.Value(callKey{o}).(trace.Span); ok && span.IsRecording() {
		span.SetAttributes(GenAIToolCallResultKey.String(string(agentJSON)))
	}
}

// End implements observe.Observer: it ends the call's span with the outcome
// and records the call's metrics.
func (o *Observer) End(ctx context.Context, c observe.Call, out observe.Outcome) {
	if span, ok := ctx.Value(callKey{o}).(trace.Span); ok {
		if span.IsRecording() {
			attrs := make([]attribute.KeyValue, 0, 12)
			attrs = append(attrs, StatusKey.String(string(out.Status)), EvidenceKey.String(string(out.Evidence)),
				ExecutedKey.Bool(out.Executed), ReplayedKey.Bool(out.Replayed),
				InputSizeKey.Int(out.InputBytes), RequestSizeKey.Int(out.RequestBytes), RawSizeKey.Int(out.RawBytes),
				ResultSizeKey.Int(out.ResultBytes), AgentSizeKey.Int(out.AgentBytes))
			if out.Code != "" {
				attrs = append(attrs, CodeKey.String(string(out.Code)), semconv.ErrorTypeKey.String(string(out.Code)))
				span.SetStatus(codes.Error, string(out.Code))
			}
			span.SetAttributes(attrs...)
		}
		span.End(trace.WithTimestamp(c.Start.Add(out.Duration)))
	}
	if o.duration.Enabled(ctx) {
		opt := o.sets.get(setKey{metric: mDuration, a: c.Tool, b: string(out.Code)}, func(k setKey) []attribute.KeyValue {
			attrs := append(make([]attribute.KeyValue, 0, 3), GenAIOperationNameKey.String(OperationExecuteTool))
			return appendError(appendTool(attrs, k.a), canonical.Code(k.b))
		})
		o.duration.Record(ctx, out.Duration.Seconds(), opt)
	}
	if o.outcomes.Enabled(ctx) {
		key := setKey{metric: mOutcome, a: c.Tool, b: string(out.Status), c: string(out.Code), d: string(out.Evidence), flag: out.Replayed}
		opt := o.sets.get(key, func(k setKey) []attribute.KeyValue {
			attrs := appendTool(make([]attribute.KeyValue, 0, 4), k.a)
			attrs = append(attrs, StatusKey.String(k.b), ReplayedKey.Bool(k.flag))
			if k.c != "" {
				return append(attrs, CodeKey.String(k.c))
			}
			return append(attrs, EvidenceKey.String(k.d))
		})
		o.outcomes.Add(ctx, 1, opt)
	}
	if refusal(out) && o.refusals.Enabled(ctx) {
		opt := o.sets.get(setKey{metric: mRefusal, a: c.Tool, b: string(out.Code)}, func(k setKey) []attribute.KeyValue {
			return append(appendTool(make([]attribute.KeyValue, 0, 2), k.a), CodeKey.String(k.b))
		})
		o.refusals.Add(ctx, 1, opt)
	}
}

// refusal reports whether the store refused the call at Begin for its
// budget or as a duplicate: the refusals an operator watches for runaway
// agents and id-reusing frameworks.
func refusal(out observe.Outcome) bool {
	if out.Executed || out.Replayed {
		return false
	}
	switch out.Code {
	case canonical.CodeBudgetExhausted, canonical.CodeDuplicateToolCall, canonical.CodeToolCallInProgress:
		return true
	}
	return false
}

// StoreOp implements observe.StoreObserver: a span per store operation
// (a child of the call's span when it runs inside a call) and its duration
// in db.client.operation.duration.
func (o *Observer) StoreOp(ctx context.Context, op observe.StoreOp) {
	if o.storeDurs.Enabled(ctx) {
		opt := o.sets.get(setKey{metric: mStore, a: op.Command, b: op.Script, c: string(op.Code)}, func(k setKey) []attribute.KeyValue {
			attrs := append(make([]attribute.KeyValue, 0, 4), o.dbSystem, semconv.DBOperationNameKey.String(k.a))
			if k.b != "" {
				attrs = append(attrs, semconv.DBStoredProcedureNameKey.String(k.b))
			}
			return appendError(attrs, canonical.Code(k.c))
		})
		o.storeDurs.Record(ctx, op.Duration.Seconds(), opt)
	}
	if call, ok := ctx.Value(callKey{o}).(trace.Span); ok && !call.IsRecording() {
		return // the call is not sampled: neither are its store operations
	}
	parent := trace.SpanFromContext(ctx)
	if parent.SpanContext().IsValid() && !parent.IsRecording() {
		return
	}
	name := op.Command
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs, o.dbSystem, semconv.DBOperationNameKey.String(op.Command), StoreMethodKey.String(op.Method))
	if op.Script != "" {
		name += " " + op.Script
		attrs = append(attrs, semconv.DBStoredProcedureNameKey.String(op.Script))
	}
	if op.Items > 1 {
		attrs = append(attrs, semconv.DBOperationBatchSizeKey.Int(op.Items))
	}
	if !parent.SpanContext().IsValid() && op.RunID != "" {
		attrs = append(attrs, RunIDKey.String(op.RunID)) // a root span: say which run
	}
	attrs = appendError(attrs, op.Code)
	_, span := o.tracer.Start(ctx, name, trace.WithSpanKind(o.dbKind), trace.WithTimestamp(op.Start), trace.WithAttributes(attrs...))
	if op.Code != "" {
		span.SetStatus(codes.Error, string(op.Code))
	}
	span.End(trace.WithTimestamp(op.Start.Add(op.Duration)))
}

func appendTool(attrs []attribute.KeyValue, tool string) []attribute.KeyValue {
	if tool == "" {
		return attrs
	}
	return append(attrs, GenAIToolNameKey.String(tool))
}

func appendError(attrs []attribute.KeyValue, code canonical.Code) []attribute.KeyValue {
	if code == "" {
		return attrs
	}
	return append(attrs, semconv.ErrorTypeKey.String(string(code)))
}

// Metrics whose attribute sets are cached.
const (
	mDuration uint8 = iota + 1
	mOutcome
	mRefusal
	mPhase
	mStore
)

// setKey is what one metric's attributes are made of: bound tool names,
// stable codes, phases and store operations only, so there are few.
type setKey struct {
	metric     uint8
	flag       bool
	a, b, c, d string
}

// maxSets bounds the cache, should a caller hand StoreOp or End values that
// did not come from a Boundary; past it, sets are built for each record.
const maxSets = 1024

// attrSets caches each metric's attribute set as a ready option, so that a
// measurement neither sorts attributes nor allocates.
type attrSets struct {
	m sync.Map // setKey -> metric.MeasurementOption
	n atomic.Int64
}

func (s *attrSets) get(k setKey, build func(setKey) []attribute.KeyValue) metric.MeasurementOption {
	if v, ok := s.m.Load(k); ok {
		return v.(metric.MeasurementOption)
	}
	opt := metric.WithAttributeSet(attribute.NewSet(build(k)...))
	if s.n.Load() < maxSets {
		if _, loaded := s.m.LoadOrStore(k, opt); !loaded {
			s.n.Add(1)
		}
	}
	return opt
}
