package boundary

import (
	"context"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/observe"
)

// WithObserver reports every Invoke to o: when it starts, once per phase it
// went through (preflight, begin, tool, projection, complete) and when it
// ends, with the call's validated identity, codes, byte sizes and durations
// — never a payload (see package observe). The context o.Start returns is the
// one the call runs under, so a tracing observer's span is the parent of
// whatever the policy, the tool and the store do. A panic in o is ignored.
// Given more than once, the observers are called in order.
func WithObserver(o observe.Observer) Option {
	return func(b *Boundary) error {
		if o == nil {
			return canonical.Errorf(canonical.CodeInvalidArgument, "boundary: nil observer")
		}
		b.observer = observe.Join(b.observer, o) // guards each observer on its own
		return nil
	}
}

// tracker follows one Invoke through its phases for the Boundary's observer.
// Its zero value (no observer) does nothing, so the calls in invoke cost a
// nil check each.
type tracker struct {
	o     observe.Observer
	ctx   context.Context // what o.Start returned
	call  observe.Call
	open  observe.Phase // the phase running now, 0 when none
	since time.Time     // when it started
	bytes int           // what it has produced so far
	out   observe.Outcome
}

// start begins tracking and returns the context the call runs under. A nil
// ctx stays nil (Invoke refuses it), but is still observed.
func (t *tracker) start(ctx context.Context, b *Boundary, run *RunContext, env *Envelope, id string) context.Context {
	t.o = b.observer
	now := time.Now()
	t.call = observe.Call{ToolCallID: id, Start: now}
	if canonical.ValidateRunID(run.ID) == nil {
		t.call.RunID = run.ID
	}
	if bd := b.bindings[env.Tool]; bd != nil {
		t.call.Tool, t.call.Name, t.call.Version = env.Tool, bd.name, bd.version
	}
	base := ctx
	if base == nil {
		base = context.Background()
	}
	t.ctx = t.o.Start(base, t.call)
	t.open, t.since = observe.Preflight, now
	if ctx == nil {
		return nil
	}
	return t.ctx
}

// sized records how many bytes the running phase has produced.
func (t *tracker) sized(n int) { t.bytes = n }

// next ends the running phase as passed, having produced n bytes, and
// starts p.
func (t *tracker) next(p observe.Phase, n int) {
	if t.o == nil {
		return
	}
	t.bytes = n
	t.close("", "")
	t.open, t.bytes = p, 0
}

// completing ends the running phase (tool or projection) with the code of
// the completion it led to, and starts Complete.
func (t *tracker) completing(c *canonical.Completion) {
	if t.o == nil {
		return
	}
	ev := canonical.Evidence("")
	if c.Status == canonical.StatusReady {
		ev = c.Evidence
	}
	t.close(c.Code, ev)
	t.open, t.bytes = observe.Complete, len(c.Raw)+len(c.Result)
}

// fail ends the running phase with code ("" when it passed).
func (t *tracker) fail(code canonical.Code) {
	if t.o == nil {
		return
	}
	t.close(code, "")
}

func (t *tracker) close(code canonical.Code, ev canonical.Evidence) {
	p := t.open
	if p == 0 {
		return
	}
	now := time.Now()
	d := now.Sub(t.since)
	t.out.Phases[p-1] += d
	switch p {
	case observe.Preflight:
		t.out.InputBytes = t.bytes
	case observe.Begin:
		t.out.RequestBytes = t.bytes
	case observe.Tool:
		t.out.RawBytes = t.bytes
	case observe.Projection:
		t.out.ResultBytes = t.bytes
	}
	start := t.since
	t.open, t.since = 0, now
	t.o.Phase(t.ctx, t.call, observe.PhaseEvent{
		Phase: p, Start: start, Duration: d, Code: observe.SafeCode(code), Bytes: t.bytes, Evidence: ev,
	})
}

// end reports the call's outcome; the phase still running ends with it.
func (t *tracker) end(res Result) {
	if t.o == nil {
		return
	}
	code := res.code
	if res.replayed {
		code = "" // Begin found the first call, and the replay answered
	}
	t.close(code, "")
	out := t.out
	out.Status, out.Code, out.Evidence = res.status, observe.SafeCode(res.code), res.evidence
	out.Executed, out.Replayed = res.executed, res.replayed
	out.Duration, out.AgentBytes = time.Since(t.call.Start), len(res.agent)
	if r, ok := t.o.(observe.ResultObserver); ok && r.ObservesResults() {
		r.Result(t.ctx, t.call, res.agent)
	}
	t.o.End(t.ctx, t.call, out)
}

// detached is the context of work that must finish even if the caller has
// gone: it keeps the observer's values (a span) but not the cancellation.
func (t *tracker) detached() context.Context {
	if t.o == nil {
		return context.Background()
	}
	return context.WithoutCancel(t.ctx)
}
