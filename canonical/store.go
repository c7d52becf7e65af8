package canonical

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// Store holds canonical records. Every method is safe for concurrent use by
// many goroutines and, for shared stores, many processes: each state change is
// atomic in the store (one Lua script on Redis), so no caller can break an
// invariant of the lifecycle.
//
// Errors are *Error values with a stable Code; a store that cannot be reached
// returns STORE_UNAVAILABLE.
type Store interface {
	// Begin creates the call's record in PROJECTING with the complete request,
	// counting it against the run's limits. Refusals (DUPLICATE_TOOL_CALL,
	// BUDGET_EXHAUSTED, RESULT_TOO_LARGE, RUN_INACTIVE) write nothing. A retry
	// by the same Owner with the same tool and request finds its own record
	// and returns it as it now is, without counting twice; anything else on an
	// existing record is DUPLICATE_TOOL_CALL.
	Begin(ctx context.Context, req BeginRequest) (Record, error)

	// Complete moves a PROJECTING record to READY or ERROR and appends its id to
	// the run's completion index, in one step. A completion whose bytes exceed
	// the limits kept at Begin moves the record to ERROR/RESULT_TOO_LARGE
	// instead, storing neither raw nor result, and returns that record with a
	// RESULT_TOO_LARGE error. A retry by the same Owner with the same
	// completion returns the stored outcome; anything else on a terminal
	// record is INVALID_TRANSITION and changes nothing.
	Complete(ctx context.Context, c Completion) (Record, error)

	// Get returns the whole record, or NOT_FOUND when it does not exist or has
	// expired. Reads never extend a TTL.
	Get(ctx context.Context, runID, toolCallID string) (Record, error)

	// GetMany returns the records of ids of one run, in order, in one round trip;
	// a missing or expired record is nil. Raw and Request are read only when
	// asked for, so that scanning a run does not move megabytes.
	GetMany(ctx context.Context, runID string, ids []string, opts ReadOptions) ([]*Record, error)

	// Completed returns the run's completion index: the ids of its completed
	// calls (READY or ERROR) in completion order. An unknown run has none.
	Completed(ctx context.Context, runID string) ([]string, error)

	// CloseRun marks the run closed: later Begins get RUN_INACTIVE. Calls
	// already begun may still complete. Closing is idempotent.
	CloseRun(ctx context.Context, runID string) error

	// Usage returns the run's counters, or NOT_FOUND for a run with no state.
	Usage(ctx context.Context, runID string) (RunUsage, error)

	// ObserveProgress counts one progress report of the run against the
	// progress protocol and returns the run's protocol state after it. An
	// invalid report raises Pending and Violations; a valid one resets
	// Pending only. Violations saturates at threshold (> 0), where Violated
	// becomes true for good. A run with no state gets one (with the store's
	// default TTL for closed runs). Unlike the lifecycle calls it is not
	// idempotent, so stores never resend it: when its reply is lost the caller
	// gets STORE_UNAVAILABLE and the report may or may not have been counted.
	ObserveProgress(ctx context.Context, runID string, valid bool, threshold int64) (ProtocolState, error)
}

// ProtocolState is a run's progress-protocol counters, kept with the run so
// that every worker of the run agrees.
type ProtocolState struct {
	Reports    int64 // progress reports observed
	Pending    int64 // invalid reports since the last valid one: repairable
	Violations int64 // invalid reports in all, saturating at the threshold; never reset by a repair
	Violated   bool  // Violations reached the threshold; permanent
}

// ReadOptions says which large fields GetMany reads.
type ReadOptions struct {
	Request bool // read the complete request
	Raw     bool // read the complete raw response
}

// BeginRequest asks a store to create a call's record.
type BeginRequest struct {
	RunID      string
	ToolCallID string
	Tool       string        // agent-facing tool name
	Owner      string        // token of this invocation (see NewOwner); retries reuse it
	Request    []byte        // complete canonical request: a JSON object
	TTL        time.Duration // record lifetime, set once here and never extended; > 0, or 0 for the store's default
	Limits     Limits        // zero fields take DefaultLimits
}

// Validate checks every argument without touching a store. ttlDefault is the
// store's default TTL (0: none), used when req.TTL is zero.
func (req *BeginRequest) Validate(ttlDefault time.Duration) (ttl time.Duration, lim Limits, err error) {
	if err = ValidateRunID(req.RunID); err != nil {
		return 0, lim, err
	}
	if err = ValidateToolCallID(req.ToolCallID); err != nil {
		return 0, lim, err
	}
	if err = ValidateToolName(req.Tool); err != nil {
		return 0, lim, err
	}
	if err = ValidateOwner(req.Owner); err != nil {
		return 0, lim, err
	}
	if err = checkRequest(req.Request); err != nil {
		return 0, lim, err
	}
	ttl = req.TTL
	if ttl == 0 {
		ttl = ttlDefault
	}
	if ttl <= 0 {
		return 0, lim, Errorf(CodeInvalidArgument, "TTL must be positive (got %v)", req.TTL)
	}
	if ttl < time.Millisecond {
		return 0, lim, Errorf(CodeInvalidArgument, "TTL must be at least 1ms (got %v)", req.TTL)
	}
	if err = req.Limits.Validate(); err != nil {
		return 0, lim, err
	}
	return ttl, req.Limits.WithDefaults(), nil
}

// ValidateToolName checks an agent-facing tool name: 1–128 bytes of
// [A-Za-z0-9_.-] starting with a letter or digit.
func ValidateToolName(name string) error {
	if !validID(name) {
		return Errorf(CodeUnknownTool, "tool name must be 1-%d bytes of [A-Za-z0-9_.-] starting with a letter or digit", MaxIDLen)
	}
	return nil
}

// Completion asks a store to finish a PROJECTING record.
type Completion struct {
	RunID      string
	ToolCallID string
	Owner      string   // must be the Owner that began the call
	Status     Status   // READY or ERROR
	Evidence   Evidence // READY: EVIDENCE_FOUND or NO_EVIDENCE; ERROR: ERROR or empty
	Code       Code     // ERROR only: the stable reason
	Raw        []byte   // complete raw tool response (READY; ERROR may keep it as harness-only data)
	Result     []byte   // READY only: the bounded agent-facing result, valid JSON
}

// Validate checks the completion's shape without touching a store.
func (c *Completion) Validate() error {
	if err := ValidateRunID(c.RunID); err != nil {
		return err
	}
	if err := ValidateToolCallID(c.ToolCallID); err != nil {
		return err
	}
	if err := ValidateOwner(c.Owner); err != nil {
		return err
	}
	switch c.Status {
	case StatusReady:
		if !c.Evidence.Ready() {
			return Errorf(CodeInvalidTransition, "READY needs evidence EVIDENCE_FOUND or NO_EVIDENCE (got %q)", c.Evidence)
		}
		if c.Code != "" {
			return Errorf(CodeInvalidTransition, "READY carries no error code")
		}
		if len(c.Result) == 0 || !strictjson.Valid(c.Result) {
			return Errorf(CodeInvalidTransition, "READY needs a result that is strict JSON")
		}
	case StatusError:
		if c.Evidence != "" && c.Evidence != EvidenceError {
			return Errorf(CodeInvalidTransition, "ERROR carries evidence ERROR (got %q)", c.Evidence)
		}
		if !c.Code.Valid() {
			return Errorf(CodeInvalidTransition, "ERROR needs a stable code (got %q)", c.Code)
		}
		if len(c.Result) != 0 {
			return Errorf(CodeInvalidTransition, "ERROR carries no result")
		}
	default:
		return Errorf(CodeInvalidTransition, "a completion is READY or ERROR (got %q)", c.Status)
	}
	return nil
}

// Digest returns a digest of everything a completion asks for, kept with the
// record so that a retry of the same completion is recognised.
func (c *Completion) Digest() string {
	var b bytes.Buffer
	for _, part := range [][]byte{[]byte(c.Status), []byte(c.Evidence), []byte(c.Code), c.Raw, c.Result} {
		b.WriteString(strconv.Itoa(len(part)))
		b.WriteByte(':')
		b.Write(part)
	}
	return RequestDigest(b.Bytes())
}

// RunUsage is a run's state and counters.
type RunUsage struct {
	RunID     string
	Calls     int64            // calls begun
	ToolCalls map[string]int64 // calls begun, per tool
	Bytes     int64            // request+raw+result bytes stored
	Completed int64            // length of the completion index
	Closed    bool             // CloseRun was called
	Protocol  ProtocolState    // progress-protocol counters
	TTL       time.Duration    // time left before the run's state expires
}

// IsJSONObject reports whether b is one strict JSON object: RFC 8259 JSON
// with valid UTF-8, surrogate escapes only in pairs, no repeated member
// name and bounded nesting. encoding/json.Valid accepts all three faults;
// a stored request must be JSON that every reader agrees on.
func IsJSONObject(b []byte) bool { return strictjson.ValidObject(b) }

// checkRequest refuses a request that is not a JSON object with
// INVALID_INPUT, and a JSON object that breaks strictness (invalid UTF-8, a
// lone surrogate escape, a repeated name, nesting too deep) with
// INVALID_ARGUMENT: the boundary only ever stores canonical requests, so
// such a request is a caller's fault, not an input to fix.
func checkRequest(b []byte) error {
	err := strictjson.Check(b, strictjson.MaxDepth)
	var se *strictjson.SyntaxError
	if errors.As(err, &se) && se.Strict {
		return Errorf(CodeInvalidArgument, "request is not strict JSON: %s at byte %d", se.Reason, se.Offset)
	}
	if err != nil || !IsJSONObject(b) {
		return Errorf(CodeInvalidInput, "request must be a JSON object")
	}
	return nil
}

// FinishCompletion fills in what a store knows of a completion it accepted:
// the lifecycle fields in rec come from the store; raw and result are those
// of c unless the store refused them for their size (overflow), in which case
// the record is ERROR/RESULT_TOO_LARGE and a RESULT_TOO_LARGE error is
// returned with it. Stores call it so that every store answers alike.
func FinishCompletion(rec Record, c Completion, overflow bool) (Record, error) {
	if overflow {
		return rec, Errorf(CodeResultTooLarge, "completion is over a byte limit: the record is ERROR/RESULT_TOO_LARGE with no raw or result")
	}
	if len(c.Raw) > 0 {
		rec.Raw, rec.RawLen = c.Raw, len(c.Raw)
	}
	if rec.Status == StatusReady {
		rec.Result = c.Result
	}
	return rec, nil
}
