package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// Impl is one implementation of the call lifecycle under comparison. Its
// methods are safe for concurrent use.
//
// Expected refusals are answers, not errors: a Begin that is refused (the id
// exists) returns execute=false and a nil error, a Complete that is refused
// (wrong state or owner) returns ok=false and a nil error. Errors are
// failures of the store or the transport.
type Impl interface {
	// Name is the row label of the implementation.
	Name() string
	// Begin creates the call's record in PROJECTING. execute reports whether
	// the caller was told it may run the tool.
	Begin(ctx context.Context, c Call, request []byte) (execute bool, err error)
	// Complete moves the call's record to READY with raw and result. ok
	// reports whether the implementation said the completion was made.
	Complete(ctx context.Context, c Call, raw, result []byte) (ok bool, err error)
	// Raw returns the raw response stored in the call's record.
	Raw(ctx context.Context, c Call) ([]byte, error)
	// Expiry returns when the call's record expires, by the store's clock.
	Expiry(ctx context.Context, c Call) (Expiry, error)
	// Close releases what the implementation opened.
	Close() error
}

// Batcher is implemented by an Impl that can run many whole lifecycles in
// one round trip. Throughput uses it when it is there.
type Batcher interface {
	// Lifecycles runs Begin and Complete for every call, the Begin of a call
	// before its Complete, and fails unless every one was made.
	Lifecycles(ctx context.Context, calls []Call, p Payload) error
}

// Call identifies one tool call and the invocation that owns it.
type Call struct {
	RunID      string
	ToolCallID string
	Owner      string
}

// Expiry is the moment a record expires, in Unix milliseconds, known to lie
// in [Lo, Hi]: a store reports a time to live, not a moment, and the clock it
// counts from is read a little before or after.
type Expiry struct {
	Lo, Hi int64
}

// Later reports whether e is certainly later than before: the whole of e's
// interval lies after before's.
func (e Expiry) Later(before Expiry) bool { return e.Lo > before.Hi }

// Config is what every Impl of one comparison shares.
type Config struct {
	// Prefix is the key prefix of this Impl's records. Give every Impl on
	// one server its own, so that runs do not meet.
	Prefix string
	// TTL is the lifetime given to every record at Begin.
	TTL time.Duration
	// Limits are given to every Begin of toolcanon's stores. Keep them high
	// enough that no lifecycle is refused.
	Limits canonical.Limits
	// Audit turns redisstore's audit stream on (NewRedisStore).
	Audit *canonical.AuditOptions
}

// DefaultConfig returns a Config with prefix, a 2-minute TTL and limits that
// a benchmark never reaches.
func DefaultConfig(prefix string) Config {
	return Config{
		Prefix: prefix,
		TTL:    2 * time.Minute,
		Limits: canonical.Limits{MaxCallsPerRun: 1 << 20, MaxCallsPerTool: 1 << 20, MaxRunBytes: 1 << 40},
	}
}

// Tool is the tool name every lifecycle records.
const Tool = "kb.search"

// CallsPerRun is how many calls share one run id.
const CallsPerRun = 1000

// Calls hands out fresh call identities: a new tool_call_id each time, a new
// run id every CallsPerRun calls and a fresh owner token per call. It is safe
// for concurrent use.
type Calls struct {
	tag string
	n   atomic.Int64
}

var callsSeq atomic.Int64

// NewCalls returns a generator whose run ids start with tag and are unique
// to this process and generator.
func NewCalls(tag string) *Calls {
	return &Calls{tag: fmt.Sprintf("%s-%d-%d", tag, time.Now().UnixNano(), callsSeq.Add(1))}
}

// Next returns a fresh call.
func (g *Calls) Next() Call {
	n := g.n.Add(1) - 1
	return Call{
		RunID:      g.tag + "-r" + strconv.FormatInt(n/CallsPerRun, 10),
		ToolCallID: "call_" + strconv.FormatInt(n, 10),
		Owner:      canonical.NewOwner(),
	}
}

// Payload is the data of one lifecycle.
type Payload struct {
	Request []byte // canonical request JSON, a few hundred bytes
	Raw     []byte // raw tool response JSON, ~2 KiB
	Result  []byte // agent-facing result JSON, ~300 B
}

// DefaultPayload returns the payload every benchmark uses: a RAG-like
// request, a ~2 KiB raw response and a ~300 B result, all compact JSON.
func DefaultPayload() Payload {
	req := `{"tool":"kb.search","version":"1.0.0","input":{"query":"how are refunds approved for enterprise accounts","top_k":5,"filters":{"source":["wiki","tickets"],"lang":"en"}}}`
	var raw strings.Builder
	raw.WriteString(`{"took_ms":12,"hits":[`)
	for i := 0; raw.Len() < 2000; i++ {
		if i > 0 {
			raw.WriteByte(',')
		}
		fmt.Fprintf(&raw, `{"source":"wiki","document_id":"doc-%04d","title":"Refund policy section %d","score":0.%03d,"text":"Refunds for enterprise accounts are approved by the account owner after the finance review; partial refunds need a ticket."}`, i, i, 900-i)
	}
	raw.WriteString(`]}`)
	res := `{"query":"how are refunds approved for enterprise accounts","tool_call_id":"call_x","evidence":[{"source":"wiki","document_id":"doc-0000","title":"Refund policy section 0","excerpt":"Refunds for enterprise accounts are approved by the account owner after the finance review."}],"returned":1,"truncated":false}`
	return Payload{Request: []byte(req), Raw: []byte(raw.String()), Result: []byte(res)}
}
