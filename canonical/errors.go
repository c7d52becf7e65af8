package canonical

import (
	"errors"
	"fmt"
)

// Code is a stable, agent-safe error code. Codes are extended, never renamed:
// hosts and models key behaviour on them.
type Code string

// The stable codes. See DESIGN section 5 for when each is used.
const (
	CodeInvalidToolCallID Code = "INVALID_TOOL_CALL_ID"
	CodeInvalidRunID      Code = "INVALID_RUN_ID"
	CodeInvalidArgument   Code = "INVALID_ARGUMENT"
	CodeRunMismatch       Code = "RUN_MISMATCH"
	CodeRunInactive       Code = "RUN_INACTIVE"
	CodeDeadlineExceeded  Code = "DEADLINE_EXCEEDED"
	CodeUnknownTool       Code = "UNKNOWN_TOOL"
	CodeInvalidInput      Code = "INVALID_INPUT"
	CodeUnauthorized      Code = "UNAUTHORIZED"
	CodeApprovalRequired  Code = "APPROVAL_REQUIRED"
	CodeNotReadOnly       Code = "NOT_READ_ONLY"
	CodePolicyUnavailable Code = "POLICY_UNAVAILABLE"
	CodeDuplicateToolCall Code = "DUPLICATE_TOOL_CALL"
	CodeBudgetExhausted   Code = "BUDGET_EXHAUSTED"
	CodeExecutionFailed   Code = "EXECUTION_FAILED"
	CodeToolTimeout       Code = "TOOL_TIMEOUT"
	CodeProjectionFailed  Code = "PROJECTION_FAILED"
	CodeResultTooLarge    Code = "RESULT_TOO_LARGE"
	CodeInvalidTransition Code = "INVALID_TRANSITION"
	CodeNotFound          Code = "NOT_FOUND"
	CodeStoreUnavailable  Code = "STORE_UNAVAILABLE"

	// Progress protocol (package progress): a repairable invalid report, and
	// the run's permanent violation once invalid reports reach the threshold.
	CodeInvalidProgressProtocol  Code = "INVALID_PROGRESS_PROTOCOL"
	CodeProgressProtocolViolated Code = "PROGRESS_PROTOCOL_VIOLATED"

	// CodeToolCallInProgress: a duplicate of a call whose first invocation
	// is still PROJECTING. The agent must wait for that call's result, not
	// call again.
	CodeToolCallInProgress Code = "TOOL_CALL_IN_PROGRESS"
	// CodeExecutionAbandoned: a PROJECTING record whose lease passed without
	// a completion (its worker died or gave up) was closed by Abandon.
	CodeExecutionAbandoned Code = "EXECUTION_ABANDONED"
	// CodeToolDefinitionChanged: an upstream tool no longer matches the
	// definition that was reviewed and pinned; it is not called until an
	// operator pins it again.
	CodeToolDefinitionChanged Code = "TOOL_DEFINITION_CHANGED"
	// CodeRunForbidden: the run belongs to another principal. It says
	// nothing else about the run: not whether it is open, closed or used.
	CodeRunForbidden Code = "RUN_FORBIDDEN"
	// CodeRateLimited: the caller has too many calls in flight, or has
	// started too many new runs in the last minute; nothing was recorded.
	CodeRateLimited Code = "RATE_LIMITED"
	// CodeStoreFull: an in-memory store holds as many runs as it may; a
	// call of a new run is refused until runs expire.
	CodeStoreFull Code = "STORE_FULL"
	// CodeUpstreamUnavailable: the server that implements the tool could not
	// be reached or started; the tool did not run.
	CodeUpstreamUnavailable Code = "UPSTREAM_UNAVAILABLE"
	// CodeCancelled: the caller cancelled the call while it ran; the result
	// says whether the tool had started.
	CodeCancelled Code = "CANCELLED"
	// CodeHandleUnknown: a call's arguments hold a handle that no completed
	// call of this run minted (another run's, expired, or made up); nothing
	// ran.
	CodeHandleUnknown Code = "HANDLE_UNKNOWN"
	// CodeHandleForbidden: a call's arguments hold a handle of this run whose
	// value may not flow into this tool (the handle policy); nothing ran.
	CodeHandleForbidden Code = "HANDLE_FORBIDDEN"
	// CodeAuditBacklog: the store holds as many audit events not yet
	// exported as it may; new calls are refused rather than events dropped.
	CodeAuditBacklog Code = "AUDIT_BACKLOG"
	// CodeLayoutMismatch: the store holds a run or record written in
	// another layout version than this release reads; nothing was changed.
	CodeLayoutMismatch Code = "LAYOUT_MISMATCH"
)

var knownCodes = map[Code]bool{
	CodeInvalidToolCallID: true, CodeInvalidRunID: true, CodeInvalidArgument: true,
	CodeRunMismatch: true, CodeRunInactive: true, CodeDeadlineExceeded: true,
	CodeUnknownTool: true, CodeInvalidInput: true, CodeUnauthorized: true,
	CodeApprovalRequired: true, CodeNotReadOnly: true, CodePolicyUnavailable: true,
	CodeDuplicateToolCall: true, CodeBudgetExhausted: true, CodeExecutionFailed: true,
	CodeToolTimeout: true, CodeProjectionFailed: true, CodeResultTooLarge: true,
	CodeInvalidTransition: true, CodeNotFound: true, CodeStoreUnavailable: true,
	CodeInvalidProgressProtocol: true, CodeProgressProtocolViolated: true,
	CodeToolCallInProgress: true, CodeExecutionAbandoned: true, CodeToolDefinitionChanged: true,
	CodeRunForbidden: true,
	CodeRateLimited:  true, CodeStoreFull: true,
	CodeUpstreamUnavailable: true, CodeCancelled: true,
	CodeHandleUnknown: true, CodeHandleForbidden: true, CodeAuditBacklog: true, CodeLayoutMismatch: true,
}

// Valid reports whether c is one of the stable codes.
func (c Code) Valid() bool { return knownCodes[c] }

// Error is the typed error every package of toolcanon returns. Code is stable
// and safe to show an agent; Msg and Err are for operators and logs only.
type Error struct {
	Code Code   // stable code
	Msg  string // human detail for operators; never shown to an agent
	Err  error  // underlying cause, if any
}

func (e *Error) Error() string {
	switch {
	case e.Msg != "" && e.Err != nil:
		return fmt.Sprintf("toolcanon: %s: %s: %v", e.Code, e.Msg, e.Err)
	case e.Msg != "":
		return fmt.Sprintf("toolcanon: %s: %s", e.Code, e.Msg)
	case e.Err != nil:
		return fmt.Sprintf("toolcanon: %s: %v", e.Code, e.Err)
	}
	return "toolcanon: " + string(e.Code)
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrDuplicateToolCall) true for every *Error with that
// code, whatever its message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Msg == "" && t.Err == nil
}

// Errorf returns an *Error with the given code and a formatted operator message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error with the given code wrapping err.
func Wrap(code Code, err error, msg string) *Error {
	return &Error{Code: code, Msg: msg, Err: err}
}

// CodeOf returns the stable code carried by err, "" for nil, and
// STORE_UNAVAILABLE for any error that carries no code: an unclassified
// failure is never reported as success or as a caller mistake.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeStoreUnavailable
}

// Replayable is the cause (Error.Err) of a Begin's DUPLICATE_TOOL_CALL
// when the call id holds a finished call (READY or ERROR) of the same tool
// and request, begun by another owner: that call's record, without raw
// response or request, read in the Begin itself, so that a store's
// durability wait covers what a replay of it shows (boundary.WithReplay).
type Replayable struct {
	Record Record
}

func (r *Replayable) Error() string {
	return "a finished call of the same tool and request holds the id"
}

// ReplayableOf returns the record a DUPLICATE_TOOL_CALL carries when the
// duplicate is of a finished call of the same tool and request.
func ReplayableOf(err error) (Record, bool) {
	var r *Replayable
	if errors.As(err, &r) {
		return r.Record, true
	}
	return Record{}, false
}

// Sentinel errors, for errors.Is.
var (
	ErrInvalidToolCallID = &Error{Code: CodeInvalidToolCallID}
	ErrInvalidRunID      = &Error{Code: CodeInvalidRunID}
	ErrInvalidArgument   = &Error{Code: CodeInvalidArgument}
	ErrRunMismatch       = &Error{Code: CodeRunMismatch}
	ErrRunInactive       = &Error{Code: CodeRunInactive}
	ErrDeadlineExceeded  = &Error{Code: CodeDeadlineExceeded}
	ErrUnknownTool       = &Error{Code: CodeUnknownTool}
	ErrInvalidInput      = &Error{Code: CodeInvalidInput}
	ErrUnauthorized      = &Error{Code: CodeUnauthorized}
	ErrApprovalRequired  = &Error{Code: CodeApprovalRequired}
	ErrNotReadOnly       = &Error{Code: CodeNotReadOnly}
	ErrPolicyUnavailable = &Error{Code: CodePolicyUnavailable}
	ErrDuplicateToolCall = &Error{Code: CodeDuplicateToolCall}
	ErrBudgetExhausted   = &Error{Code: CodeBudgetExhausted}
	ErrExecutionFailed   = &Error{Code: CodeExecutionFailed}
	ErrToolTimeout       = &Error{Code: CodeToolTimeout}
	ErrProjectionFailed  = &Error{Code: CodeProjectionFailed}
	ErrResultTooLarge    = &Error{Code: CodeResultTooLarge}
	ErrInvalidTransition = &Error{Code: CodeInvalidTransition}
	ErrNotFound          = &Error{Code: CodeNotFound}
	ErrStoreUnavailable  = &Error{Code: CodeStoreUnavailable}

	ErrToolCallInProgress    = &Error{Code: CodeToolCallInProgress}
	ErrExecutionAbandoned    = &Error{Code: CodeExecutionAbandoned}
	ErrToolDefinitionChanged = &Error{Code: CodeToolDefinitionChanged}
	ErrRunForbidden          = &Error{Code: CodeRunForbidden}
)
