package canonical

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	// Begin creates the call's record in PROJECTING with the complete request
	// and a lease, counting it against the run's limits. The first Begin of
	// a run fixes the run's limits; a later Begin whose non-zero limits
	// differ is INVALID_ARGUMENT. Refusals (TOOL_CALL_IN_PROGRESS,
	// DUPLICATE_TOOL_CALL, BUDGET_EXHAUSTED, RESULT_TOO_LARGE, RUN_INACTIVE,
	// INVALID_ARGUMENT) write nothing. A retry by the same Owner with the
	// same tool and request finds its own record and returns it as it now
	// is, without counting twice. Anything else on an existing record is
	// TOOL_CALL_IN_PROGRESS while it is PROJECTING, DUPLICATE_TOOL_CALL
	// after. The returned record carries the run's Limits. A run that is
	// closed, or lost (its state gone while its live marker, index or
	// leases live: see RunUsage.Lost), is RUN_INACTIVE.
	//
	// The first Begin of a run makes its principal the run's owner; only a
	// Begin creates a run (CloseRun and ObserveProgress on a run nobody
	// began are NOT_FOUND), so a run is claimed only by a call in it. A
	// Begin by another principal is RUN_FORBIDDEN, checked before anything
	// else, so that it learns nothing of the run and writes nothing. Which
	// principal may begin which run id is the host's to decide before it
	// calls Begin: a store cannot tell a run's intended owner from the
	// first principal to name it.
	Begin(ctx context.Context, req BeginRequest) (Record, error)

	// Complete moves a PROJECTING record to READY or ERROR and appends its id to
	// the run's completion index, in one step. A completion whose bytes exceed
	// the run's limits moves the record to ERROR/RESULT_TOO_LARGE instead,
	// storing neither raw nor result, and returns that record with a
	// RESULT_TOO_LARGE error. A retry by the same Owner with the same
	// completion returns the stored outcome; anything else on a terminal
	// record (an abandoned one included) is INVALID_TRANSITION and changes
	// nothing. When the run's state is gone (evicted or deleted), or is a
	// new one begun after the state this call was counted in was lost, the
	// outcome is still recorded, unchecked against limits nobody knows any
	// more, and the run is marked lost: see RunUsage.Lost.
	Complete(ctx context.Context, c Completion) (Record, error)

	// Abandon closes a PROJECTING record whose lease has passed: it becomes
	// ERROR/EXECUTION_ABANDONED with its remaining TTL kept, leaves the run's
	// leases and enters the completion index, in one step. While the lease
	// runs it is INVALID_TRANSITION, as it is on a record its owner
	// completed; on a record already abandoned it returns that record. It
	// is NOT_FOUND when there is no record.
	Abandon(ctx context.Context, runID, toolCallID string) (Record, error)

	// ExpiredLeases returns up to max ids of the run's PROJECTING calls whose
	// lease has passed, earliest lease first: the calls Abandon may close.
	ExpiredLeases(ctx context.Context, runID string, max int) ([]string, error)

	// Reap finds the calls whose lease has passed in every run of the
	// store, without being told which runs, and closes each through
	// Abandon, in bounded steps. Abandon is atomic, so any number of
	// reapers may run at once: each call is abandoned, and reported, by one
	// of them. A step or call that fails is counted in the report and the
	// pass goes on; the error is then STORE_UNAVAILABLE, returned with the
	// report of what was done. Bad options are INVALID_ARGUMENT.
	Reap(ctx context.Context, opts ReapOptions) (ReapReport, error)

	// Get returns the whole record, or NOT_FOUND when it does not exist or has
	// expired. Reads never extend a TTL.
	Get(ctx context.Context, runID, toolCallID string) (Record, error)

	// GetMany returns the records of ids of one run, in order; a missing or
	// expired record is nil. Raw and Request are read only when asked for,
	// so that scanning a run does not move megabytes. Stores read in
	// bounded batches (see each store for its round trips); at most
	// MaxIndexRead ids are accepted.
	GetMany(ctx context.Context, runID string, ids []string, opts ReadOptions) ([]*Record, error)

	// Completed returns the first max ids (1..MaxIndexRead) of the run's
	// completion index, the ids of its completed calls (READY or ERROR) in
	// completion order, and the index's length, so that a caller knows when
	// there is more. An unknown run has none.
	Completed(ctx context.Context, runID string, max int) (ids []string, length int, err error)

	// CloseRun marks the run closed: later Begins get RUN_INACTIVE. Calls
	// already begun may still complete. A closed run stays closed for the
	// store's retention (24h by default), or longer while its records live,
	// whatever its records' TTLs. Closing is idempotent. Only the run's
	// principal may close it (else RUN_FORBIDDEN). A run with no state
	// (nobody began it, or its state is lost) is NOT_FOUND and nothing is
	// written: a close claims no run.
	CloseRun(ctx context.Context, runID, principal string) error

	// Usage returns the run's counters, or NOT_FOUND for a run with no state.
	// A run whose state is gone while a key only a begun run has lives (its
	// live marker, completion index or leases) is reported Lost and Closed,
	// as Begin refuses it.
	Usage(ctx context.Context, runID string) (RunUsage, error)

	// CheckPrincipal says whether principal may read the run: nil when the
	// run is principal's; NOT_FOUND when it has no owner and no calls, so
	// there is nothing to read (a reader stops there: a read that went on
	// could meet a first Begin by someone else); RUN_FORBIDDEN when it
	// belongs to another principal or its owner is unknown (its state was
	// lost while its calls live). It reads the run's owner only, no record.
	// The other reads (Get, GetMany, Completed, Usage) check nothing: a
	// host that reads on behalf of a caller reads through OwnedReader, which
	// checks the owner in the read itself, or calls CheckPrincipal first
	// (then a run that expires and is begun again by another principal
	// between the check and the reads hands over the newcomer's records).
	// A run's owner never changes while the run has state.
	CheckPrincipal(ctx context.Context, runID, principal string) error
}

// OwnedReader is implemented by a Store that reads a run on a principal's
// behalf with the owner check in the read itself, rather than in a
// CheckPrincipal before it: a run that expires and is begun again by
// another principal between a check and the reads would otherwise hand the
// reader the newcomer's records. memstore and redisstore implement it; the
// boundary and package progress read through it when a store does.
//
// Each method refuses as CheckPrincipal does: RUN_FORBIDDEN for another
// principal's run or one whose owner is lost, NOT_FOUND for a run with no
// owner and no calls (nothing to read).
type OwnedReader interface {
	// ReadIndex reads the first max ids (1..MaxIndexRead) of the run's
	// completion index and its length, with the run's owner and
	// generation, in one read. Gen is opaque: ReadRecords takes it.
	ReadIndex(ctx context.Context, runID, principal string, max int) (RunIndex, error)

	// ReadRecords is GetMany on principal's behalf, the owner checked in
	// the first read. A record counted in another generation of the run's
	// state than gen (gen "": the generation the same read finds) is not
	// the reader's, and is nil, as a missing one is.
	ReadRecords(ctx context.Context, runID, principal, gen string, ids []string, opts ReadOptions) ([]*Record, error)

	// ReadUsage is Usage on principal's behalf, the owner checked in the
	// same read.
	ReadUsage(ctx context.Context, runID, principal string) (RunUsage, error)
}

// RunIndex is what OwnedReader.ReadIndex read.
type RunIndex struct {
	IDs    []string // the first ids of the completion index, in completion order
	Length int      // the index's length
	Gen    string   // the generation of the run's state, for ReadRecords ("" when it has none)
}

// HandleIndex is implemented by a Store that keeps each run's handle index:
// for every handle a completed call's result holds (Completion.Handles), the
// call whose raw response holds its value. memstore and redisstore
// implement it; the boundary resolves handles through it.
type HandleIndex interface {
	// HandleSources reads, on principal's behalf, the run's secret (the key
	// of its handles, as Record.RunSecret) and, for each id, the
	// tool_call_id of the call that minted it, "" for an id no call of the
	// run minted. The owner is checked in the same read, as CheckPrincipal
	// does: RUN_FORBIDDEN for another principal's run or one whose owner is
	// lost, NOT_FOUND for a run with no owner and no calls. At most
	// MaxHandlesPerCall ids.
	HandleSources(ctx context.Context, runID, principal string, ids []string) (HandleSources, error)
}

// HandleSources is what HandleIndex.HandleSources read.
type HandleSources struct {
	RunSecret []byte   // the run's secret; empty when the run has none
	Calls     []string // per id asked for, the call that minted it, or ""
}

// ProgressObserver keeps the progress protocol's per-run counters (package
// progress). It is apart from Store, which holds the records only: memstore
// and redisstore implement both, and the callers that count progress reports
// (progress.Observe, the gateway's progress tools) take a ProgressObserver,
// or assert one of the Store they were given.
type ProgressObserver interface {
	// ObserveProgress counts one progress report of the run against the
	// progress protocol and returns the run's protocol state after it. An
	// invalid report raises Pending and Violations; a valid one resets
	// Pending only. Violations saturates at threshold (> 0), where Violated
	// becomes true for good. Unlike the lifecycle
	// calls it is not idempotent, so stores never resend it: when its reply
	// is lost the caller gets STORE_UNAVAILABLE and the report may or may
	// not have been counted. Only the run's principal may report on it
	// (else RUN_FORBIDDEN, counting nothing). A run with no state is
	// NOT_FOUND, and a lost one (see RunUsage.Lost) RUN_INACTIVE, both
	// counting nothing: only a Begin claims a run.
	ObserveProgress(ctx context.Context, runID, principal string, valid bool, threshold int64) (ProtocolState, error)
}

// DefaultTTLer is implemented by a Store that gives a record the lifetime
// DefaultTTL when a Begin asks for none (BeginRequest.TTL zero), so that a
// caller can check the lifetime a record will really get before it begins
// one. Zero means the store has no default: every Begin must give a TTL.
type DefaultTTLer interface {
	DefaultTTL() time.Duration
}

// DefaultTTLOf returns the default record TTL of s, or 0 when s has none or
// does not say (it does not implement DefaultTTLer).
func DefaultTTLOf(s Store) time.Duration {
	if d, ok := s.(DefaultTTLer); ok {
		return max(d.DefaultTTL(), 0)
	}
	return 0
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
	Principal  string        // who the call is for (see ValidatePrincipal); the run's first writer owns it
	Request    []byte        // complete canonical request: a JSON object
	TTL        time.Duration // record lifetime, set once here and never extended; > 0, or 0 for the store's default
	// Lease is how long the call may stay PROJECTING before Abandon may
	// close it: the tool's timeout plus a margin for projecting and
	// recording. Zero, or more than the TTL, means the TTL.
	Lease time.Duration
	// Limits are the run's limits. The run's first Begin fixes them (zero
	// fields take DefaultLimits); later Begins must give the same non-zero
	// fields, and a zero field means "the run's".
	Limits Limits
	// Definition names the tool definition the agent-facing Tool is bound
	// to ("name@version"), for the audit stream only: at most 128 bytes
	// without spaces or control characters, else it is left out.
	Definition string
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
	// Handles are the ids of the handles Result holds (READY only, at most
	// MaxHandlesPerCall): the store indexes each under the run, naming this
	// call as the one whose raw response holds its value (see HandleIndex).
	Handles []string
	// NotRun says that the tool never started (boundary.NotRun): the audit
	// event says so. Redactions is how many values the projection masked.
	// Both are for the audit stream only.
	NotRun     bool
	Redactions int
}

// MaxHandlesPerCall bounds the handles one completion indexes.
const MaxHandlesPerCall = 1024

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
		if len(c.Handles) != 0 {
			return Errorf(CodeInvalidTransition, "ERROR carries no handles")
		}
	default:
		return Errorf(CodeInvalidTransition, "a completion is READY or ERROR (got %q)", c.Status)
	}
	if len(c.Handles) > MaxHandlesPerCall {
		return Errorf(CodeInvalidArgument, "a completion indexes at most %d handles (got %d)", MaxHandlesPerCall, len(c.Handles))
	}
	for _, id := range c.Handles {
		if !ValidHandleID(id) {
			return Errorf(CodeInvalidArgument, "%q is not a handle id", id)
		}
	}
	return nil
}

// Digest returns a digest of everything a completion asks for, kept with the
// record so that a retry of the same completion is recognised.
// It is the SHA-256, in hex, of status, evidence, code, raw and result,
// each written as its length in decimal, ':' and its bytes. The parts are
// hashed where they are, not copied together first: raw can be megabytes.
func (c *Completion) Digest() string {
	h := sha256.New()
	var n [20]byte
	for _, part := range [][]byte{[]byte(c.Status), []byte(c.Evidence), []byte(c.Code), c.Raw, c.Result} {
		h.Write(append(strconv.AppendInt(n[:0], int64(len(part)), 10), ':'))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// RunUsage is a run's state, settings and counters.
type RunUsage struct {
	RunID     string
	Limits    Limits           // the run's limits, fixed by its first Begin; zero before it
	Calls     int64            // calls begun
	ToolCalls map[string]int64 // calls begun, per tool
	Bytes     int64            // request+raw+result bytes stored
	Completed int64            // length of the completion index
	InFlight  int64            // calls begun and neither completed nor abandoned
	Closed    bool             // CloseRun was called, or the run's state was lost
	// Lost is true when the run's state disappeared (memory eviction, an
	// operator's DEL) while its records lived: seen at once while the run's
	// live marker, index or leases live, else by the Complete of a call
	// begun before the loss. A lost run is closed: its budgets can no longer
	// be enforced, so no call begins again. Calls in flight still complete;
	// Calls, ToolCalls and Bytes then count only what happened after the
	// loss, and Limits are unknown (zero) unless a Begin after the loss
	// fixed new ones.
	Lost     bool
	Protocol ProtocolState // progress-protocol counters
	TTL      time.Duration // time left before the run's state expires
}

// IsJSONObject reports whether b is one strict JSON object: RFC 8259 JSON
// with valid UTF-8, surrogate escapes only in pairs, no repeated member
// name and bounded nesting. encoding/json.Valid accepts all three faults;
// a stored request must be JSON that every reader agrees on.
func IsJSONObject(b []byte) bool { return strictjson.ValidObject(b) }
