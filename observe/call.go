package observe

import (
	"context"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// Phase is one step of an Invoke. Phases run in this order; a call stops at
// the first that fails.
type Phase uint8

// The phases of an Invoke.
const (
	Preflight  Phase = iota + 1 // checks without side effects: ids, run, binding, policy, input schema, effect
	Begin                       // the store creates the record, or refuses (or a replay answers)
	Tool                        // the tool runs and its raw response is sized against the record
	Projection                  // the projector turns the raw response into the agent result
	Complete                    // the store finishes the record
)

// NumPhases is the number of phases.
const NumPhases = 5

var phaseNames = [...]string{"", "preflight", "begin", "tool", "projection", "complete"}

// String returns the phase's lower-case name ("preflight", …).
func (p Phase) String() string {
	if p < 1 || int(p) >= len(phaseNames) {
		return "unknown"
	}
	return phaseNames[p]
}

// Call identifies one Invoke. It holds validated values only: a malformed id
// or a tool name that is not bound is left empty, never echoed.
type Call struct {
	RunID      string    // the run context's id, when valid
	ToolCallID string    // the envelope's tool_call_id, when valid
	Tool       string    // the agent-facing tool name, when bound
	Name       string    // the registry definition the name is bound to, when bound
	Version    string    // that definition's version
	Start      time.Time // when Invoke started
}

// PhaseEvent is one phase of a call, reported when it ends.
type PhaseEvent struct {
	Phase    Phase
	Start    time.Time
	Duration time.Duration
	// Code is why the phase failed; "" when it passed.
	Code canonical.Code
	// Bytes is the size of what the phase produced: the canonical input
	// (Preflight), the canonical request (Begin), the raw response (Tool),
	// the agent result (Projection), the bytes sent to the store (Complete).
	Bytes int
	// Evidence is what the projector reported (Projection, when it passed).
	Evidence canonical.Evidence
}

// Outcome is how a call ended: what Invoke returned, and the time and bytes
// it took on the way.
type Outcome struct {
	Status   canonical.Status   // READY or ERROR
	Code     canonical.Code     // the stable code of an ERROR; "" when READY
	Evidence canonical.Evidence // EVIDENCE_FOUND or NO_EVIDENCE when READY, ERROR otherwise
	Executed bool               // this Invoke called the tool
	Replayed bool               // a stored outcome returned for a duplicate
	Duration time.Duration      // the whole Invoke
	// Phases is the time spent in each phase, indexed by Phase-1; zero for a
	// phase the call did not reach.
	Phases [NumPhases]time.Duration
	// Byte sizes: canonical input, canonical request, raw response, agent
	// result as projected, and what Invoke returned to the agent. Zero for
	// what the call did not reach.
	InputBytes, RequestBytes, RawBytes, ResultBytes, AgentBytes int
}

// PhaseDuration returns the time spent in phase p.
func (o *Outcome) PhaseDuration(p Phase) time.Duration {
	if p < 1 || int(p) > NumPhases {
		return 0
	}
	return o.Phases[p-1]
}

// Observer is told about every Invoke of a Boundary it is given to. Its
// methods are called from the goroutine running the Invoke, so an observer
// shared by concurrent calls must be safe for concurrent use. They must be
// quick and must not block: they run inside the call. A panic in an observer
// is recovered and ignored; it never changes a call's outcome.
type Observer interface {
	// Start is called once, first. The context it returns is the one the
	// call runs under: the store, the policy and the tool see it, and the
	// Phase and End calls of this call are given it. Returning ctx itself is
	// fine; returning nil keeps ctx.
	Start(ctx context.Context, c Call) context.Context
	// Phase is called once per phase the call went through, when it ends.
	Phase(ctx context.Context, c Call, e PhaseEvent)
	// End is called once, last, with what Invoke returns.
	End(ctx context.Context, c Call, o Outcome)
}

// ResultObserver is an Observer that may also be handed the agent-facing
// result of each call: exactly the bytes Result.AgentJSON returns (the
// projection, or the fixed error object), never the input, raw response or
// error text. A Boundary asks ObservesResults once, when it is built, and
// never calls Result unless it said true: without that opt-in, no payload
// byte reaches any observer.
type ResultObserver interface {
	Observer
	// ObservesResults reports whether this observer's user opted in.
	ObservesResults() bool
	// Result is called just before End. agentJSON belongs to the caller of
	// Invoke: read it, copy it if it must be kept, never change it.
	Result(ctx context.Context, c Call, agentJSON []byte)
}

// Join returns an Observer that calls each of obs in order (nil ones are
// skipped). Each Start gets the context the previous one returned. It is a
// ResultObserver whose Result reaches only the members that opted in.
func Join(obs ...Observer) Observer {
	j := &joined{}
	for _, o := range obs {
		if o == nil {
			continue
		}
		j.all = append(j.all, o)
		if r, ok := o.(ResultObserver); ok && r.ObservesResults() {
			j.results = append(j.results, r)
		}
	}
	return j
}

type joined struct {
	all     []Observer
	results []ResultObserver
}

func (j *joined) Start(ctx context.Context, c Call) context.Context {
	for _, o := range j.all {
		if next := startOne(o, ctx, c); next != nil {
			ctx = next
		}
	}
	return ctx
}

func (j *joined) Phase(ctx context.Context, c Call, e PhaseEvent) {
	for _, o := range j.all {
		phaseOne(o, ctx, c, e)
	}
}

func (j *joined) End(ctx context.Context, c Call, o Outcome) {
	for _, ob := range j.all {
		endOne(ob, ctx, c, o)
	}
}

// Each member is guarded on its own, so that one that panics does not keep
// the others from their events.

func startOne(o Observer, ctx context.Context, c Call) (next context.Context) {
	defer func() {
		if recover() != nil {
			next = nil
		}
	}()
	return o.Start(ctx, c)
}

func phaseOne(o Observer, ctx context.Context, c Call, e PhaseEvent) {
	defer func() { _ = recover() }()
	o.Phase(ctx, c, e)
}

func endOne(o Observer, ctx context.Context, c Call, out Outcome) {
	defer func() { _ = recover() }()
	o.End(ctx, c, out)
}

func resultOne(r ResultObserver, ctx context.Context, c Call, agentJSON []byte) {
	defer func() { _ = recover() }()
	r.Result(ctx, c, agentJSON)
}

func (j *joined) ObservesResults() bool { return len(j.results) > 0 }

func (j *joined) Result(ctx context.Context, c Call, agentJSON []byte) {
	for _, r := range j.results {
		resultOne(r, ctx, c, agentJSON)
	}
}

// SafeCode returns c when it is one of the stable codes or empty, and
// STORE_UNAVAILABLE otherwise: a code that came from host code (a store, a
// policy) is free text until checked, and only stable codes are reported.
func SafeCode(c canonical.Code) canonical.Code {
	if c == "" || c.Valid() {
		return c
	}
	return canonical.CodeStoreUnavailable
}
