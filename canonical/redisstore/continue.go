package redisstore

import (
	"context"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/auditrec"
	"github.com/toolcanon/toolcanon/internal/record"
)

var _ canonical.Continuer = (*Store)(nil)

// AwaitInput implements canonical.Continuer: one await_input.lua.
func (s *Store) AwaitInput(ctx context.Context, a canonical.AwaitInput) (canonical.Record, error) {
	if err := a.Validate(); err != nil {
		return canonical.Record{}, err
	}
	var body string
	if s.audit != nil {
		var err error
		if body, err = auditrec.AwaitBody(auditrec.Continuation{ToolCallID: a.ToolCallID, KeyID: s.audit.KeyID,
			TokenMAC: s.mac([]byte(a.Token)), Trace: canonical.TraceOf(ctx)}); err != nil {
			return canonical.Record{}, canonical.Wrap(canonical.CodeInvalidArgument, err, "await input")
		}
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rec := s.keys.Record(a.RunID, a.ToolCallID)
	events, pending, count := s.auditKeys(a.RunID)
	r, err := execAwaitInput(ctx, s, awaitInputKeys{Record: rec, Calls: s.keys.Calls(a.RunID),
		Run: s.keys.Run(a.RunID), Due: s.keys.RunSlotIndex(a.RunID, canonical.SlotDue), Events: events, Pending: pending, Count: count},
		awaitInputArgs{ToolCallID: a.ToolCallID, Owner: record.OwnerWord(a.Owner), Token: a.Token, State: a.State,
			WaitMs: a.Wait.Milliseconds(), RunID: a.RunID, Audit: body, Generation: s.auditGeneration()})
	if err != nil {
		return canonical.Record{}, unavailable(err, "await input")
	}
	switch r.Outcome {
	case "OK":
		return s.headerRecord(a.RunID, a.ToolCallID, r.Header, r.PTTL, "await input")
	case "INVALID_TRANSITION":
		return canonical.Record{}, canonical.Errorf(canonical.CodeInvalidTransition, "await input: the record is %s, or not the owner's to hold", statusOf(r.Header))
	}
	return canonical.Record{}, refusal(r.Outcome, "await input")
}

// ContinueCall implements canonical.Continuer: one continue_call.lua.
func (s *Store) ContinueCall(ctx context.Context, c canonical.ContinueCall) (canonical.Continued, error) {
	if err := c.Validate(); err != nil {
		return canonical.Continued{}, err
	}
	tag := canonical.PrincipalTag(c.Principal)
	var body string
	if s.audit != nil {
		var err error
		if body, err = auditrec.ContinueBody(auditrec.Continuation{ToolCallID: c.ToolCallID, Principal: tag, KeyID: s.audit.KeyID,
			InputMAC: s.mac(c.Input), InputSize: int64(len(c.Input)), Trace: canonical.TraceOf(ctx)}); err != nil {
			return canonical.Continued{}, canonical.Wrap(canonical.CodeInvalidArgument, err, "continue")
		}
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rec := s.keys.Record(c.RunID, c.ToolCallID)
	events, pending, count := s.auditKeys(c.RunID)
	r, err := execContinueCall(ctx, s, continueCallKeys{Record: rec, Run: s.keys.Run(c.RunID),
		Calls: s.keys.Calls(c.RunID), Due: s.keys.RunSlotIndex(c.RunID, canonical.SlotDue), Events: events, Pending: pending, Count: count},
		continueCallArgs{ToolCallID: c.ToolCallID, Owner: record.StoreOwner(c.Owner), Principal: tag,
			RequestSHA256: record.StoreDigest(c.RequestDigest), Token: c.Token, LeaseMs: c.Lease.Milliseconds(), RunID: c.RunID,
			Audit: body})
	if err != nil {
		return canonical.Continued{}, unavailable(err, "continue")
	}
	switch r.Outcome {
	case "OK":
		rec, err := s.headerRecord(c.RunID, c.ToolCallID, r.Header, r.PTTL, "continue")
		if err != nil {
			return canonical.Continued{}, err
		}
		if rec.Limits, err = unpackLimits(r.Limits); err != nil {
			return canonical.Continued{}, err
		}
		if r.Secret != "" {
			rec.RunSecret = []byte(r.Secret)
		}
		return canonical.Continued{Record: rec, State: r.State}, nil
	case "IN_PROGRESS":
		return canonical.Continued{}, canonical.Errorf(canonical.CodeToolCallInProgress, "continue: the call waits for no input under this token and request")
	case "DUPLICATE":
		return canonical.Continued{}, canonical.Errorf(canonical.CodeDuplicateToolCall, "continue: the call is %s", statusOf(r.Header))
	}
	return canonical.Continued{}, refusal(r.Outcome, "continue")
}

// headerRecord is the record a transition's header describes.
func (s *Store) headerRecord(runID, toolCallID, header string, pttl int64, op string) (canonical.Record, error) {
	h, err := s.header(header, op)
	if err != nil {
		return canonical.Record{}, err
	}
	return canonical.Record{
		RunID: runID, ToolCallID: toolCallID, Tool: h.Tool, Owner: h.Owner, RequestDigest: h.RequestSHA256,
		Status: canonical.Status(h.Status), Evidence: canonical.Evidence(h.Evidence), Error: canonical.Code(h.Error),
		CreatedAt: msTime(h.Created), UpdatedAt: msTime(h.Updated), LeaseUntil: leaseTime(h.Lease),
		TTL: msDuration(pttl), RequestLen: int(h.RequestLen), RawLen: int(h.RawLen),
	}, nil
}
