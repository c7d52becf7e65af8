package boundary

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/strictjson"
	"github.com/toolcanon/toolcanon/observe"
	"github.com/toolcanon/toolcanon/registry"
)

// Invoke runs one tool call of run and returns its outcome. It never panics,
// never returns raw data, and never runs a tool before the call's record
// exists.
//
// Preflight refusals (INVALID_TOOL_CALL_ID, INVALID_RUN_ID, RUN_MISMATCH,
// RUN_INACTIVE, DEADLINE_EXCEEDED, UNKNOWN_TOOL, INVALID_ARGUMENT,
// UNAUTHORIZED, POLICY_UNAVAILABLE, INVALID_INPUT, APPROVAL_REQUIRED,
// NOT_READ_ONLY) write nothing and call nothing but the policy. A record
// TTL (the run's, else the store's default: canonical.DefaultTTLer) shorter
// than the tool's timeout plus the projection timeout plus the store's retry
// budget is INVALID_ARGUMENT. Begin refusals (RUN_FORBIDDEN
// for a run of another principal, before any other; TOOL_CALL_IN_PROGRESS,
// DUPLICATE_TOOL_CALL, BUDGET_EXHAUSTED,
// RUN_INACTIVE, RESULT_TOO_LARGE, INVALID_ARGUMENT for limits other than
// the run's, STORE_UNAVAILABLE) leave any existing record untouched and run
// nothing.
//
// Once the record exists it is completed exactly once: READY with the
// projection, or ERROR with EXECUTION_FAILED (tool error, panic or
// runtime.Goexit, whose raw response, if any, is kept when it fits; or a raw
// response outside the definition's declared output schema), TOOL_TIMEOUT
// (the tool's own timeout), DEADLINE_EXCEEDED (the run's deadline, or the
// caller's, passed while the tool ran), CANCELLED (the caller cancelled
// ctx while the tool ran), the code of a NotRun error (the tool did
// nothing; the Result says Executed false), RESULT_TOO_LARGE (raw over the
// record's room, in which case raw is not stored and the projector is not
// called; a declared output over the registry's output bound; a projector's
// own RESULT_TOO_LARGE; or a projection over the agent limit) or
// PROJECTION_FAILED (any other projector error, a panic or runtime.Goexit, a
// projection that overran the projection timeout or the run's deadline,
// evidence other than EVIDENCE_FOUND / NO_EVIDENCE, a result that is not
// strict JSON). Whenever raw fitted the record it stays there as
// harness-only data. A definition without an output schema has its raw
// response kept whole and unvalidated: only the projector reads it.
// NO_EVIDENCE is a READY outcome like any other: it is never retried or
// upgraded.
//
// If Complete cannot reach the store after the tool ran (after the bounded
// retries of WithStoreAttempts), the agent gets STORE_UNAVAILABLE and no
// result: what is not recorded is not shown. The record then stays
// PROJECTING, outside the completion index, so it can never become evidence,
// until its lease (the tool's timeout plus WithLeaseMargin) passes and a
// reaper abandons it (ERROR/EXECUTION_ABANDONED), or it expires with its
// TTL; its call still counts against the run's budgets. A completion
// refused because a reaper abandoned the call while it ran reaches the
// agent as EXECUTION_ABANDONED, what the record holds. If instead a completion reached the store but every reply was
// lost, the record holds that outcome while the agent was told
// STORE_UNAVAILABLE; under WithReplay a retry with the same id and request
// then returns the stored outcome.
func (b *Boundary) Invoke(ctx context.Context, run RunContext, env Envelope) (res Result) {
	return b.invokeWith(ctx, run, env, nil, false)
}

// InvokeWith runs one call as Invoke does, with tool as its execution in
// place of the bound one: a framework's middleware passes its own `next`, so
// that it needs no table of tools beside the framework's. The binding still
// gives the definition, the policy and the projector (see BindNext); tool
// gets the canonical input and its answer is checked, bounded, projected
// and recorded exactly as a bound tool's. A nil tool is INVALID_ARGUMENT,
// refused before anything is written.
func (b *Boundary) InvokeWith(ctx context.Context, run RunContext, env Envelope, tool Tool) Result {
	return b.invokeWith(ctx, run, env, tool, true)
}

func (b *Boundary) invokeWith(ctx context.Context, run RunContext, env Envelope, tool Tool, with bool) (res Result) {
	inv := invocation{b: b, env: &env, run: &run, tool: tool, with: with}
	if canonical.ValidateToolCallID(env.ToolCallID) == nil {
		// An invalid id is never echoed: it could carry anything.
		inv.id = env.ToolCallID
	}
	if b != nil && b.observer != nil {
		ctx = inv.obs.start(ctx, b, &run, &env, inv.id)
		defer func() { inv.obs.end(res) }() // after the recovery below
	}
	defer func() {
		if v := recover(); v != nil {
			res = inv.recovered(v)
		}
	}()
	return inv.invoke(ctx)
}

// invocation is the state of one Invoke.
type invocation struct {
	b     *Boundary
	env   *Envelope
	run   *RunContext
	id    string // validated tool_call_id, or ""
	tool  Tool   // InvokeWith's execution; nil for Invoke
	with  bool   // called through InvokeWith
	owner string // set once Begin is attempted
	begun bool   // the record exists and is ours
	done  bool   // Complete was attempted
	ran   bool   // the tool was called
	obs   tracker
}

func (inv *invocation) fail(c canonical.Code, err error) Result {
	return failure(inv.id, c, err, inv.ran)
}

func (inv *invocation) invoke(ctx context.Context) Result {
	b, env, run := inv.b, inv.env, inv.run
	if b == nil || b.store == nil {
		return inv.fail(canonical.CodeInvalidArgument, errors.New("boundary: Invoke on a Boundary not built by New"))
	}
	if ctx == nil {
		return inv.fail(canonical.CodeInvalidArgument, errors.New("boundary: nil context"))
	}

	// 1. Preflight: nothing below writes anything or runs a tool.
	if err := canonical.ValidateToolCallID(env.ToolCallID); err != nil {
		return inv.fail(canonical.CodeInvalidToolCallID, err)
	}
	if err := canonical.ValidateRunID(run.ID); err != nil {
		return inv.fail(canonical.CodeInvalidRunID, err)
	}
	if env.RunID != run.ID {
		return inv.fail(canonical.CodeRunMismatch, canonical.Errorf(canonical.CodeRunMismatch,
			"envelope names run %q, the run context is %q", env.RunID, run.ID))
	}
	if !run.Active {
		return inv.fail(canonical.CodeRunInactive, canonical.Errorf(canonical.CodeRunInactive, "run %q is not active", run.ID))
	}
	if !run.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, run.Deadline)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return inv.fail(canonical.CodeDeadlineExceeded, canonical.Wrap(canonical.CodeDeadlineExceeded, err, "before preflight"))
	}
	bd := b.bindings[env.Tool]
	if bd == nil {
		return inv.fail(canonical.CodeUnknownTool, canonical.Errorf(canonical.CodeUnknownTool, "no tool bound as %q", env.Tool))
	}
	tool := bd.tool
	switch {
	case inv.with && isNilTool(inv.tool):
		return inv.fail(canonical.CodeInvalidArgument, canonical.Errorf(canonical.CodeInvalidArgument, "InvokeWith %q: nil tool", env.Tool))
	case inv.with:
		tool = inv.tool
	case tool == nil:
		return inv.fail(canonical.CodeInvalidArgument, canonical.Errorf(canonical.CodeInvalidArgument,
			"%q is bound with BindNext: its execution comes with InvokeWith", env.Tool))
	}
	if !env.ToolCallIDSource.valid() {
		return inv.fail(canonical.CodeInvalidArgument, canonical.Errorf(canonical.CodeInvalidArgument,
			"unknown tool_call_id source %q", env.ToolCallIDSource))
	}
	// The boundary runs only reads: PrepareRead answers NOT_READ_ONLY for any
	// other effect before the input is parsed.
	plan, err := b.reg.PrepareRead(ctx, b.policy, registry.Request{
		Project: run.Project, Principal: run.Principal, Tool: bd.name, Version: bd.version, Input: env.Input,
	})
	if err != nil {
		return inv.fail(preflightCode(err), err)
	}
	if plan.Status() != registry.StatusReady {
		return inv.fail(canonical.CodeApprovalRequired, canonical.Errorf(canonical.CodeApprovalRequired,
			"plan for %s@%s is %s", bd.name, bd.version, plan.Status()))
	}
	def := plan.Tool()
	if def.Effect() != registry.EffectRead { // PrepareRead's promise, kept here too
		return inv.fail(canonical.CodeNotReadOnly, canonical.Errorf(canonical.CodeNotReadOnly,
			"%s@%s has effect %s", bd.name, bd.version, def.Effect()))
	}
	// Budgets are only checked for shape here; the store counts them
	// atomically at Begin, so that parallel calls cannot overshoot.
	if err := run.Limits.Validate(); err != nil {
		return inv.fail(canonical.CodeInvalidArgument, err)
	}
	if run.TTL < 0 {
		return inv.fail(canonical.CodeInvalidArgument, canonical.Errorf(canonical.CodeInvalidArgument, "negative TTL %v", run.TTL))
	}
	// The TTL the record will get: the run's, else the store's default. One
	// the store does not say (a Store without DefaultTTLer) is left to Begin.
	ttl := run.TTL
	if ttl == 0 {
		ttl = canonical.DefaultTTLOf(b.store)
	}
	if need := b.recordLife(def.Timeout()); ttl > 0 && ttl < need {
		return inv.fail(canonical.CodeInvalidArgument, canonical.Errorf(canonical.CodeInvalidArgument,
			"record TTL %v is shorter than the tool timeout, the projection timeout and the store retry budget (%v)", ttl, need))
	}
	input := plan.Input()
	// Handles in the arguments (as the model sent them) are resolved into
	// the values they stand for before anything is written; the record keeps
	// the arguments as sent, and which call each handle's value came from.
	exec, handles, err := inv.resolveInput(ctx, plan, input)
	if err != nil {
		return inv.fail(canonical.CodeOf(err), err)
	}
	request := buildRequest(env, run, bd, plan, input, handles)
	inv.obs.next(observe.Begin, len(input))

	// 2. The record exists before anything runs. Its lease lets a reaper
	// close it if this worker dies: the tool's timeout and a margin.
	inv.owner = canonical.NewOwner()
	var rec canonical.Record
	if env.Continue != nil {
		// The agent's input to a call that waits for it: the same call
		// continues, under this invocation, instead of a new one.
		var cont canonical.Continued
		if cont, err = inv.continueCall(ctx, request, def.Timeout()+b.leaseMargin); err == nil {
			rec = cont.Record
			ctx = context.WithValue(ctx, resumedKey{}, Resumed{State: cont.State, Input: env.Continue.Input})
		}
	} else {
		rec, err = inv.begin(ctx, request, def.Timeout()+b.leaseMargin)
	}
	if err != nil {
		code := canonical.CodeOf(err)
		if code == canonical.CodeDuplicateToolCall && b.replay {
			return inv.replay(ctx, request, err)
		}
		return inv.fail(code, err)
	}
	inv.begun = true
	// The run's limits as the store holds them: a zero field of run.Limits
	// means "the run's", which only the store knows.
	limits := rec.Limits
	if limits == (canonical.Limits{}) {
		limits = run.Limits.WithDefaults()
	}
	// The run's handles: the tool may mask what it shows while it runs with
	// the same key (MaskerFrom), the projection mints the result's.
	var mask *minter
	if !b.noHandles && len(rec.RunSecret) > 0 {
		mask = newMinter(rec.RunSecret, false).withKnown(handles)
		ctx = context.WithValue(ctx, maskerKey{}, canonical.Masker(newMinter(rec.RunSecret, false).withKnown(handles)))
	}
	inv.obs.next(observe.Tool, len(request))

	// 3. Execute, bounded by the tool's timeout and the run's deadline (ctx).
	inv.ran = true
	raw, code, ran, err := execute(ctx, tool, def.Timeout(), exec)
	inv.ran = ran
	inv.obs.sized(len(raw))
	if ir := (*InputRequired)(nil); err != nil && code == canonical.CodeExecutionFailed && errors.As(err, &ir) {
		return inv.awaitInput(ir, rec.TTL)
	}
	if err != nil {
		c := canonical.Completion{Status: canonical.StatusError, Code: code, NotRun: !ran}
		if len(raw) > 0 && int64(len(raw)) <= limits.MaxRecordBytes-int64(len(request)) {
			c.Raw = raw // what the failed tool answered, kept as harness-only data
		}
		return inv.complete(c, err)
	}

	// 4. A raw response with no room in the record is refused unread.
	if room := limits.MaxRecordBytes - int64(len(request)); int64(len(raw)) > room {
		return inv.complete(canonical.Completion{Status: canonical.StatusError, Code: canonical.CodeResultTooLarge},
			canonical.Errorf(canonical.CodeResultTooLarge, "raw response is %d bytes, the record has room for %d", len(raw), room))
	}

	// A declared output schema holds before anything reads the response.
	if err := checkOutput(def, raw); err != nil {
		return inv.complete(canonical.Completion{Status: canonical.StatusError, Code: canonical.CodeOf(err), Raw: raw}, err)
	}

	// 5. Project.
	inv.obs.next(observe.Projection, len(raw))
	call := canonical.Call{RunID: run.ID, ToolCallID: env.ToolCallID, Tool: env.Tool, Input: input}
	if mask != nil {
		call.Mask = mask
	}
	p, err := project(ctx, bd.projector, b.projTimeout, call, raw)
	if err == nil && mask != nil {
		// A value resolved into the arguments that the answer holds again
		// reads as its handle, whatever the projector's redactor made of it.
		p.Result = mask.maskKnown(p.Result, true)
	}
	inv.obs.sized(len(p.Result))
	if err == nil && !p.Evidence.Ready() {
		err = canonical.Errorf(canonical.CodeProjectionFailed, "projector returned evidence %q", p.Evidence)
	}
	if err == nil && int64(len(p.Result)) > limits.MaxResultBytes {
		return inv.complete(canonical.Completion{Status: canonical.StatusError, Code: canonical.CodeResultTooLarge, Raw: raw},
			canonical.Errorf(canonical.CodeResultTooLarge, "agent result is %d bytes, the limit is %d", len(p.Result), limits.MaxResultBytes))
	}
	if err == nil && (len(p.Result) == 0 || !strictjson.Valid(p.Result)) {
		err = canonical.Errorf(canonical.CodeProjectionFailed, "projector returned a result that is not strict JSON")
	}
	if err != nil {
		// PROJECTION_FAILED, or the projector's own RESULT_TOO_LARGE.
		return inv.complete(canonical.Completion{Status: canonical.StatusError, Code: canonical.CodeOf(err), Raw: raw}, err)
	}

	// 6. READY: the agent gets the bounded result, and only once it is stored
	// with the handles it holds, so that a later call can pass them back.
	c := canonical.Completion{Status: canonical.StatusReady, Evidence: p.Evidence, Raw: raw, Result: p.Result}
	if mask != nil {
		c.Handles = mask.minted()
		mask.mu.Lock()
		c.Redactions = mask.masked
		mask.mu.Unlock()
	}
	return inv.complete(c, nil)
}

// preflightCode keeps the registry's code; an unclassified error (which the
// registry does not return) fails closed as POLICY_UNAVAILABLE rather than
// being blamed on the store.
func preflightCode(err error) canonical.Code {
	var ce *canonical.Error
	if errors.As(err, &ce) && ce.Code.Valid() {
		return ce.Code
	}
	return canonical.CodePolicyUnavailable
}

// begin creates the record, retrying an unavailable store with the same
// owner: the store recognises the retry and never counts it twice.
func (inv *invocation) begin(ctx context.Context, request []byte, lease time.Duration) (canonical.Record, error) {
	req := canonical.BeginRequest{
		RunID: inv.run.ID, ToolCallID: inv.env.ToolCallID, Tool: inv.env.Tool, Owner: inv.owner,
		Principal: inv.run.Principal.Subject, Request: request, TTL: inv.run.TTL, Lease: lease, Limits: inv.run.Limits,
	}
	if bd := inv.b.bindings[inv.env.Tool]; bd != nil {
		req.Definition = bd.name + "@" + bd.version
	}
	var rec canonical.Record
	err := inv.b.retry(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, inv.b.storeTimeout)
		defer cancel()
		var err error
		rec, err = safeBegin(ctx, inv.b.store, req)
		return err
	})
	if err == nil && rec.Status != canonical.StatusProjecting {
		// Only this invocation completes its own record; anything else means
		// the record is not the one this invocation may run a tool for.
		err = canonical.Errorf(canonical.CodeDuplicateToolCall, "begin found the record %s", rec.Status)
	}
	return rec, err
}

// complete finishes the record with c and turns the outcome into the Result.
// cause is the operator-facing reason of an ERROR completion.
func (inv *invocation) complete(c canonical.Completion, cause error) Result {
	inv.done = true
	c.RunID, c.ToolCallID, c.Owner = inv.run.ID, inv.env.ToolCallID, inv.owner
	inv.obs.completing(&c)
	rec, err := inv.completeRecord(c)
	inv.obs.fail(canonical.CodeOf(err))
	switch {
	case err == nil && rec.Status == canonical.StatusReady && c.Status == canonical.StatusReady:
		return Result{
			toolCallID: inv.id, status: canonical.StatusReady, evidence: rec.Evidence, executed: true, agent: c.Result,
		}
	case err == nil && rec.Status == canonical.StatusError:
		return inv.fail(rec.Error, cause)
	case canonical.CodeOf(err) == canonical.CodeResultTooLarge:
		// The store refused the bytes (the run's byte budget): the record is
		// ERROR/RESULT_TOO_LARGE with neither raw nor result.
		return inv.fail(canonical.CodeResultTooLarge, errors.Join(err, cause))
	case err == nil:
		return inv.fail(canonical.CodeStoreUnavailable, errors.Join(canonical.Errorf(canonical.CodeStoreUnavailable,
			"complete returned a %s record for a %s completion", rec.Status, c.Status), cause))
	}
	if canonical.CodeOf(err) == canonical.CodeInvalidTransition && inv.abandoned() {
		// A reaper closed the call while this worker still ran it: what is
		// recorded, and so what the agent is told, is that it was abandoned.
		return inv.fail(canonical.CodeExecutionAbandoned, errors.Join(err, cause))
	}
	// Whatever else the store said (unreachable, record expired, not ours),
	// the outcome is not recorded and so is not shown.
	return inv.fail(canonical.CodeStoreUnavailable, errors.Join(err, cause))
}

// abandoned reports whether the call's record is this invocation's, closed
// by Abandon: one read, made only after the store refused a completion.
func (inv *invocation) abandoned() bool {
	ctx, cancel := context.WithTimeout(inv.obs.detached(), inv.b.storeTimeout)
	defer cancel()
	recs, err := safeGetMany(ctx, inv.b.store, inv.run.ID, []string{inv.env.ToolCallID})
	if err != nil || recs[0] == nil {
		return false
	}
	r := recs[0]
	return r.Owner == inv.owner && r.Status == canonical.StatusError && r.Error == canonical.CodeExecutionAbandoned
}

// completeRecord calls Complete detached from the caller's cancellation, with
// bounded retries under the same owner (a retried completion returns the
// stored outcome).
func (inv *invocation) completeRecord(c canonical.Completion) (canonical.Record, error) {
	var rec canonical.Record
	detached := inv.obs.detached()
	err := inv.b.retry(detached, func(context.Context) error {
		ctx, cancel := context.WithTimeout(detached, inv.b.storeTimeout)
		defer cancel()
		var err error
		rec, err = safeComplete(ctx, inv.b.store, c)
		return err
	})
	return rec, err
}

// retry runs op up to storeAttempts times while it fails with
// STORE_UNAVAILABLE and ctx is alive, pausing a little longer each time.
func (b *Boundary) retry(ctx context.Context, op func(context.Context) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = op(ctx)
		if err == nil || canonical.CodeOf(err) != canonical.CodeStoreUnavailable || attempt >= b.storeAttempts {
			return err
		}
		t := time.NewTimer(retryPause(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// retryPause is the pause after a failed store attempt.
func retryPause(attempt int) time.Duration { return time.Duration(attempt) * 10 * time.Millisecond }

// MinRecordTTL is the shortest record TTL that a Boundary with the default
// projection timeout and store retries (DefaultProjectionTimeout,
// DefaultStoreAttempts, DefaultStoreTimeout) accepts for a tool with this
// timeout; a shorter one refuses every call of the tool at preflight. It
// lets a configuration be checked before any Boundary is built.
func MinRecordTTL(toolTimeout time.Duration) time.Duration {
	b := Boundary{storeAttempts: DefaultStoreAttempts, storeTimeout: DefaultStoreTimeout, projTimeout: DefaultProjectionTimeout}
	return b.recordLife(toolTimeout)
}

// recordLife is the shortest record TTL that outlives a call of a tool
// with this timeout: the tool, its projection (or, for a cancelled tool,
// the grace it has to return, when that is longer), then Complete with all
// its retries.
func (b *Boundary) recordLife(toolTimeout time.Duration) time.Duration {
	return toolTimeout + b.afterTool() + b.storeBudget()
}

// afterTool is the longest a call may take between its tool's timeout and
// its Complete: the projection, or a cancelled tool's grace.
func (b *Boundary) afterTool() time.Duration { return max(b.projTimeout, cancelGrace) }

// replay answers a duplicate under WithReplay: the stored outcome of an
// identical, completed request, else DUPLICATE_TOOL_CALL. The outcome is
// the one the Begin's duplicate carries (canonical.Replayable), which a
// durable store's wait covered; a store that carries none is read.
func (inv *invocation) replay(ctx context.Context, request []byte, dup error) Result {
	var rec *canonical.Record
	if first, ok := canonical.ReplayableOf(dup); ok {
		// Read by the Begin itself: the store's durability wait covered it.
		rec = &first
	} else {
		ctx, cancel := context.WithTimeout(ctx, inv.b.storeTimeout)
		defer cancel()
		recs, err := safeGetMany(ctx, inv.b.store, inv.run.ID, []string{inv.env.ToolCallID})
		if err != nil {
			code := canonical.CodeOf(err)
			if code != canonical.CodeStoreUnavailable {
				code = canonical.CodeDuplicateToolCall
			}
			return inv.fail(code, errors.Join(dup, err))
		}
		rec = recs[0]
	}
	switch {
	case rec == nil:
		return inv.fail(canonical.CodeDuplicateToolCall, errors.Join(dup, errors.New("boundary: replay: the first record is gone")))
	case rec.RequestDigest != canonical.RequestDigest(request) || rec.Tool != inv.env.Tool:
		return inv.fail(canonical.CodeDuplicateToolCall, errors.Join(dup, errors.New("boundary: replay: the first call's request differs")))
	case rec.Status == canonical.StatusReady && rec.Evidence.Ready() && len(rec.Result) > 0:
		return Result{
			toolCallID: inv.id, status: canonical.StatusReady, evidence: rec.Evidence, replayed: true, agent: rec.Result,
		}
	case rec.Status == canonical.StatusError && rec.Error.Valid():
		r := inv.fail(rec.Error, fmt.Errorf("boundary: replay of the stored error %s", rec.Error))
		r.replayed = true
		return r
	case rec.Status == canonical.StatusProjecting:
		return inv.fail(canonical.CodeToolCallInProgress, errors.Join(dup, errors.New("boundary: replay: the first call is still running")))
	}
	return inv.fail(canonical.CodeDuplicateToolCall, errors.Join(dup, fmt.Errorf("boundary: replay: the first call is %s", rec.Status)))
}

// recovered turns a panic of the boundary itself into a safe result. A
// begun record is completed as EXECUTION_FAILED so that it does not linger.
func (inv *invocation) recovered(v any) (res Result) {
	err := fmt.Errorf("boundary: internal panic: %v", v)
	defer func() {
		if recover() != nil {
			res = inv.fail(canonical.CodeExecutionFailed, err)
		}
	}()
	if inv.begun && !inv.done {
		return inv.complete(canonical.Completion{Status: canonical.StatusError, Code: canonical.CodeExecutionFailed}, err)
	}
	return inv.fail(canonical.CodeExecutionFailed, err)
}

// Causes that tell the boundary's own deadlines from the run's.
var (
	errToolTimeout       = errors.New("boundary: the tool's timeout passed")
	errProjectionTimeout = errors.New("boundary: the projection timeout passed")
)

// execute calls the tool in its own goroutine so that a tool that ignores
// its context still cannot hold the call past its timeout; its late answer
// is dropped. The tool's own timeout is TOOL_TIMEOUT; the run's deadline
// (ctx) passing first is DEADLINE_EXCEEDED; the caller cancelling ctx is
// CANCELLED. A panic, an error, or a tool that ends its goroutine without
// returning (runtime.Goexit) is EXECUTION_FAILED, and a NotRun error its
// own code. ran is false only when the tool returned a NotRun error: a tool
// that did not answer may have done anything. On cancellation the tool gets
// cancelGrace to answer, so that it can say whether it had started.
func execute(ctx context.Context, t Tool, timeout time.Duration, input []byte) (_ []byte, _ canonical.Code, ran bool, _ error) {
	tctx, cancel := context.WithTimeoutCause(ctx, timeout, errToolTimeout)
	defer cancel()
	var raw []byte
	finished, err := runGuarded(tctx, "tool", cancelGrace, func() error {
		var err error
		raw, err = t.Call(tctx, input)
		return err
	})
	if err == nil {
		return raw, "", true, nil
	}
	nrCode, notRun := notRunCode(err)
	ran = !(notRun && finished)
	switch {
	case tctx.Err() != nil && errors.Is(context.Cause(tctx), errToolTimeout):
		return nil, canonical.CodeToolTimeout, ran, canonical.Wrap(canonical.CodeToolTimeout, err, "tool")
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, canonical.CodeDeadlineExceeded, ran, canonical.Wrap(canonical.CodeDeadlineExceeded, err, "the run's deadline passed while the tool ran")
	case errors.Is(ctx.Err(), context.Canceled):
		return nil, canonical.CodeCancelled, ran, canonical.Wrap(canonical.CodeCancelled, err, "the caller cancelled the call")
	case notRun && finished:
		return nil, nrCode, false, canonical.Wrap(nrCode, err, "tool")
	}
	if !finished {
		raw = nil // the tool may still write it
	}
	return raw, canonical.CodeExecutionFailed, true, canonical.Wrap(canonical.CodeExecutionFailed, err, "tool")
}

// cancelGrace is how long a cancelled tool may take to return.
const cancelGrace = 5 * time.Second

// checkOutput enforces a declared output schema on the raw response, within
// the registry's output bound: a response outside the schema is the tool's
// failure (EXECUTION_FAILED), one over the bound RESULT_TOO_LARGE. A
// definition without an output schema declares no typed output, so its raw
// response stays opaque: it is kept whole and only the projector reads it.
func checkOutput(def *registry.Tool, raw []byte) error {
	if !def.HasOutputSchema() {
		return nil
	}
	_, err := def.CanonicalOutput(raw)
	switch {
	case err == nil:
		return nil
	case canonical.CodeOf(err) == canonical.CodeResultTooLarge:
		return canonical.Wrap(canonical.CodeResultTooLarge, err, "tool output over the registry's bound")
	}
	return canonical.Wrap(canonical.CodeExecutionFailed, err, "tool output outside its declared schema")
}

// project calls the projector in its own goroutine under the projection
// timeout and the run's deadline (ctx). An error, a panic, runtime.Goexit
// or an overrun is PROJECTION_FAILED, except the projector's own
// RESULT_TOO_LARGE (see projectionCode); an overrunning projector's late
// answer is dropped.
func project(ctx context.Context, p canonical.Projector, timeout time.Duration, call canonical.Call, raw []byte) (canonical.Projection, error) {
	pctx, cancel := context.WithTimeoutCause(ctx, timeout, errProjectionTimeout)
	defer cancel()
	var out canonical.Projection
	_, err := runGuarded(pctx, "projector", 0, func() error {
		var err error
		out, err = p.Project(pctx, call, raw)
		return err
	})
	if err != nil {
		return canonical.Projection{}, canonical.Wrap(projectionCode(err), err, "projector")
	}
	return out, nil
}

// projectionCode is the code a projector error completes the record with. A
// projector that reports RESULT_TOO_LARGE (its code, the outermost one) found
// that no result fits its budget: the same outcome as a result over the
// agent limit. Anything else a projector says is PROJECTION_FAILED: it never
// speaks for the store, the tool or the lifecycle.
func projectionCode(err error) canonical.Code {
	if canonical.CodeOf(err) == canonical.CodeResultTooLarge {
		return canonical.CodeResultTooLarge
	}
	return canonical.CodeProjectionFailed
}

// runGuarded runs f in its own goroutine and waits for it or for ctx to
// end, whichever comes first; when ctx is cancelled (not timed out) it
// waits up to grace more for f. It returns f's error, an error for a panic
// or a runtime.Goexit in f, or, when ctx ends first, ctx's cause; f keeps
// running then, and whatever it writes afterwards is never read: f must
// only write variables that the caller reads when finished is true, which
// says that f returned (with or without an error) before runGuarded did.
func runGuarded(ctx context.Context, what string, grace time.Duration, f func() error) (finished bool, err error) {
	type outcome struct {
		returned bool
		err      error
	}
	done := make(chan outcome, 1) // buffered: an abandoned f never blocks
	go func() {
		var o outcome
		defer func() {
			if v := recover(); v != nil {
				o = outcome{err: fmt.Errorf("boundary: %s panicked: %v", what, v)}
			} else if !o.returned {
				o.err = fmt.Errorf("boundary: %s ended its goroutine without returning (runtime.Goexit)", what)
			}
			done <- o
		}()
		o.err = f()
		o.returned = true
	}()
	select {
	case o := <-done:
		return o.returned, o.err
	case <-ctx.Done():
		if grace > 0 && errors.Is(ctx.Err(), context.Canceled) {
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case o := <-done: // it answered within the grace
				return o.returned, o.err
			case <-t.C:
			}
		} else {
			select {
			case o := <-done: // it answered just in time
				return o.returned, o.err
			default:
			}
		}
		return false, fmt.Errorf("boundary: %s overran: %w", what, context.Cause(ctx))
	}
}

// The safe* helpers turn a panicking store into STORE_UNAVAILABLE: a store is
// host code too, and Invoke must not panic.

func safeBegin(ctx context.Context, s canonical.Store, req canonical.BeginRequest) (rec canonical.Record, err error) {
	defer recoverStore(&err, "begin")
	return s.Begin(ctx, req)
}

func safeComplete(ctx context.Context, s canonical.Store, c canonical.Completion) (rec canonical.Record, err error) {
	defer recoverStore(&err, "complete")
	return s.Complete(ctx, c)
}

func safeGetMany(ctx context.Context, s canonical.Store, runID string, ids []string) (recs []*canonical.Record, err error) {
	return safeRead(ctx, s, runID, ids, canonical.ReadOptions{})
}

func safeRead(ctx context.Context, s canonical.Store, runID string, ids []string, opts canonical.ReadOptions) (recs []*canonical.Record, err error) {
	defer recoverStore(&err, "read")
	recs, err = s.GetMany(ctx, runID, ids, opts)
	if err == nil && len(recs) != len(ids) {
		err = canonical.Errorf(canonical.CodeStoreUnavailable, "read returned %d records for %d ids", len(recs), len(ids))
	}
	return recs, err
}

func safeHandleSources(ctx context.Context, x canonical.HandleIndex, runID, principal string, ids []string) (src canonical.HandleSources, err error) {
	defer recoverStore(&err, "read handles")
	return x.HandleSources(ctx, runID, principal, ids)
}

func recoverStore(err *error, op string) {
	if v := recover(); v != nil {
		*err = canonical.Errorf(canonical.CodeStoreUnavailable, "store panicked in %s: %v", op, v)
	}
}
