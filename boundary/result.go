package boundary

import (
	"encoding/json"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// Result is the outcome of one Invoke. Only AgentJSON may reach the agent;
// the other accessors are for the harness.
type Result struct {
	toolCallID string
	status     canonical.Status
	code       canonical.Code
	evidence   canonical.Evidence
	executed   bool
	replayed   bool
	agent      []byte
	err        error
	requests   json.RawMessage // what the agent is asked, when the call waits for input
	inputToken string          // the token its continuation carries; "" when it does not wait
}

// AgentJSON returns all the agent may see of the call: the bounded projection
// of a READY call, or
//
//	{"tool_call_id":…,"status":"ERROR","error_code":…,"hint":…}
//
// with the fixed hint of the code (see Hint). It never holds raw data, tool
// or store error text, keys or stack traces. The slice is the caller's; each
// Invoke builds its own.
func (r Result) AgentJSON() []byte { return r.agent }

// ToolCallID returns the envelope's tool_call_id, or "" when it was invalid.
func (r Result) ToolCallID() string { return r.toolCallID }

// Status returns READY or ERROR; PROJECTING when the call waits for the
// agent's input (InputRequired).
func (r Result) Status() canonical.Status { return r.status }

// Code returns the stable error code of an ERROR result, "" when READY.
func (r Result) Code() canonical.Code { return r.code }

// Evidence returns EVIDENCE_FOUND or NO_EVIDENCE when READY, ERROR otherwise.
func (r Result) Evidence() canonical.Evidence { return r.evidence }

// Executed reports whether this Invoke called the tool. It is false for every
// preflight or Begin refusal and for a replay.
func (r Result) Executed() bool { return r.executed }

// Replayed reports whether the outcome is a stored one returned for a
// duplicate call (see WithReplay).
func (r Result) Replayed() bool { return r.replayed }

// Err returns the operator-facing cause of an ERROR result, nil when READY.
// It may hold tool, policy or store error text: log it, never show it to the
// agent.
func (r Result) Err() error { return r.err }

// hints are short, fixed, and say what the model can do next. They never
// depend on the call, so they can carry nothing from it.
var hints = map[canonical.Code]string{
	canonical.CodeInvalidToolCallID:     "Use a tool_call_id of 1-128 letters, digits, '_', '.' or '-', starting with a letter or digit.",
	canonical.CodeInvalidRunID:          "This run cannot take tool calls; stop calling tools.",
	canonical.CodeInvalidArgument:       "The harness refused this call; do not retry it.",
	canonical.CodeRunMismatch:           "This call names another run; call tools only for the current run.",
	canonical.CodeRunInactive:           "The run is no longer active; stop calling tools and answer with what you have.",
	canonical.CodeDeadlineExceeded:      "The run is out of time; stop calling tools and answer with what you have.",
	canonical.CodeUnknownTool:           "No such tool is available; use one of the listed tools.",
	canonical.CodeInvalidInput:          "The arguments do not match the tool's input schema; fix them and call again with a new tool_call_id.",
	canonical.CodeUnauthorized:          "You are not allowed to call this tool; do not retry it.",
	canonical.CodeApprovalRequired:      "This call needs human approval; do not retry it until it is approved.",
	canonical.CodeNotReadOnly:           "This tool changes state and cannot run here; use a read-only tool.",
	canonical.CodePolicyUnavailable:     "Authorization could not be checked; try again later with a new tool_call_id.",
	canonical.CodeDuplicateToolCall:     "This tool_call_id was already used; use a new tool_call_id.",
	canonical.CodeBudgetExhausted:       "The tool call budget is used up; stop calling tools and answer with what you have.",
	canonical.CodeExecutionFailed:       "The tool failed; retry once with a new tool_call_id or use another tool.",
	canonical.CodeToolTimeout:           "The tool timed out; narrow the query and retry with a new tool_call_id.",
	canonical.CodeProjectionFailed:      "The tool's response could not be used; try a different query with a new tool_call_id.",
	canonical.CodeResultTooLarge:        "The result is too large; narrow the query and retry with a new tool_call_id.",
	canonical.CodeInvalidTransition:     "The call could not be recorded; retry with a new tool_call_id.",
	canonical.CodeNotFound:              "The call's record is gone; retry with a new tool_call_id.",
	canonical.CodeStoreUnavailable:      "The tool service is unavailable; try again later with a new tool_call_id.",
	canonical.CodeToolCallInProgress:    "This tool_call_id is still running; wait for its result and do not call it again.",
	canonical.CodeExecutionAbandoned:    "The tool call was abandoned before it finished; retry with a new tool_call_id.",
	canonical.CodeToolDefinitionChanged: "This tool changed since it was approved and is disabled; use another tool.",
	canonical.CodeRunForbidden:          "This run is not yours; call tools only for the run you were given.",
	canonical.CodeRateLimited:           "Too many calls at once or too many new runs; wait a moment, then call again.",
	canonical.CodeStoreFull:             "The tool service is full; try again later with a new tool_call_id.",
	canonical.CodeUpstreamUnavailable:   "The tool's server could not be reached and nothing ran; wait a moment, then retry with a new tool_call_id, or use another tool.",
	canonical.CodeCancelled:             "The call was cancelled; call again with a new tool_call_id if you still need it.",
	canonical.CodeHandleUnknown:         "A <KIND:id> handle in the arguments is not one this run's tools returned; use a handle exactly as a tool of this run gave it, with a new tool_call_id.",
	canonical.CodeHandleForbidden:       "A <KIND:id> handle in the arguments may not be passed to this tool; do not retry it with that handle.",
	canonical.CodeAuditBacklog:          "The tool service cannot record calls right now; try again later with a new tool_call_id.",
	canonical.CodeLayoutMismatch:        "The tool service is being upgraded; try again later with a new tool_call_id.",
}

// fallbackHint is for a code outside the table; it cannot happen with the
// codes the boundary produces, but a hint must never be missing.
const fallbackHint = "The call failed; do not retry it."

// Hint returns the fixed agent-facing hint of a code.
func Hint(c canonical.Code) string {
	if h, ok := hints[c]; ok {
		return h
	}
	return fallbackHint
}

// errorTails holds, per code, the JSON-encoded tail of the agent error
// object, rendered once so that an error costs one small allocation.
var errorTails = func() map[canonical.Code]string {
	m := make(map[canonical.Code]string, len(hints)+1)
	for c := range hints {
		m[c] = renderTail(c, hints[c])
	}
	return m
}()

func renderTail(c canonical.Code, hint string) string {
	out := []byte(`","status":"ERROR","error_code":`)
	out = strictjson.AppendQuoted(out, string(c))
	out = append(out, `,"hint":`...)
	out = strictjson.AppendQuoted(out, hint)
	return string(append(out, '}'))
}

// agentError builds the agent-facing error object. id is a validated
// tool_call_id (or "") and so needs no escaping.
func agentError(id string, c canonical.Code) []byte {
	tail, ok := errorTails[c]
	if !ok {
		tail = renderTail(c, fallbackHint)
	}
	out := make([]byte, 0, len(`{"tool_call_id":"`)+len(id)+len(tail))
	out = append(out, `{"tool_call_id":"`...)
	out = append(out, id...)
	return append(out, tail...)
}

// failure is an ERROR result: the agent sees the code and its hint, the
// harness also sees err.
func failure(id string, c canonical.Code, err error, executed bool) Result {
	if !c.Valid() {
		c = canonical.CodeStoreUnavailable
	}
	return Result{
		toolCallID: id, status: canonical.StatusError, code: c, evidence: canonical.EvidenceError,
		executed: executed, agent: agentError(id, c), err: err,
	}
}
