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
// one running it. Nothing is written for a call that no cancel names: the
// receiving replica sends the cancel, under a key derived from the caller —
// the verified bearer token's subject, else the principal (with the run
// the resolver binds it to) — and the JSON-RPC id (the only names a
// cancel carries),
// and every replica reads the cancels sent with one blocking read of its
// own. A replica that runs a
// call under the key claims the cancel; when two calls claim it (two
// clients of one caller numbering their requests alike), it stops neither.
// redisstore.Store implements it.
type CancelRelay interface {
	// SendCancel tells every replica that the call under key is
	// cancelled; id names this cancel.
	SendCancel(ctx context.Context, key, id string) error
	// ListenCancels calls deliver with the key and id of every cancel
	// sent from its start on, until ctx ends; it returns ctx's error.
	ListenCancels(ctx context.Context, deliver func(key, id string)) error
	// ClaimCancel claims the cancel id of key for holder, a call this
	// replica runs under key, or for none when it runs several (holder
	// ""), and returns who holds it now: holder when no other call claimed
	// it, "" when another did.
	ClaimCancel(ctx context.Context, key, id, holder string) (string, error)
}

// Cancellation bounds: how long each store operation of the relay may
// take, and how long a replica that claimed a cancel waits for other
// claims before it acts on it.
const (
	cancelTimeout   = time.Second
	cancelClaimWait = 100 * time.Millisecond
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

// callerOf is who sends a stateless request c of run, as a cancel must
// match its call: the verified bearer token's subject when the connection
// has one; else the principal the RunResolver finds for it (from a run
// token in its header or _meta, or the configured principal), with run
// when the resolver binds the caller to it (boundTo). A JSON-RPC id is
// the caller's choice, no proof of whose call it names: another agent of
// the same principal, bound to another run (by a run token, a run header,
// or a host's resolver), is another caller, and its cancels name none of
// this caller's calls.
func (h *handler) callerOf(ctx context.Context, c *Call, run boundary.RunContext) string {
	if tok := c.Token; tok != nil && tok.UserID != "" {
		return "bearer\x00" + tok.UserID
	}
	if h.boundTo(ctx, c, run) {
		return "run\x00" + run.Principal.Subject + "\x00" + run.ID
	}
	return "principal\x00" + run.Principal.Subject
}

// probeRunName is the run a request is asked again for by boundTo.
const probeRunName = "toolcanon-cancel-probe"

// boundTo reports whether the resolver binds the sender of c to run,
// whatever run c names: asked again for c naming another run, it finds
// the same run of the same principal. A caller the resolver lets name its
// run (in _meta) may act on any run of its principal, and is its principal
// alone; one it binds (a run token, a run header) is its principal and run.
func (h *handler) boundTo(ctx context.Context, c *Call, run boundary.RunContext) bool {
	other := *c
	other.RunID = probeRunName
	if c.RunID == probeRunName {
		other.RunID += "-2"
	}
	again, err := h.opts.Runs.ResolveRun(ctx, &other)
	return err == nil && again.ID == run.ID && again.Principal.Subject == run.Principal.Subject
}

// carriesRunToken reports whether c carries a run token, in its header or
// its _meta.
func carriesRunToken(c *Call) bool {
	return metaString(c.Meta, MetaRunToken, nil) != "" || c.Header != nil && c.Header.Get(RunTokenHeader) != ""
}

// cancels tracks the calls in flight that a stateless cancel may name.
type cancels struct {
	relay CancelRelay // nil: this replica's calls only
	log   *slog.Logger
	mu    sync.Mutex
	live  map[string][]*liveCall // by cancelKey

	listen sync.Once
	stop   context.CancelFunc // ends the relay's listener
	ended  chan struct{}      // closed when it has ended
}

// liveCall is one tracked call, and the name it claims a relayed cancel
// with.
type liveCall struct {
	cancel context.CancelCauseFunc
	holder string
}

// track makes ctx cancellable by a notifications/cancelled of caller naming
// rpcID, from this replica or, through the relay, another; done ends it.
// It writes nothing to the store.
func (cs *cancels) track(ctx context.Context, caller, rpcID string) (context.Context, func()) {
	key := cancelKey(caller, rpcID)
	ctx, cancel := context.WithCancelCause(ctx)
	me := &liveCall{cancel: cancel, holder: canonical.NewOwner()}
	if cs.relay != nil {
		cs.listen.Do(cs.startListening)
	}
	cs.mu.Lock()
	if cs.live == nil {
		cs.live = map[string][]*liveCall{}
	}
	// Two calls of one principal under one id (two clients numbering
	// their requests alike): a cancel could name either, so it stops none.
	cs.live[key] = append(cs.live[key], me)
	cs.mu.Unlock()
	return ctx, func() {
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

// startListening starts the replica's one reader of the relay's cancels.
func (cs *cancels) startListening() {
	ctx, stop := context.WithCancel(context.Background())
	cs.stop, cs.ended = stop, make(chan struct{})
	go func() {
		defer close(cs.ended)
		_ = cs.relay.ListenCancels(ctx, func(key, id string) {
			cs.mu.Lock()
			here := slices.Clone(cs.live[key])
			cs.mu.Unlock()
			if len(here) > 0 {
				go cs.claim(ctx, key, id, here)
			}
		})
	}()
}

// close ends the relay's listener, if one runs.
func (cs *cancels) close() {
	cs.listen.Do(func() {}) // none starts after this
	if cs.stop != nil {
		cs.stop()
		<-cs.ended
	}
}

// claim acts on a relayed cancel of key, which names here: one call it
// claims, and cancels once no other call claimed it within
// cancelClaimWait; several calls (here, or here and elsewhere) it leaves
// running.
func (cs *cancels) claim(ctx context.Context, key, id string, here []*liveCall) {
	holder := ""
	if len(here) == 1 {
		holder = here[0].holder
	}
	claimed := func() bool {
		rctx, cancel := context.WithTimeout(ctx, cancelTimeout)
		defer cancel()
		got, err := cs.relay.ClaimCancel(rctx, key, id, holder)
		if err != nil {
			cs.log.Warn("a cancel from another replica could not be claimed; the call runs on", slog.String("cause", causeText(err)))
			return false
		}
		return holder != "" && got == holder
	}
	if !claimed() {
		if holder == "" {
			cs.log.Warn("a cancel names several calls of one principal (one JSON-RPC id); none is cancelled")
		}
		return
	}
	t := time.NewTimer(cancelClaimWait)
	select {
	case <-ctx.Done():
		t.Stop()
		return
	case <-t.C:
	}
	if !claimed() {
		cs.log.Warn("a cancel names calls of one principal on several replicas (one JSON-RPC id); none is cancelled")
		return
	}
	here[0].cancel(errCancelledByAgent)
}

// cancel cancels caller's call with JSON-RPC id rpcID: here when it runs
// here, else through the relay. It reports whether a call was found (or
// the cancel sent through the relay, which says nothing of calls).
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
	if err := cs.relay.SendCancel(rctx, key, canonical.NewOwner()); err != nil {
		cs.log.Warn("a cancel could not be passed to the replica running the call", slog.String("cause", causeText(err)))
		return false
	}
	return true
}

// track makes the call cancellable by a stateless notifications/cancelled
// when its request came over stateless HTTP (its context then carries the
// JSON-RPC id); in stdio and sessions the SDK cancels the call itself.
func (h *handler) track(ctx context.Context, c *Call, run boundary.RunContext) (context.Context, func()) {
	id, _ := ctx.Value(rpcIDKey{}).(string)
	if _, bound := h.b.Definition(c.Tool); id == "" || !bound {
		return ctx, func() {}
	}
	return h.cancels.track(ctx, h.callerOf(ctx, c, run), id)
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
// in its header or _meta, a run header), with the run it binds the cancel
// to, so a call bound to a run is cancelled only by a cancel bound to the
// same principal and run.
func (h *handler) cancelHTTP(r *http.Request, sc *statelessCancel) {
	tok := auth.TokenInfoFromContext(r.Context())
	c := &Call{Header: r.Header, Token: tok, Meta: sc.meta, RunID: "cancel"}
	var run boundary.RunContext
	if tok == nil || tok.UserID == "" {
		var err error
		run, err = h.opts.Runs.ResolveRun(r.Context(), c)
		if err != nil || run.Principal.Subject == "" {
			h.log.Info("a cancel from an unknown caller is ignored", slog.String("cause", causeText(err)))
			return
		}
	}
	if !h.cancels.cancel(r.Context(), h.callerOf(r.Context(), c, run), sc.rpcID) {
		h.log.Info("a cancel named no call in flight")
	}
}
