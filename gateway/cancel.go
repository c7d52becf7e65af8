package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
)

// CancelRelay carries a cancellation between gateway replicas that share a
// store: stateless HTTP serves every POST on its own, so the
// notifications/cancelled for a call may reach another replica than the
// one running it. The running replica registers each call under a key
// (derived from the caller — the verified bearer token's subject, else the
// principal — and the JSON-RPC id, the only names a cancel carries) with a
// nonce of its own, and polls; the receiving replica marks the
// registration cancelled. redisstore.Store implements it.
type CancelRelay interface {
	// RegisterCall registers a call in flight under key, for at most ttl.
	// A second call under a key already registered makes the key
	// ambiguous until its TTL passes: a cancel then stops neither.
	RegisterCall(ctx context.Context, key, nonce string, ttl time.Duration) error
	// CancelCall marks the call registered under key cancelled, and
	// reports whether one was registered (an ambiguous key is reported
	// found, and nothing is marked).
	CancelCall(ctx context.Context, key string) (bool, error)
	// CallCancelled reports whether the call registered under key with
	// nonce was marked cancelled.
	CallCancelled(ctx context.Context, key, nonce string) (bool, error)
	// ForgetCall removes the registration of key when it is still nonce's.
	ForgetCall(ctx context.Context, key, nonce string) error
}

// Cancellation bounds: how often a running call looks for a cancel from
// another replica, and how long each store operation may take.
const (
	cancelPoll    = 200 * time.Millisecond
	cancelTimeout = time.Second
)

// errCancelledByAgent is the cause of a call the agent cancelled.
var errCancelledByAgent = errors.New("gateway: the agent cancelled the call")

// rpcIDKey carries, in a stateless HTTP request's context, the JSON-RPC id
// of the tools/call it holds.
type rpcIDKey struct{}

// rpcIDString is a JSON-RPC id as a key: "n:" and the integer, or "s:" and
// the string; "" for anything else (an id a cancel could never name).
func rpcIDString(raw json.RawMessage) string {
	if len(raw) == 0 || len(raw) > 256 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ""
		}
		return "s:" + s
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return ""
	}
	return "n:" + strconv.FormatInt(n, 10)
}

// cancelKey is the key of a caller's call with a JSON-RPC id, the same on
// every replica; it names neither. caller is a callerOf.
func cancelKey(caller, rpcID string) string {
	sum := sha256.Sum256([]byte("toolcanon cancel v2\x00" + caller + "\x00" + rpcID))
	return hex.EncodeToString(sum[:16])
}

// callerOf is who sends a stateless request, as a cancel must match its
// call: the verified bearer token's subject when the connection has one;
// else the principal the RunResolver finds for it (from a run token in its
// header or _meta, or the configured principal).
func callerOf(tok *auth.TokenInfo, principal string) string {
	if tok != nil && tok.UserID != "" {
		return "bearer\x00" + tok.UserID
	}
	return "principal\x00" + principal
}

// cancels tracks the calls in flight that a stateless cancel may name.
type cancels struct {
	relay CancelRelay // nil: this replica's calls only
	log   *slog.Logger
	mu    sync.Mutex
	live  map[string][]*liveCall // by cancelKey
}

// liveCall is one tracked call.
type liveCall struct{ cancel context.CancelCauseFunc }

// track makes ctx cancellable by a notifications/cancelled of caller naming
// rpcID, from this replica or, through the relay, another; done ends it.
func (cs *cancels) track(ctx context.Context, caller, rpcID string, ttl time.Duration) (context.Context, func()) {
	key := cancelKey(caller, rpcID)
	ctx, cancel := context.WithCancelCause(ctx)
	me := &liveCall{cancel: cancel}
	cs.mu.Lock()
	if cs.live == nil {
		cs.live = map[string][]*liveCall{}
	}
	// Two calls of one principal under one id (two clients numbering
	// their requests alike): a cancel could name either, so it stops none.
	cs.live[key] = append(cs.live[key], me)
	cs.mu.Unlock()
	stop := func() {}
	if cs.relay != nil {
		nonce := canonical.NewOwner()
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
		err := cs.relay.RegisterCall(rctx, key, nonce, ttl)
		rcancel()
		if err != nil {
			cs.log.Warn("a cancel from another replica cannot reach this call", slog.String("cause", causeText(err)))
		} else {
			stop = cs.poll(ctx, cancel, key, nonce)
		}
	}
	return ctx, func() {
		stop()
		cs.mu.Lock()
		rest := slices.DeleteFunc(cs.live[key], func(c *liveCall) bool { return c == me })
		if len(rest) == 0 {
			delete(cs.live, key)
		} else {
			cs.live[key] = rest
		}
		cs.mu.Unlock()
		cancel(nil)
	}
}

// poll looks for a cancel from another replica until the call ends; the
// returned func stops it and forgets the registration.
func (cs *cancels) poll(ctx context.Context, cancel context.CancelCauseFunc, key, nonce string) func() {
	quit := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(cancelPoll)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
			yes, err := cs.relay.CallCancelled(pctx, key, nonce)
			pcancel()
			if err == nil && yes {
				cancel(errCancelledByAgent)
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-ended
		fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
		defer fcancel()
		if err := cs.relay.ForgetCall(fctx, key, nonce); err != nil {
			cs.log.Warn("cannot forget a finished call's cancel registration; it expires with its TTL", slog.String("cause", causeText(err)))
		}
	}
}

// cancel cancels caller's call with JSON-RPC id rpcID: here when it runs
// here, else through the relay. It reports whether a call was found.
func (cs *cancels) cancel(ctx context.Context, caller, rpcID string) bool {
	key := cancelKey(caller, rpcID)
	cs.mu.Lock()
	here := slices.Clone(cs.live[key])
	cs.mu.Unlock()
	switch len(here) {
	case 0:
	case 1:
		here[0].cancel(errCancelledByAgent)
		return true
	default:
		cs.log.Warn("a cancel names several calls of one principal (one JSON-RPC id); none is cancelled")
		return true
	}
	if cs.relay == nil {
		return false
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer rcancel()
	found, err := cs.relay.CancelCall(rctx, key)
	if err != nil {
		cs.log.Warn("a cancel could not be passed to the replica running the call", slog.String("cause", causeText(err)))
	}
	return found
}

// track makes the call cancellable by a stateless notifications/cancelled
// when its request came over stateless HTTP (its context then carries the
// JSON-RPC id); in stdio and sessions the SDK cancels the call itself.
func (h *handler) track(ctx context.Context, c *Call, run boundary.RunContext) (context.Context, func()) {
	id, _ := ctx.Value(rpcIDKey{}).(string)
	def, bound := h.b.Definition(c.Tool)
	if id == "" || !bound {
		return ctx, func() {}
	}
	return h.cancels.track(ctx, callerOf(c.Token, run.Principal.Subject), id, def.Timeout()+time.Minute)
}

// statelessCancel is a stateless notifications/cancelled: the JSON-RPC id
// it names, and its _meta, which may carry a run token.
type statelessCancel struct {
	rpcID string
	meta  mcp.Meta
}

// cancelHTTP acts on a stateless notifications/cancelled that the SDK
// accepted: it cancels the call of the same caller (callerOf) with the
// JSON-RPC id it names. Without a bearer token, the caller is the
// principal the resolver finds for the cancel as for a call (a run token
// in its header or _meta), so a call authenticated by a run token is
// cancelled only by a cancel that carries one for the same principal.
func (h *handler) cancelHTTP(r *http.Request, sc *statelessCancel) {
	tok := auth.TokenInfoFromContext(r.Context())
	principal := ""
	if tok == nil || tok.UserID == "" {
		c := &Call{Header: r.Header, Token: tok, Meta: sc.meta, RunID: "cancel"}
		run, err := h.opts.Runs.ResolveRun(r.Context(), c)
		if err != nil || run.Principal.Subject == "" {
			h.log.Info("a cancel from an unknown caller is ignored", slog.String("cause", causeText(err)))
			return
		}
		principal = run.Principal.Subject
	}
	if !h.cancels.cancel(r.Context(), callerOf(tok, principal), sc.rpcID) {
		h.log.Info("a cancel named no call in flight")
	}
}
