package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/registry"
)

// The _meta keys of a call's identity. MCP has no field for the model's
// tool_call_id or for a run; the project reads them under its own
// reverse-DNS keys (and the aliases of Identity).
const (
	MetaToolCallID = "io.github.toolcanon/toolCallId"
	MetaRunID      = "io.github.toolcanon/runId"
)

// JSON-RPC error codes of the two failures that are not tool results: a
// call that names no run, and a caller that is not authenticated.
const (
	CodeNoRun           int64 = -32602
	CodeUnauthenticated int64 = -32001
)

// Errors a RunResolver returns, wrapped or not, for the two JSON-RPC
// failures. Any other resolver error is an internal error.
var (
	ErrNoRun           = errors.New("gateway: the call names no run")
	ErrUnauthenticated = errors.New("gateway: the caller is not authenticated")
)

// Identity says under which _meta keys a call's identity is read. The
// project's keys are always read; aliases let clients that use other
// integrators' keys (such as "redpanda.com/llm-tool-call-id") pass through
// unchanged. Two keys that carry different values make the identity
// unusable: the call is refused, never guessed.
type Identity struct {
	ToolCallIDKeys []string // read after MetaToolCallID
	RunIDKeys      []string // read after MetaRunID
}

// Call is what a RunResolver, a Guard and an observer know of one
// tools/call. A _meta value that is not a string, or that two keys give
// differently, becomes an id no validator accepts, so that the call is
// refused rather than guessed.
type Call struct {
	Tool       string          // the tool called
	ToolCallID string          // from _meta, as given; "" when absent
	RunID      string          // from _meta, as given; "" when absent
	Meta       mcp.Meta        // the request's whole _meta, read only (for example trace context)
	Header     http.Header     // the HTTP request's header; nil over stdio
	Token      *auth.TokenInfo // the verified bearer token; nil when none
}

// read fills the identity of a call from its _meta.
func (id *Identity) read(meta mcp.Meta, c *Call) {
	c.Meta = meta
	c.ToolCallID = metaString(meta, MetaToolCallID, id.ToolCallIDKeys)
	c.RunID = metaString(meta, MetaRunID, id.RunIDKeys)
}

// unusable marks a value that is present but cannot be an identity; the
// boundary refuses it as it refuses any malformed id.
const unusable = "\x00"

// metaString returns the string under key or its aliases: "" when none is
// present, unusable when one is not a string or two differ.
func metaString(meta mcp.Meta, key string, aliases []string) string {
	found := ""
	for i := -1; i < len(aliases); i++ {
		k := key
		if i >= 0 {
			k = aliases[i]
		}
		v, ok := meta[k]
		if !ok {
			continue
		}
		s, isStr := v.(string)
		switch {
		case !isStr || s == "":
			return unusable
		case found != "" && found != s:
			return unusable
		}
		found = s
	}
	return found
}

// RunResolver returns the run a call belongs to: its id, project,
// principal, limits and TTL. Return ErrNoRun or ErrUnauthenticated (wrapped
// or not) to answer with a JSON-RPC error; anything else a resolver returns
// is an internal error. The run is the host's authority: a call whose _meta
// names another run is refused with RUN_MISMATCH.
//
// The resolver is also the host's word on who may start a run: the store
// gives a run with no state to the principal of its first call, and cannot
// tell a run's intended owner from the first principal to name it. Return
// a run id an agent chose only when the host knows the run is the
// principal's, or new for it; otherwise put it in the principal's own
// namespace (PrincipalRun), as StaticRuns does, so that no principal can
// claim, and lock its owner out of, a run meant for another.
type RunResolver interface {
	ResolveRun(ctx context.Context, call *Call) (boundary.RunContext, error)
}

// RunResolverFunc adapts a function to a RunResolver.
type RunResolverFunc func(ctx context.Context, call *Call) (boundary.RunContext, error)

// ResolveRun calls f.
func (f RunResolverFunc) ResolveRun(ctx context.Context, call *Call) (boundary.RunContext, error) {
	return f(ctx, call)
}

// DefaultPrincipalTTL is how long a StaticRuns principal is valid from the
// call it is made for.
const DefaultPrincipalTTL = time.Hour

// MaxRunName bounds a run name an agent gives (in _meta or a run header) or
// identity.default_run: PrincipalRun of it is at most canonical.MaxIDLen
// bytes.
const MaxRunName = canonical.MaxIDLen - 1 - runSpaceLen

// runSpaceLen is the hex digits of a principal's tag that PrincipalRun
// appends: 64 bits, so that no principal finds another's namespace by
// trying names.
const runSpaceLen = 16

// PrincipalRun returns the store's id of the run that an agent of
// principal names name: name, ".", and the first 16 hex digits of
// canonical.PrincipalTag(principal). Each principal has its own
// namespace of runs, so that two principals naming "run-42" get two runs,
// and no principal can begin, report on or close a run of another by
// naming it before its owner does. A name that is not a run id, or longer
// than MaxRunName, gives an id canonical.ValidateRunID refuses.
func PrincipalRun(principal, name string) string {
	return name + "." + canonical.PrincipalTag(principal)[:runSpaceLen]
}

// sameRun reports whether a call whose _meta names name belongs to the run
// resolved for it: the name is the run's id, as a run token gives it, or
// names it in its principal's namespace.
func sameRun(name string, run boundary.RunContext) bool {
	return name == run.ID || PrincipalRun(run.Principal.Subject, name) == run.ID
}

// StaticRuns resolves runs from configuration: one project; the principal
// of the verified bearer token (its UserID), else Subject; the run named by
// RunHeader when the HTTP request carries it, else by _meta, else
// DefaultRun, in the principal's own namespace (PrincipalRun): a name is
// never a claim on another principal's run, and DefaultRun is one run per
// principal.
//
// With RunTokens, a call that carries a run token (header RunTokenHeader
// or _meta MetaRunToken) gets the token's run, as it is, and principal
// instead, once the token is verified (VerifyRunToken): the host that
// signed it vouches that the run is that principal's. A bad token, one for
// another principal than the verified bearer token's, or a run header
// naming another run is ErrUnauthenticated, and so is a call without a
// token when RequireRunToken is set. Without RunTokens tokens are not read.
type StaticRuns struct {
	Project    string
	Subject    string // principal of calls without a verified token; "" refuses them (ErrUnauthenticated)
	RunHeader  string // HTTP header naming the run; "" reads none
	DefaultRun string // run name of calls that name none, one run per principal; "" refuses them (ErrNoRun)
	Limits     canonical.Limits
	TTL        time.Duration            // record TTL
	ToolTTL    map[string]time.Duration // per tool, overriding TTL
	// RunTokens verify run tokens: this gateway's audience and keys; nil
	// reads none.
	RunTokens       *RunTokenKeys
	RequireRunToken bool // refuse calls without a valid run token
}

var _ RunResolver = (*StaticRuns)(nil)

// ResolveRun implements RunResolver.
func (s *StaticRuns) ResolveRun(_ context.Context, call *Call) (boundary.RunContext, error) {
	now := time.Now()
	p := registry.Principal{Subject: s.Subject, ExpiresAt: now.Add(DefaultPrincipalTTL)}
	if tok := call.Token; tok != nil && tok.UserID != "" {
		p.Subject = tok.UserID
		if !tok.Expiration.IsZero() {
			p.ExpiresAt = tok.Expiration
		}
	}
	id, named := "", ""
	if s.RunHeader != "" && call.Header != nil {
		named = call.Header.Get(s.RunHeader)
	}
	if s.RunTokens != nil {
		rt, ok, err := s.runToken(call, now)
		switch {
		case err != nil:
			return boundary.RunContext{}, err
		case ok && call.Token != nil && call.Token.UserID != "" && call.Token.UserID != rt.Principal:
			return boundary.RunContext{}, fmt.Errorf("%w: %w: it is for another principal", ErrUnauthenticated, ErrRunToken)
		case ok && named != "" && named != rt.Run:
			return boundary.RunContext{}, fmt.Errorf("%w: %w: the run header names another run", ErrUnauthenticated, ErrRunToken)
		case ok:
			id, p.Subject = rt.Run, rt.Principal
			if p.ExpiresAt.After(rt.Expires) {
				p.ExpiresAt = rt.Expires
			}
		case s.RequireRunToken:
			return boundary.RunContext{}, fmt.Errorf("%w: a run token is required", ErrUnauthenticated)
		}
	}
	if p.Subject == "" {
		return boundary.RunContext{}, ErrUnauthenticated
	}
	if id == "" {
		// A name, not a run: the principal's own run of that name.
		named = cmp.Or(named, call.RunID, s.DefaultRun)
		if named == "" {
			return boundary.RunContext{}, ErrNoRun
		}
		id = PrincipalRun(p.Subject, named)
	}
	ttl := s.TTL
	if t, ok := s.ToolTTL[call.Tool]; ok {
		ttl = t
	}
	return boundary.RunContext{
		ID: id, Project: s.Project, Principal: p, Active: true, Limits: s.Limits, TTL: ttl,
	}, nil
}

// runToken verifies the call's run token, if it carries one (ok false when
// it carries none). A header and a _meta token that differ are refused.
func (s *StaticRuns) runToken(call *Call, now time.Time) (RunToken, bool, error) {
	tok := metaString(call.Meta, MetaRunToken, nil)
	if call.Header != nil {
		if h := call.Header.Get(RunTokenHeader); h != "" {
			if tok != "" && tok != h {
				tok = unusable
			} else {
				tok = h
			}
		}
	}
	if tok == "" {
		return RunToken{}, false, nil
	}
	rt, err := VerifyRunToken(s.RunTokens, tok, now)
	if err != nil {
		return RunToken{}, false, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	return rt, true, nil
}
