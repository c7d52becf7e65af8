package otelcanon

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/propagation"
)

// MetaCarrier is an MCP request's _meta (mcp.Meta converts to it) as a
// propagation.TextMapCarrier: each field is the member of its name, a
// string. A member that is not a string is no field: Get reads "" and Keys
// leaves it out.
type MetaCarrier map[string]any

var _ propagation.TextMapCarrier = MetaCarrier(nil)

// Get returns the string member key, or "".
func (c MetaCarrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}

// Set sets the member key to value. c must not be nil.
func (c MetaCarrier) Set(key, value string) { c[key] = value }

// Keys returns the names of the string members, in no order.
func (c MetaCarrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k, v := range c {
		if _, ok := v.(string); ok {
			out = append(out, k)
		}
	}
	return out
}

// PropagatorOption configures a MetaPropagator.
type PropagatorOption func(*propagatorConfig)

type propagatorConfig struct{ baggage bool }

// WithBaggage also carries W3C Baggage ("baggage"), read from the agent's
// request and forwarded upstream. Off by default: baggage is free-form
// data of the caller's, and only the trace context is forwarded unless
// the host opts in.
func WithBaggage() PropagatorOption { return func(c *propagatorConfig) { c.baggage = true } }

// MetaPropagator carries the W3C trace context (traceparent, tracestate)
// in MCP _meta under those bare keys, as the MCP trace-context convention
// does. Its Extract and Inject are those of gateway.Propagator: a gateway
// given it makes each call's execute_tool span the child of the agent's
// traceparent, and passes the call's own span upstream. A missing or
// malformed traceparent is ignored: the span is then a root (or the child
// of whatever ctx already carried). It is safe for concurrent use.
type MetaPropagator struct {
	p propagation.TextMapPropagator
}

// NewMetaPropagator returns a MetaPropagator of the W3C trace context, and
// of W3C Baggage under WithBaggage.
func NewMetaPropagator(opts ...PropagatorOption) *MetaPropagator {
	var cfg propagatorConfig
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	var p propagation.TextMapPropagator = propagation.TraceContext{}
	if cfg.baggage {
		p = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	return &MetaPropagator{p: p}
}

// Extract returns ctx with the trace context meta carries as the remote
// parent of the spans started under it; ctx unchanged when meta carries
// none or a malformed one. meta is only read.
func (m *MetaPropagator) Extract(ctx context.Context, meta map[string]any) context.Context {
	if len(meta) == 0 {
		return ctx
	}
	return m.p.Extract(ctx, strictCarrier{MetaCarrier(meta)})
}

// strictCarrier hides a version-00 traceparent that is not exactly 55
// bytes, which W3C Trace Context forbids parsing and OpenTelemetry's
// parser accepts when the excess is a trailing "-".
type strictCarrier struct{ MetaCarrier }

// Get returns the member key, or "" for a malformed version-00 traceparent.
func (c strictCarrier) Get(key string) string {
	v := c.MetaCarrier.Get(key)
	if key == traceParentKey && strings.HasPrefix(v, "00-") && len(v) != traceParentLen {
		return ""
	}
	return v
}

const (
	traceParentKey = "traceparent"
	traceParentLen = 55 // version 00: "00-" 32 hex "-" 16 hex "-" 2 hex
)

// Inject sets in meta the trace context of ctx's span (traceparent, and
// tracestate when there is one; baggage under WithBaggage) and nothing
// else. It sets nothing when ctx has no valid span, or meta is nil.
func (m *MetaPropagator) Inject(ctx context.Context, meta map[string]any) {
	if meta == nil {
		return
	}
	m.p.Inject(ctx, MetaCarrier(meta))
}

// Fields returns the _meta keys Inject may set.
func (m *MetaPropagator) Fields() []string { return m.p.Fields() }
