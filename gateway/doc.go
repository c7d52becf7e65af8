// Package gateway puts the boundary in front of MCP: every tools/call of
// any MCP agent runs through preflight, the canonical record, the tool and
// its projector, and the agent gets only the bounded result or a stable
// code with its hint. It is built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk) and sits above package boundary.
//
// There are three ways in:
//
//   - NewServer: an MCP server that lists exactly the tools bound in a
//     boundary.Boundary, as the registry defines them, and routes each call
//     to Invoke.
//   - Middleware: for an existing go-sdk server. Each tools/call runs
//     through the boundary; the server's own handler (bound as ServerTool)
//     runs as the tool with exactly the canonical input that was recorded,
//     and its whole CallToolResult is the record's raw response.
//   - Open: a Gateway in front of upstream MCP servers, from a Config file
//     (LoadConfig). The command `toolcanon gateway` serves it.
//
// # Identity
//
// MCP has no field for the model's tool_call_id or for a run. They are read
// from the request's _meta under MetaToolCallID and MetaRunID, and under
// the aliases of Identity. A call without a usable tool_call_id is refused
// with INVALID_TOOL_CALL_ID: the gateway never makes up or replaces an id,
// and the progress token and the JSON-RPC id are not identities. The run
// comes from a RunResolver the host supplies (StaticRuns reads it from an
// HTTP header, _meta or a default, and the principal from a verified bearer
// token). Boundary outcomes are tool results, with isError and the agent
// JSON (code and fixed hint) as text, so that the model reads the hint;
// only a call with no run (CodeNoRun) or no principal (CodeUnauthenticated)
// gets a JSON-RPC error.
//
// # Runs and principals
//
// A run belongs to the principal of its first call (canonical.Store); a
// progress report or a close claims no run. Which principal may begin
// which run is the RunResolver's to say: StaticRuns puts the run an agent
// names in its principal's own namespace (PrincipalRun), so that naming a
// run first claims nothing of another principal's. A host that mints run
// ids hands the gateway a run with a signed run token (MintRunToken,
// VerifyRunToken; StaticRuns.RunTokens): HMAC-SHA256, under a key named by
// its id, over the gateway's audience, the run id, the principal and an
// expiry, sent in the RunTokenHeader header or under MetaRunToken in _meta;
// the token's run is the store's run id as it is. A token is a credential
// for that run until it expires: keep it as secret as a bearer token.
// Another principal that reaches a run gets RUN_FORBIDDEN for tools/call
// and for the progress tools, which also ask the policy for
// tool.call:<name> like every tool. Caps bound each principal's calls in
// flight, new runs per minute and live runs.
//
// # OAuth
//
// With http.oauth (OAuthConfig) the HTTP listener is an OAuth 2.1
// resource server: it verifies JWT access tokens against the issuer's key
// set, for its own resource only, serves its protected resource metadata
// (MetadataPaths) and names it in every 401, and answers a token whose
// scopes fall short with 403 insufficient_scope. A Grant with Scopes
// covers only calls with such a token carrying one of them. The token is
// never passed to an upstream.
//
// # Trace context
//
// The gateway takes a Propagator (Options.Propagator, and
// OpenOptions.Propagator, which is also each upstream's): it reads a
// request's trace context from its _meta (MetaTraceParent,
// MetaTraceState) before the call runs, so that the call's span, an
// observer's, is the child of the agent's, and writes the call's own into
// the _meta of the upstream's tools/call — the trace context alone, never
// the agent's identity keys. A missing or malformed one is ignored. The
// package has no tracing dependency: otelcanon.MetaPropagator is the
// OpenTelemetry Propagator, and `toolcanon gateway --trace-file FILE`
// exports the spans.
//
// # Pinned definitions
//
// A configuration exposes an upstream tool only when it lists it (deny by
// default), with the registry definition agents see and the Digest of the
// upstream's name, description and input schema as an operator reviewed
// it. On every connection, and whenever the upstream announces a changed
// tool list, the gateway compares; a tool whose definition changed is
// refused with TOOL_DEFINITION_CHANGED, and logged with both digests, until
// it matches its pin again. Drafts (`toolcanon gateway pin`) prints each
// upstream tool's digest and a draft entry for review; nothing is pinned
// automatically.
//
// # Live calls
//
// While a call runs, the agent gets what MCP clients expect of it: the
// upstream's progress under the agent's progressToken (each call has a
// token of its own upstream), its log messages, and its sampling and
// elicitation requests when the agent declared them (else a JSON-RPC
// error); progress, log and request text is redacted, bounded and
// rate-limited per call. Log messages and requests name no call, so they
// pass only to the agent of the call they came with: over HTTP, the call
// on whose response stream they arrived; over stdio, the agent session
// whose own upstream process sent them (a stdio upstream runs one for each
// agent session that asked for them). Any other is dropped, or refused. A notifications/cancelled reaches
// the upstream in every mode: stateless HTTP finds the call by principal
// and JSON-RPC id, through a CancelRelay (redisstore.Store) when another
// replica runs it. A cancelled call is CANCELLED; an upstream that cannot
// be started or reached is UPSTREAM_UNAVAILABLE, with executed false.
//
// An agent of MCP 2026-07-28 that declared sampling or elicitation
// is asked an upstream's input in the call's result instead
// (input_required, redacted and bounded alike): the call's record stays
// open, and the agent's retry with its answers and the requestState it was
// given continues the same call, on any replica on the store
// (boundary.InputRequired, canonical.Continuer).
//
// # Results
//
// A tool's projector is chosen per tool: the MCP-result projector (package
// projectors/mcpresult: structuredContent or text, bounded and redacted) by
// default, which also passes images, audio and resource links within
// ProjectorConfig.Media and names what it withholds, or the RAG and
// query-log projectors, fed with the JSON the result carries. An upstream result with isError is recorded as
// EXECUTION_FAILED with the result kept as raw data for operators.
package gateway
