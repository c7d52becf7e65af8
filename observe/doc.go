// Package observe is how a host sees what toolcanon does without seeing what
// the calls carry.
//
// Two hooks, both free of any telemetry library:
//
//   - an Observer, given to a Boundary with boundary.WithObserver, is told
//     when each Invoke starts, once per phase it went through (Preflight,
//     Begin, Tool, Projection, Complete) and once when it ends, with the
//     call's validated identity, tool, outcome code, status, evidence, byte
//     sizes and durations;
//   - Store wraps any canonical.Store and tells a StoreObserver of every store
//     operation: the method, the lifecycle script it ran (begin, complete,
//     close_run, observe_progress) or the read command, its duration and code.
//
// Neither hook ever carries a payload byte — no input, raw response, result,
// error text, key or Redis reply — nor an id or tool name that failed
// validation, since such text could carry anything. The one exception is
// opt-in and explicit: an observer that implements ResultObserver and
// reports ObservesResults is also handed the agent-facing result, which is
// what the agent sees anyway.
//
// Logger writes one log/slog line per call from these events. The
// OpenTelemetry adapter is package otelcanon, so that nothing here, in
// canonical or in boundary depends on OpenTelemetry.
package observe
