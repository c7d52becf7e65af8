package canonical

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// AuditType is the kind of transition an audit event records.
type AuditType string

// The audit event types: one per transition of the lifecycle.
const (
	AuditBegin    AuditType = "begin"    // Begin created the call's record
	AuditComplete AuditType = "complete" // Complete moved it to READY or ERROR
	AuditAbandon  AuditType = "abandon"  // Abandon closed it as EXECUTION_ABANDONED
	AuditClose    AuditType = "close"    // CloseRun closed the run
	// AuditReplay: a Begin of a call id that holds a finished call of the
	// same tool and request got that call's stored outcome (a duplicate a
	// host may replay, canonical.Replayable); nothing ran.
	AuditReplay AuditType = "replay"
	// AuditAwaitInput: AwaitInput kept the call open for the agent's input
	// (Continuer); AuditContinue: ContinueCall handed it to the invocation
	// that continues it with that input.
	AuditAwaitInput AuditType = "await_input"
	AuditContinue   AuditType = "continue"
)

// Valid reports whether t is one of the audit event types.
func (t AuditType) Valid() bool {
	switch t {
	case AuditBegin, AuditComplete, AuditAbandon, AuditClose, AuditReplay, AuditAwaitInput, AuditContinue:
		return true
	}
	return false
}

// Execution says of a complete or replay event whether the tool ran.
const (
	ExecutionExecuted = "executed" // the tool was called for this outcome
	ExecutionNotRun   = "not_run"  // the tool never started (Completion.NotRun)
	ExecutionReplayed = "replayed" // a stored outcome handed to a duplicate
)

// AuditEvent is one transition, as a store with audit on records it in the
// transition itself: never a payload, only keyed digests and sizes. A
// run's events form one stream per generation of its state, numbered by
// Seq from 1 without gaps; (RunID, Gen, Seq) names an event for good, even
// when the run id is begun again after its state expired (a new
// generation). Which fields an event carries depends on its Type.
type AuditEvent struct {
	RunID string
	Gen   string    // the stream: the generation of the run's state the event was counted in
	Seq   int64     // 1, 2, ... per (RunID, Gen), assigned in the transition
	Time  time.Time // the transition's time, by the store's clock (ms)
	Type  AuditType

	ToolCallID  string // every type but close
	Tool        string // begin, replay: the agent-facing tool name
	ToolVersion string // begin, replay: the definition the tool is bound to (BeginRequest.Definition)
	Principal   string // begin, replay, close, continue: the caller's PrincipalTag

	Status    Status   // complete, abandon: READY or ERROR
	Evidence  Evidence // complete, abandon
	Code      Code     // complete, abandon: the stable code of an ERROR
	Execution string   // complete, replay: ExecutionExecuted, ExecutionNotRun or ExecutionReplayed

	// KeyID names the operator's key the digests are HMAC-SHA-256 under
	// (AuditOptions.KeyID); each digest is hex, "" for no payload.
	KeyID         string
	RequestDigest string // begin, replay
	RawDigest     string // complete
	ResultDigest  string // complete
	RequestSize   int64  // begin, replay
	RawSize       int64  // complete
	ResultSize    int64  // complete
	TokenDigest   string // await_input: of the token the continuing call must present (never the token: it is a bearer secret)
	InputDigest   string // continue: of the agent's input responses (ContinueCall.Input)
	InputSize     int64  // continue

	WaitUntil time.Time // await_input: the call's new lease, until when it waits for its input (ms)

	Redactions int // complete: values the projection masked
	Handles    int // complete: handles the result holds

	TraceID string // W3C trace id of the call's span (hex), when known (WithTrace)
	SpanID  string // W3C span id
}

// AuditOptions switch a store's audit stream on: every transition then
// appends an AuditEvent in the same atomic step, and the events wait in the
// store until an exporter has had a sink confirm them.
type AuditOptions struct {
	// Key is the operator's HMAC-SHA-256 key of the events' digests: at
	// least 32 bytes. A digest of an argument under a key nobody else holds
	// tells whether two calls sent the same bytes, and lets the key's holder
	// check a claimed payload, without the payload being guessable from it.
	Key []byte
	// KeyID names the key in every event (1–16 bytes of [A-Za-z0-9_.-]),
	// so that digests under a rotated key are not compared with these.
	KeyID string
	// MaxBacklog bounds the events that wait for export: past it, a Begin
	// that would add one is refused with AUDIT_BACKLOG rather than any
	// event dropped (completions, abandons, closes, and the awaits and
	// continuations of calls already begun still append theirs). 0 means
	// DefaultAuditBacklog. Each store says how it counts (redisstore: per
	// cluster slot).
	MaxBacklog int64
}

// DefaultAuditBacklog is AuditOptions.MaxBacklog when it is zero.
const DefaultAuditBacklog = 1 << 20

// MinAuditKey is the shortest AuditOptions.Key.
const MinAuditKey = 32

// Validate checks the options of a store that turns audit on.
func (o AuditOptions) Validate() error {
	if len(o.Key) < MinAuditKey {
		return Errorf(CodeInvalidArgument, "audit: the key must be at least %d bytes (got %d)", MinAuditKey, len(o.Key))
	}
	if len(o.KeyID) == 0 || len(o.KeyID) > 16 || !validID(o.KeyID) {
		return Errorf(CodeInvalidArgument, "audit: the key id must be 1-16 bytes of [A-Za-z0-9_.-] starting with a letter or digit")
	}
	if o.MaxBacklog < 0 {
		return Errorf(CodeInvalidArgument, "audit: MaxBacklog must not be negative")
	}
	return nil
}

// Digest returns the hex HMAC-SHA-256 of b under the key, "" when b is
// empty.
func (o AuditOptions) Digest(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	m := hmac.New(sha256.New, o.Key)
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil))
}

// Trace is the W3C trace context of a call, as an audit event names it.
type Trace struct {
	TraceID string // 32 lowercase hex digits
	SpanID  string // 16 lowercase hex digits
}

type traceKey struct{}

// WithTrace returns ctx carrying the trace context of the call it runs: a
// store with audit on writes it into the call's events. A tracing observer
// (otelcanon) sets it; ids that are not lowercase hex of their width are
// ignored.
func WithTrace(ctx context.Context, t Trace) context.Context {
	if !lowerHexOf(t.TraceID, 32) || !lowerHexOf(t.SpanID, 16) {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, t)
}

// TraceOf returns the trace context WithTrace put in ctx, or none.
func TraceOf(ctx context.Context) Trace {
	if ctx == nil {
		return Trace{}
	}
	t, _ := ctx.Value(traceKey{}).(Trace)
	return t
}

func lowerHexOf(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// AuditHead is where a run's exported chain stands: the generation,
// sequence number and chain hash of the last event a sink confirmed. The
// zero AuditHead is a stream of which nothing was exported yet. A store
// keeps it opaque; the exporter computes it.
type AuditHead struct {
	Gen  string
	Seq  int64
	Hash string // 64 hex digits
}

// IsZero reports whether h is the head of a run of which nothing was
// exported.
func (h AuditHead) IsZero() bool { return h == AuditHead{} }

// AuditPending is what an exporter reads of one run: the chain head its
// events continue and the first of its pending events, in sequence order
// (streams of earlier generations first).
type AuditPending struct {
	RunID  string
	Head   AuditHead
	Events []AuditEvent
}

// AuditSource is implemented by a store whose audit stream can be exported
// (memstore and redisstore, with audit on). One exporter at a time drains
// it (AuditLease), though any number may try: reading and acknowledging
// are safe to repeat, so a pass that dies anywhere is taken up again by the
// next, and a sink sees an event again only when it confirmed it without
// the acknowledgement reaching the store.
type AuditSource interface {
	// AuditRuns hands visit the runs that have events pending, at most
	// batch at a time, until it has handed every one it found or visit
	// fails (its error is returned). Its cost is of the pending work, not
	// of the store's size.
	AuditRuns(ctx context.Context, batch int, visit func(runs []string) error) error
	// AuditRead reads, for each run, its chain head and its first max
	// pending events.
	AuditRead(ctx context.Context, runIDs []string, max int) ([]AuditPending, error)
	// AuditAck removes the first n pending events of a run, once a sink
	// confirmed them, and makes to the run's chain head: only when from is
	// still its head (else it is a no-op: another exporter got there
	// first). It reports whether it acknowledged.
	AuditAck(ctx context.Context, runID string, from AuditHead, n int, to AuditHead) (bool, error)
	// AuditLease takes, or renews, the store's export lease for holder
	// for ttl, and reports whether holder has it.
	AuditLease(ctx context.Context, holder string, ttl time.Duration) (bool, error)
	// AuditStatus reads what the last export pass left (AuditReport) and
	// the backlog's size now, as the store counts it.
	AuditStatus(ctx context.Context) (AuditStatus, error)
	// AuditReport keeps what an export pass found, for AuditStatus.
	AuditReport(ctx context.Context, r AuditStatus) error
}

// AuditStatus is the state of a store's export.
type AuditStatus struct {
	LastPass    time.Time // when the last export pass ended; zero: never
	Exported    int64     // events that pass exported
	Pending     int64     // events it left pending
	OldestEvent time.Time // the oldest event it left pending; zero: none
}

// Lag is how far the export is behind at now: the age of the oldest event
// the last pass left pending, else the time since that pass (never: 0 and
// false).
func (s AuditStatus) Lag(now time.Time) (time.Duration, bool) {
	switch {
	case !s.OldestEvent.IsZero():
		return max(now.Sub(s.OldestEvent), 0), true
	case !s.LastPass.IsZero():
		return max(now.Sub(s.LastPass), 0), true
	}
	return 0, false
}
