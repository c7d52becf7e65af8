// Package boundary is the single entry through which an agent's tool call
// runs, and the only code that turns a call into a canonical record.
//
// A Boundary is built once from a canonical.Store, a frozen
// *registry.Registry, a registry.Policy and the bindings of agent-facing tool
// names to exact (name, version) definitions, each with its Tool executor and
// canonical.Projector. Invoke then runs one call in a fixed order:
//
//  1. preflight, without side effects: id syntax, the envelope's run is the
//     RunContext's run, the run is active and in time, the tool is bound,
//     registry.PrepareRead (policy, read-only effect before the input is
//     read, approval, input schema), a ready plan, valid budgets, a record
//     TTL that outlives the call (tool timeout + projection timeout + store
//     retry budget);
//  2. Store.Begin: the record exists, PROJECTING, with the complete canonical
//     request, before anything runs (the store enforces duplicates, budgets
//     and run state atomically);
//  3. the tool, in its own goroutine, bounded by its timeout (TOOL_TIMEOUT)
//     and the run's deadline (DEADLINE_EXCEEDED);
//  4. the raw size check (the projector never sees an oversized response),
//     then the definition's output schema, when it declares one (a response
//     outside it is EXECUTION_FAILED and is never projected);
//  5. the projector, in its own goroutine, bounded by the projection timeout
//     and the run's deadline; its result must be strict JSON within the
//     agent limit (a projector's own RESULT_TOO_LARGE stays RESULT_TOO_LARGE,
//     any other projector error or an overrun is PROJECTION_FAILED);
//  6. Store.Complete: READY, or ERROR with a stable code.
//
// A tool that needs the agent's input first returns InputRequired: the
// call is not completed but kept open (canonical.Continuer), and the agent's
// answer, the same call with Envelope.Continue, continues it at step 2
// (ContinueCall in place of Begin) with everything before it checked again.
//
// The raw response is kept whole in the record. A definition that declares
// an output schema gets it enforced on the raw response before projecting,
// within the registry's 256 KiB output bound; one without an output schema
// declares no typed output, and its raw response stays opaque bytes that only
// the projector reads (the registry's "only null" concerns typed output, not
// the bytes the record keeps).
//
// InvokeWith runs a call the same way with the caller's execution in place
// of the bound tool (a framework middleware's `next`, for a definition bound
// with BindNext); InvokeAll runs one model turn's calls concurrently under a
// bound and returns them in the turn's order. The adapters (adapters/eino,
// adapters/openai, adapters/anthropic, adapters/mcpgo, modules of their
// own) are built on these two.
//
// Invoke never panics and never returns raw data. The agent sees only
// Result.AgentJSON: the bounded projection, or a fixed error object with a
// stable code and a short fixed hint. Everything else in a Result is for the
// harness.
package boundary
