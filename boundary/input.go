package boundary

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// InputRequired is the error a Tool returns when it cannot answer before
// the agent gives it input (MCP's multi round-trip requests: the tool
// answers input_required). Invoke does not complete the call then: its
// record stays PROJECTING, waiting for the agent's input for Wait (its
// lease; a reaper abandons it after), and the Result asks the agent
// (Result.InputRequired). The agent answers with the same call — the same
// tool_call_id and request, with Envelope.Continue — and the tool, called
// again, reads State and the agent's answer with ContinuationFrom. Any
// other call of the id is refused as while the call runs.
//
// It needs a store that keeps calls open (canonical.Continuer, as memstore
// and redisstore do); with another, and for Requests that are not strict
// JSON or a State over canonical.MaxInputState bytes, the call is completed
// as EXECUTION_FAILED.
type InputRequired struct {
	// Requests is what the agent is asked, as the agent gets it: strict
	// JSON, which the tool bounds and redacts (the boundary does not read
	// it). It is not recorded.
	Requests json.RawMessage
	// State is what the tool needs to continue: kept by the record, never
	// shown to the agent; at most canonical.MaxInputState bytes.
	State []byte
	// Wait is how long the call waits for the input; 0 is DefaultInputWait.
	// It is cut to the record's remaining TTL.
	Wait time.Duration
}

// DefaultInputWait is how long a call waits for the agent's input when its
// tool does not say (InputRequired.Wait).
const DefaultInputWait = 10 * time.Minute

func (e *InputRequired) Error() string { return "boundary: the tool needs the agent's input" }

// Continuation is the agent's input to a call that asked for it: an
// Envelope with one continues the waiting call instead of beginning one.
type Continuation struct {
	// Token is the token of the Result that asked (Result.InputRequired).
	Token string
	// Input is the agent's answer, passed to the tool (ContinuationFrom).
	// It is not recorded: with audit on, the call's continue event keeps
	// its keyed digest and size.
	Input json.RawMessage
}

// Resumed is what the tool of a continued call is given: the State it
// returned with InputRequired, and the agent's answer.
type Resumed struct {
	State []byte
	Input json.RawMessage
}

type resumedKey struct{}

// ContinuationFrom returns what a continued call's tool is given; false
// when the call is not a continuation.
func ContinuationFrom(ctx context.Context) (Resumed, bool) {
	r, ok := ctx.Value(resumedKey{}).(Resumed)
	return r, ok
}

// InputRequired reports whether the call waits for the agent's input, with
// what the agent is asked (the tool's InputRequired.Requests) and the
// token its continuation must carry (Continuation.Token). Status is then
// PROJECTING, and AgentJSON
//
//	{"tool_call_id":…,"status":"INPUT_REQUIRED","input_requests":…}
func (r Result) InputRequired() (requests json.RawMessage, token string, ok bool) {
	return r.requests, r.inputToken, r.inputToken != ""
}

// continueCall hands the waiting call to this invocation, retrying an
// unavailable store with the same owner (the store finds the retry its
// own). The store must keep calls open.
func (inv *invocation) continueCall(ctx context.Context, request []byte, lease time.Duration) (canonical.Continued, error) {
	c, ok := inv.b.store.(canonical.Continuer)
	if !ok {
		return canonical.Continued{}, canonical.Errorf(canonical.CodeInvalidArgument, "boundary: the store keeps no call open for input (canonical.Continuer)")
	}
	req := canonical.ContinueCall{
		RunID: inv.run.ID, ToolCallID: inv.env.ToolCallID, Owner: inv.owner, Principal: inv.run.Principal.Subject,
		RequestDigest: canonical.RequestDigest(request), Token: inv.env.Continue.Token, Lease: lease,
		Input: inv.env.Continue.Input,
	}
	var out canonical.Continued
	err := inv.b.retry(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, inv.b.storeTimeout)
		defer cancel()
		var err error
		out, err = safeContinue(ctx, c, req)
		return err
	})
	if err == nil && out.Record.Tool != inv.env.Tool {
		// The digest covers the tool; a store's answer must agree.
		err = canonical.Errorf(canonical.CodeDuplicateToolCall, "boundary: the waiting call is of tool %q", out.Record.Tool)
	}
	return out, err
}

// awaitInput keeps the call open for the agent's input that ir asks for,
// and returns the Result that asks it; a request the boundary cannot keep
// open completes the call as EXECUTION_FAILED.
func (inv *invocation) awaitInput(ir *InputRequired, ttl time.Duration) Result {
	c, ok := inv.b.store.(canonical.Continuer)
	switch {
	case !ok:
		return inv.complete(canonical.Completion{Status: canonical.StatusError, Code: canonical.CodeExecutionFailed},
			errors.New("boundary: the tool needs input, and the store keeps no call open for it (canonical.Continuer)"))
	case len(ir.Requests) == 0 || !strictjson.Valid(ir.Requests):
		return inv.complete(canonical.Completion{Status: canonical.StatusError, Code: canonical.CodeExecutionFailed},
			errors.New("boundary: the tool asked for input with requests that are not strict JSON"))
	case len(ir.State) > canonical.MaxInputState:
		return inv.complete(canonical.Completion{Status: canonical.StatusError, Code: canonical.CodeExecutionFailed},
			canonical.Errorf(canonical.CodeExecutionFailed, "boundary: the tool's state is %d bytes, at most %d are kept", len(ir.State), canonical.MaxInputState))
	}
	wait := ir.Wait
	if wait <= 0 {
		wait = DefaultInputWait
	}
	if ttl > 0 {
		wait = min(wait, ttl)
	}
	req := canonical.AwaitInput{RunID: inv.run.ID, ToolCallID: inv.env.ToolCallID, Owner: inv.owner,
		Token: canonical.NewOwner(), State: ir.State, Wait: max(wait, time.Millisecond)}
	inv.done = true // kept open, not completed: nothing below completes it
	detached := inv.obs.detached()
	err := inv.b.retry(detached, func(context.Context) error {
		ctx, cancel := context.WithTimeout(detached, inv.b.storeTimeout)
		defer cancel()
		_, err := safeAwait(ctx, c, req)
		return err
	})
	if err != nil {
		// The record stays PROJECTING under its lease, and a reaper closes
		// it: what is not recorded is not asked.
		return inv.fail(canonical.CodeStoreUnavailable, err)
	}
	agent := append([]byte(`{"tool_call_id":"`), inv.id...)
	agent = append(append(append(agent, `","status":"INPUT_REQUIRED","input_requests":`...), ir.Requests...), '}')
	return Result{toolCallID: inv.id, status: canonical.StatusProjecting, executed: true, agent: agent,
		requests: append(json.RawMessage(nil), ir.Requests...), inputToken: req.Token}
}

func safeContinue(ctx context.Context, c canonical.Continuer, req canonical.ContinueCall) (out canonical.Continued, err error) {
	defer recoverStore(&err, "continue")
	return c.ContinueCall(ctx, req)
}

func safeAwait(ctx context.Context, c canonical.Continuer, req canonical.AwaitInput) (rec canonical.Record, err error) {
	defer recoverStore(&err, "await input")
	return c.AwaitInput(ctx, req)
}
