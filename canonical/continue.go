package canonical

import (
	"context"
	"time"
)

// Continuer is implemented by a Store that keeps a call open while its tool
// waits for the agent's input (MCP's multi round-trip requests: the tool
// answers input_required, and the agent sends the same call again with its
// input): waiting for input is no terminal state, and only the same call of
// the run's principal, presenting the token the record keeps, continues
// it. memstore and redisstore implement it.
type Continuer interface {
	// AwaitInput keeps the owner's PROJECTING record open for the agent's
	// input: the record keeps Token and State, and its lease becomes Wait
	// from now (no later than its expiry), after which a reaper may abandon
	// it. A record of another owner, a terminal one and one waiting under
	// another token are INVALID_TRANSITION; none is NOT_FOUND. A retry by
	// the same owner with the same token finds it waiting and succeeds.
	AwaitInput(ctx context.Context, a AwaitInput) (Record, error)

	// ContinueCall hands a record that waits for input to the invocation
	// Owner: Principal must own the run (else RUN_FORBIDDEN, checked first),
	// RequestDigest must be the record's and Token the one it keeps. The
	// record, PROJECTING under Owner with a lease of Lease from now, is
	// returned with the state AwaitInput kept. A record still running, or
	// waiting under another token or for another request, is
	// TOOL_CALL_IN_PROGRESS; a finished one DUPLICATE_TOOL_CALL; none
	// NOT_FOUND: as a Begin of the id would be answered. Nothing changes
	// then. A retry by the same Owner with the same Token succeeds again.
	ContinueCall(ctx context.Context, c ContinueCall) (Continued, error)
}

// MaxInputState bounds the state a call keeps while it waits for input.
const MaxInputState = 64 << 10

// AwaitInput asks a Continuer to keep a call open for the agent's input.
type AwaitInput struct {
	RunID, ToolCallID string
	Owner             string        // the invocation that began (or continued) the call
	Token             string        // what the continuing call must present: NewOwner's
	State             []byte        // the tool's state for the continuing call, at most MaxInputState bytes
	Wait              time.Duration // the new lease: how long the call waits for its input
}

// ContinueCall asks a Continuer to hand a waiting call to the invocation
// that continues it.
type ContinueCall struct {
	RunID, ToolCallID string
	Owner             string        // the continuing invocation's owner token (NewOwner)
	Principal         string        // who continues it: must own the run
	RequestDigest     string        // RequestDigest of the continuing request: the record's
	Token             string        // the token AwaitInput kept
	Lease             time.Duration // the continuing invocation's lease
	// Input is the agent's input responses the call is continued with: a
	// store keeps nothing of them, and with audit on its continue event
	// their keyed digest and size.
	Input []byte
}

// Continued is what ContinueCall returns: the record, with the run's
// Limits and RunSecret as Begin returns them, and the tool's state.
type Continued struct {
	Record Record
	State  []byte
}

// Validate checks an AwaitInput's shape.
func (a *AwaitInput) Validate() error {
	if err := ValidateRead(a.RunID, []string{a.ToolCallID}); err != nil {
		return err
	}
	if err := ValidateOwner(a.Owner); err != nil {
		return err
	}
	if ValidateOwner(a.Token) != nil {
		return Errorf(CodeInvalidArgument, "an input token is 1-%d bytes of [A-Za-z0-9_.-]", MaxIDLen)
	}
	if len(a.State) > MaxInputState {
		return Errorf(CodeInvalidArgument, "an input state is at most %d bytes (got %d)", MaxInputState, len(a.State))
	}
	if a.Wait < time.Millisecond {
		return Errorf(CodeInvalidArgument, "an input wait is at least 1ms (got %v)", a.Wait)
	}
	return nil
}

// Validate checks a ContinueCall's shape.
func (c *ContinueCall) Validate() error {
	if err := ValidateRead(c.RunID, []string{c.ToolCallID}); err != nil {
		return err
	}
	if err := ValidateOwner(c.Owner); err != nil {
		return err
	}
	if err := ValidatePrincipal(c.Principal); err != nil {
		return err
	}
	if ValidateOwner(c.Token) != nil {
		return Errorf(CodeInvalidArgument, "an input token is 1-%d bytes of [A-Za-z0-9_.-]", MaxIDLen)
	}
	if len(c.RequestDigest) != 64 {
		return Errorf(CodeInvalidArgument, "a request digest is 64 hex digits")
	}
	if c.Lease < time.Millisecond {
		return Errorf(CodeInvalidArgument, "a lease is at least 1ms (got %v)", c.Lease)
	}
	return nil
}
