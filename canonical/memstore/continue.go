package memstore

import (
	"bytes"
	"context"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

var _ canonical.Continuer = (*Store)(nil)

// waiting is what a record that waits for the agent's input keeps (the
// fields await_input.lua sets on Redis): the token the continuing call must
// present, whether a continuing call took it, and the tool's state.
type waiting struct {
	token string
	taken bool
	state []byte
}

// AwaitInput implements canonical.Continuer, as await_input.lua does.
func (s *Store) AwaitInput(ctx context.Context, a canonical.AwaitInput) (canonical.Record, error) {
	if err := a.Validate(); err != nil {
		return canonical.Record{}, err
	}
	if err := ctx.Err(); err != nil {
		return canonical.Record{}, canonical.Wrap(canonical.CodeStoreUnavailable, err, "await input")
	}
	state := bytes.Clone(a.State)
	var token string
	if s.auditOn() {
		token = s.audit.opts.Digest([]byte(a.Token))
	}
	sh, now := s.lock(a.RunID)
	defer sh.mu.Unlock()
	cur := sh.liveRecord(recordKey{a.RunID, a.ToolCallID}, now)
	if cur == nil {
		return canonical.Record{}, &canonical.Error{Code: canonical.CodeNotFound, Msg: "await input"}
	}
	if cur.rec.Owner != a.Owner || cur.rec.Status != canonical.StatusProjecting ||
		cur.input != nil && cur.input.token != a.Token && !cur.input.taken {
		return canonical.Record{}, canonical.Errorf(canonical.CodeInvalidTransition, "await input: the record is %s, or not the owner's to hold", cur.rec.Status)
	}
	// A resent await finds the call waiting under its token: no transition.
	resent := cur.input != nil && cur.input.token == a.Token && !cur.input.taken
	cur.input = &waiting{token: a.Token, state: state}
	s.relet(sh, cur, a.RunID, a.ToolCallID, a.Wait, now)
	if s.auditOn() && !resent {
		tr := canonical.TraceOf(ctx)
		s.appendEvent(sh, sh.streamRun(a.RunID, cur.expires, now), canonical.AuditEvent{RunID: a.RunID,
			Type: canonical.AuditAwaitInput, ToolCallID: a.ToolCallID, TokenDigest: token,
			WaitUntil: cur.rec.LeaseUntil.UTC(), TraceID: tr.TraceID, SpanID: tr.SpanID}, now)
	}
	out := snapshot(cur, now, false, false)
	detach(&out)
	return out, nil
}

// ContinueCall implements canonical.Continuer, as continue_call.lua does.
func (s *Store) ContinueCall(ctx context.Context, c canonical.ContinueCall) (canonical.Continued, error) {
	if err := c.Validate(); err != nil {
		return canonical.Continued{}, err
	}
	if err := ctx.Err(); err != nil {
		return canonical.Continued{}, canonical.Wrap(canonical.CodeStoreUnavailable, err, "continue")
	}
	tag := canonical.PrincipalTag(c.Principal)
	var input string
	if s.auditOn() {
		input = s.audit.opts.Digest(c.Input)
	}
	sh, now := s.lock(c.RunID)
	defer sh.mu.Unlock()
	// The run's owner first, as Begin checks it: a run with none (its state
	// lost) is nobody's to continue.
	r := sh.liveRun(c.RunID, now)
	if r == nil || r.principal != tag {
		return canonical.Continued{}, &canonical.Error{Code: canonical.CodeRunForbidden, Msg: "continue"}
	}
	cur := sh.liveRecord(recordKey{c.RunID, c.ToolCallID}, now)
	if cur == nil {
		return canonical.Continued{}, &canonical.Error{Code: canonical.CodeNotFound, Msg: "continue"}
	}
	if cur.rec.Status != canonical.StatusProjecting {
		return canonical.Continued{}, canonical.Errorf(canonical.CodeDuplicateToolCall, "continue: the call is %s", cur.rec.Status)
	}
	w := cur.input
	if w == nil || cur.rec.RequestDigest != c.RequestDigest || w.token != c.Token || w.taken && cur.rec.Owner != c.Owner {
		return canonical.Continued{}, canonical.Errorf(canonical.CodeToolCallInProgress, "continue: the call waits for no input under this token and request")
	}
	// A resent continue finds the call its own already: no transition.
	resent := w.taken
	w.taken = true
	cur.rec.Owner = c.Owner
	s.relet(sh, cur, c.RunID, c.ToolCallID, c.Lease, now)
	if s.auditOn() && !resent {
		tr := canonical.TraceOf(ctx)
		s.appendEvent(sh, r, canonical.AuditEvent{RunID: c.RunID, Type: canonical.AuditContinue, ToolCallID: c.ToolCallID,
			Principal: tag, InputDigest: input, InputSize: int64(len(c.Input)), TraceID: tr.TraceID, SpanID: tr.SpanID}, now)
	}
	out := snapshot(cur, now, false, false)
	detach(&out)
	// The run's limits and secret, as Begin gives them to the invocation.
	out.Limits, out.RunSecret = r.limits, []byte(r.secret)
	return canonical.Continued{Record: out, State: bytes.Clone(w.state)}, nil
}

// relet gives a PROJECTING record a lease of d from now, no later than its
// expiry, in the record and in the run's leases (where the call has its
// entry while it is PROJECTING: none is made here).
func (s *Store) relet(sh *shard, cur *record, runID, id string, d time.Duration, now int64) {
	until := now + min(d.Milliseconds(), cur.expires-now)
	cur.rec.UpdatedAt, cur.rec.LeaseUntil = time.UnixMilli(now), time.UnixMilli(until)
	if l := sh.liveLeases(runID, now); l != nil {
		if _, ok := l.until[id]; ok {
			l.until[id] = until
		}
	}
}
