package gateway

import "context"

// The _meta keys of a trace context, as the MCP trace-context convention
// carries it: the W3C Trace Context fields under their bare names. The
// gateway itself reads none of them; a Propagator does.
const (
	MetaTraceParent = "traceparent"
	MetaTraceState  = "tracestate"
	MetaBaggage     = "baggage"
)

// Propagator carries a trace context in MCP _meta, so that a call's span
// joins the agent's trace and the upstream's spans join the call's. The
// gateway has no tracing dependency of its own: the host supplies one
// (otelcanon.MetaPropagator is OpenTelemetry's). It must be safe for
// concurrent use.
type Propagator interface {
	// Extract returns ctx carrying the trace context meta holds, as the
	// remote parent of the spans started under it; ctx unchanged when meta
	// holds none, or a malformed one: a trace context never fails a call.
	// meta may be nil; it must not be changed or kept.
	Extract(ctx context.Context, meta map[string]any) context.Context
	// Inject sets in meta, which is never nil, the keys of ctx's trace
	// context and nothing else.
	Inject(ctx context.Context, meta map[string]any)
}
