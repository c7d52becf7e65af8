package boundary

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/observe"
	"github.com/toolcanon/toolcanon/registry"
)

// Tool executes one bound tool. Call receives the canonical (RFC 8785) input
// the registry produced and returns the tool's complete raw response. It must
// honour ctx: when ctx ends the call has timed out and its response, if any,
// is discarded. Call must not keep or modify input. A tool that fails may
// return, with its error, the raw response that reported the failure (an
// upstream's error result): the ERROR record keeps it as harness-only data,
// and the agent never sees it.
type Tool interface {
	Call(ctx context.Context, input []byte) (raw []byte, err error)
}

// ToolFunc adapts a function to a Tool.
type ToolFunc func(ctx context.Context, input []byte) ([]byte, error)

// Call calls f.
func (f ToolFunc) Call(ctx context.Context, input []byte) ([]byte, error) { return f(ctx, input) }

// RunContext is what the harness knows of the run a call belongs to. It is
// authoritative: an envelope that names another run is refused.
//
// The zero RunContext is inactive, so a harness that forgets to fill it in
// fails closed.
type RunContext struct {
	ID        string             // run id; the same alphabet as a tool_call_id
	Project   string             // project the run acts in, as the policy knows it
	Principal registry.Principal // who the run acts for; the run belongs to the first Subject that writes it
	Deadline  time.Time          // the run's deadline; zero means none (ctx may still carry one)
	Active    bool               // false refuses every call with RUN_INACTIVE
	// Limits are the run's budgets (calls per run, calls per tool) and byte
	// bounds, counted atomically by the store. The run's first call fixes
	// them (zero fields take canonical.DefaultLimits); a later call whose
	// non-zero fields differ is refused with INVALID_ARGUMENT, and zero
	// fields mean "the run's", so a worker can join a run without knowing
	// them.
	Limits canonical.Limits
	// TTL is every record's lifetime, set once at Begin and never extended;
	// zero means the store's default TTL (canonical.DefaultTTLer), which is
	// checked in the same way. A TTL shorter than the tool's
	// timeout plus the projection timeout plus the store's retry budget is
	// refused (INVALID_ARGUMENT): the record could expire before the call
	// is recorded, and the tool would run again for the same id.
	TTL time.Duration
}

// Envelope is one tool call as the agent framework delivered it. Nothing in
// it is trimmed, defaulted or replaced.
type Envelope struct {
	ToolCallID string // the framework's tool_call_id, used exactly as given
	RunID      string // the run the framework says the call belongs to
	Tool       string // agent-facing tool name, as bound
	Input      []byte // raw JSON arguments
	// ToolCallIDSource says who chose ToolCallID; "" says nothing. Any other
	// value than the IDSource constants is INVALID_ARGUMENT.
	ToolCallIDSource IDSource
	// Continue, when set, is the agent's input to the call of ToolCallID
	// that waits for it (InputRequired): the call continues if it is the
	// same request of the run's principal and Continue carries its token;
	// otherwise it is refused as a Begin of the id would be
	// (TOOL_CALL_IN_PROGRESS, DUPLICATE_TOOL_CALL, RUN_FORBIDDEN), or
	// NOT_FOUND when no record is left.
	Continue *Continuation
}

// IDSource says where an Envelope's tool_call_id came from. It is kept in
// the record's canonical request (as "tool_call_id_source"), so the record
// tells an id the model chose from one a framework minted, and a replay
// (WithReplay) matches only a call whose id came from the same source.
type IDSource string

// The sources of a tool_call_id. The zero IDSource says nothing and is left
// out of the request.
const (
	IDFromModel     IDSource = "model"     // the model's own id for the call
	IDFromFramework IDSource = "framework" // minted by the framework or adapter: the model gave none
)

func (s IDSource) valid() bool { return s == "" || s == IDFromModel || s == IDFromFramework }

// Boundary runs tool calls through preflight, the canonical record, the tool
// and its projector. It is immutable after New and safe for concurrent use.
type Boundary struct {
	store         canonical.Store
	reg           *registry.Registry
	policy        registry.Policy
	bindings      map[string]*binding
	replay        bool
	storeAttempts int
	storeTimeout  time.Duration
	leaseMargin   time.Duration
	observer      observe.Observer // nil: none (see WithObserver)
	projTimeout   time.Duration
	noHandles     bool                       // WithoutHandles
	groups        map[string]string          // agent-facing name -> handle group (Group)
	flows         map[string]map[string]bool // handle group -> groups its values may flow into
	sinks         map[string]bool            // agent-facing names no handle resolves into
}

// binding is one agent-facing name: the exact definition it runs and the
// code that executes and projects it.
type binding struct {
	name, version string
	tool          Tool
	projector     canonical.Projector
}

// Defaults of the options.
const (
	DefaultStoreAttempts     = 3
	DefaultStoreTimeout      = 5 * time.Second
	DefaultLeaseMargin       = time.Minute
	DefaultProjectionTimeout = 5 * time.Second
)

// Option configures a Boundary. Bind and the With… functions return Options.
type Option func(*Boundary) error

// Bind exposes the registry definition (name, version) to agents as
// agentName, executed by tool and projected by projector. New fails with
// UNKNOWN_TOOL when the registry has no such definition, and with
// INVALID_ARGUMENT for a malformed or repeated agentName or a nil tool or
// projector. A definition of any effect may be bound; Invoke refuses all but
// read tools with NOT_READ_ONLY, so the agent gets a stable answer for a tool
// the host lists but this boundary will not run.
func Bind(agentName, name, version string, tool Tool, projector canonical.Projector) Option {
	return func(b *Boundary) error {
		if isNilTool(tool) {
			return canonical.Errorf(canonical.CodeInvalidArgument, "boundary: bind %q: nil tool", agentName)
		}
		return b.bind(agentName, name, version, tool, projector)
	}
}

// bind adds one binding; tool is nil for BindNext.
func (b *Boundary) bind(agentName, name, version string, tool Tool, projector canonical.Projector) error {
	if err := canonical.ValidateToolName(agentName); err != nil {
		return canonical.Wrap(canonical.CodeInvalidArgument, err, "boundary: bind: malformed agent-facing name")
	}
	if _, dup := b.bindings[agentName]; dup {
		return canonical.Errorf(canonical.CodeInvalidArgument, "boundary: bind: %q is bound twice", agentName)
	}
	if isNilProjector(projector) {
		return canonical.Errorf(canonical.CodeInvalidArgument, "boundary: bind %q: nil projector", agentName)
	}
	if _, ok := b.reg.Lookup(name, version); !ok {
		return canonical.Errorf(canonical.CodeUnknownTool, "boundary: bind %q: registry has no %q version %q", agentName, name, version)
	}
	b.bindings[agentName] = &binding{name: name, version: version, tool: tool, projector: projector}
	return nil
}

// BindNext exposes the registry definition (name, version) as agentName,
// projected by projector, with no executor of its own: each call brings its
// execution to InvokeWith (a framework's `next`). Invoke refuses such a
// binding with INVALID_ARGUMENT before anything is written. New fails as for
// Bind.
func BindNext(agentName, name, version string, projector canonical.Projector) Option {
	return func(b *Boundary) error { return b.bind(agentName, name, version, nil, projector) }
}

// WithReplay turns on Stripe-style replay of duplicates. By default a second
// call with a used tool_call_id is refused with DUPLICATE_TOOL_CALL. With
// replay, a second call whose canonical request is byte-identical to the
// first's (same run, id, tool, version, project, principal and canonical
// input) gets the first call's stored agent outcome — its READY result or its
// error — and nothing runs again. A different request is still
// DUPLICATE_TOOL_CALL; while the first call is still PROJECTING the answer
// is TOOL_CALL_IN_PROGRESS (wait for that call's result).
func WithReplay() Option {
	return func(b *Boundary) error { b.replay = true; return nil }
}

// WithStoreAttempts sets how many times Begin and Complete are tried when the
// store is unavailable (default DefaultStoreAttempts). Retries reuse the
// invocation's owner token, which the store makes idempotent: a retried Begin
// never counts twice and a retried Complete returns the stored outcome.
func WithStoreAttempts(n int) Option {
	return func(b *Boundary) error {
		if n < 1 || n > 10 {
			return canonical.Errorf(canonical.CodeInvalidArgument, "boundary: store attempts must be in 1..10 (got %d)", n)
		}
		b.storeAttempts = n
		return nil
	}
}

// WithStoreTimeout bounds each attempt of each store call (default
// DefaultStoreTimeout), so that an unreachable store answers
// STORE_UNAVAILABLE instead of holding the call. Completion runs detached
// from the caller's cancellation, bounded by this timeout alone: once a tool
// has run, its outcome is recorded even if the caller has given up, so that
// the record does not stay PROJECTING.
func WithStoreTimeout(d time.Duration) Option {
	return func(b *Boundary) error {
		if d <= 0 {
			return canonical.Errorf(canonical.CodeInvalidArgument, "boundary: store timeout must be positive (got %v)", d)
		}
		b.storeTimeout = d
		return nil
	}
}

// WithLeaseMargin sets what a call's lease adds to its tool's timeout
// (default DefaultLeaseMargin): the time projecting and recording the
// outcome may take. Once the lease has passed without a completion, a
// reaper may close the call as EXECUTION_ABANDONED (canonical.Store.Abandon)
// and this worker's late completion is refused. New refuses
// (INVALID_ARGUMENT) a margin shorter than the projection timeout (or the
// 5s a cancelled tool has to return, when that is longer) plus the store's
// retry budget (WithStoreAttempts × WithStoreTimeout and the pauses
// between): a call that used all of them would be abandoned while still
// being recorded.
func WithLeaseMargin(d time.Duration) Option {
	return func(b *Boundary) error {
		if d <= 0 {
			return canonical.Errorf(canonical.CodeInvalidArgument, "boundary: lease margin must be positive (got %v)", d)
		}
		b.leaseMargin = d
		return nil
	}
}

// WithProjectionTimeout bounds each projection (default
// DefaultProjectionTimeout); the run's deadline bounds it too. A projector
// runs in its own goroutine, so one that overruns, whether it ignores its
// context or not, completes the call as ERROR/PROJECTION_FAILED (the raw
// response kept as harness-only data) and its late answer is dropped.
func WithProjectionTimeout(d time.Duration) Option {
	return func(b *Boundary) error {
		if d <= 0 {
			return canonical.Errorf(canonical.CodeInvalidArgument, "boundary: projection timeout must be positive (got %v)", d)
		}
		b.projTimeout = d
		return nil
	}
}

// storeBudget is the longest the boundary keeps retrying one store call:
// every attempt at its timeout, plus the pauses between attempts.
func (b *Boundary) storeBudget() time.Duration {
	d := time.Duration(b.storeAttempts) * b.storeTimeout
	for attempt := 1; attempt < b.storeAttempts; attempt++ {
		d += retryPause(attempt)
	}
	return d
}

// New returns a Boundary over store, reg and policy with the given bindings
// and options. Any invalid argument or binding fails the whole construction
// with a *canonical.Error.
func New(store canonical.Store, reg *registry.Registry, policy registry.Policy, opts ...Option) (*Boundary, error) {
	switch {
	case store == nil:
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "boundary: nil store")
	case reg == nil:
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "boundary: nil registry")
	case policy == nil:
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "boundary: nil policy")
	}
	b := &Boundary{
		store: store, reg: reg, policy: policy, bindings: map[string]*binding{},
		storeAttempts: DefaultStoreAttempts, storeTimeout: DefaultStoreTimeout, leaseMargin: DefaultLeaseMargin,
		projTimeout: DefaultProjectionTimeout,
	}
	for _, o := range opts {
		if o == nil {
			return nil, canonical.Errorf(canonical.CodeInvalidArgument, "boundary: nil option")
		}
		if err := o(b); err != nil {
			return nil, err
		}
	}
	if err := b.checkHandleConfig(); err != nil {
		return nil, err
	}
	// Checked once every option is known: the bound depends on three.
	if need := b.afterTool() + b.storeBudget(); b.leaseMargin < need {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument,
			"boundary: lease margin %v is shorter than the projection timeout (or a cancelled tool's grace) and the store retry budget (%v)",
			b.leaseMargin, need)
	}
	return b, nil
}

// Tools returns the agent-facing names of the bound tools, sorted.
func (b *Boundary) Tools() []string { return slices.Sorted(maps.Keys(b.bindings)) }

// isNilTool catches a nil interface and the nil ToolFunc, the two ways a
// binding ends up without an executor.
func isNilTool(t Tool) bool {
	if t == nil {
		return true
	}
	f, ok := t.(ToolFunc)
	return ok && f == nil
}

func isNilProjector(p canonical.Projector) bool {
	if p == nil {
		return true
	}
	f, ok := p.(canonical.ProjectorFunc)
	return ok && f == nil
}
