// Package otelcanon records toolcanon's calls and store operations as
// OpenTelemetry traces and metrics.
//
// An Observer is given to a Boundary (boundary.WithObserver) and to the
// store it runs on (observe.Store). Each Invoke is one span,
// "execute_tool {tool}", kind INTERNAL, with gen_ai.operation.name set at
// creation, gen_ai.tool.name, gen_ai.tool.call.id, the run id
// (toolcanon.run.id) and, on failure, error.type set to the stable code. Its
// children are the phases that run host code — preflight (the policy), the
// tool, the projector — and one span per store operation: "EVALSHA begin",
// "EVALSHA complete", … with db.system.name, db.operation.name and
// db.stored_procedure.name (the script).
//
// Metrics: gen_ai.execute_tool.duration by tool and error.type, the outcomes
// by code, the store's budget and duplicate refusals, each phase's duration,
// and db.client.operation.duration per script. No metric carries a run or
// call id.
//
// No payload byte is ever an attribute, event, status message or metric
// attribute: not the input, the raw response, an error's text, a key or a
// Redis reply. WithAgentResult opts in to one: the agent-facing result, as
// gen_ai.tool.call.result.
//
// MetaPropagator carries the W3C trace context in MCP _meta (traceparent,
// tracestate; baggage under WithBaggage) for the MCP gateway
// (gateway.Propagator): each call's span is the child of the agent's
// traceparent, and the upstream's tools/call carries the call's span.
//
// The package depends on the OpenTelemetry API only; the host chooses the
// SDK and exporters.
package otelcanon
