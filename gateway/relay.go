package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors/redact"
)

// Bounds of what is relayed to the agent while a call runs.
const (
	// MaxRelayedText bounds the text of one relayed progress or log
	// message, after redaction.
	MaxRelayedText = 512
	// relayBurst and relayRate bound the messages of one kind relayed for
	// one call: a burst, then relayRate per second; the rest are dropped.
	relayBurst = 10
	relayRate  = 10
	// relayTimeout bounds the sending of one relayed message.
	relayTimeout = time.Second
)

// relay is what one call passes from its upstream to its agent: progress
// for the agent's token, and the upstream's log messages. It lives in the
// call's context from the handler to the upstream.
type relay struct {
	agent    *mcp.ServerSession
	agentCtx context.Context // the agent's request: on HTTP it names the stream to write on
	token    any             // the agent's progress token; nil: none asked
	// wantsLogs: the agent set a log level (or its stateless session logs
	// at the SDK's default), so the call waits for its upstream's last log
	// messages (drain: no fixed wait, see barrier.go).
	wantsLogs bool
	// asked: the agent asked for the upstream's messages itself (it set a
	// log level, or declared sampling or elicitation), so that a stdio
	// upstream gives its calls a connection of their own (agentConns).
	asked bool
	// lasting: the agent's session outlives its request (stdio,
	// --sessions), so that an HTTP upstream may give it a session of its
	// own too (agentConns).
	lasting bool
	// inputs, when set, are the capabilities of an agent that takes an
	// upstream's requests as multi round-trip results (continue.go): its
	// calls go to an upstream session of that revision.
	inputs   *mcp.ClientCapabilities
	progress bucket
	logs     bucket
	requests bucket // sampling and elicitation
	// mask is the call's Masker (boundary.MaskerFrom), set when the call
	// reaches its upstream: relayed text gets the call's handles, as its
	// result does.
	mask atomic.Pointer[canonical.Masker]

	// barrier is closed once the SDK has handled the barrier that follows
	// the call's last notification (drain).
	barrier     chan struct{}
	barrierOnce sync.Once
	mu          sync.Mutex
	finished    bool
	cleanups    []func()
}

// later runs f when the agent's call is answered: an upstream's
// notifications may be read after its answer, and are relayed until then.
// It runs f at once when the call is answered already.
func (r *relay) later(f func()) {
	r.mu.Lock()
	if !r.finished {
		r.cleanups = append(r.cleanups, f)
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	f()
}

// finish ends the relay: nothing more reaches the agent.
func (r *relay) finish() {
	r.mu.Lock()
	r.finished = true
	fs := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

func (r *relay) open() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.finished
}

type relayKey struct{}

// withRelay puts the call's relay in ctx.
func withRelay(ctx context.Context, r *relay) context.Context {
	return context.WithValue(ctx, relayKey{}, r)
}

// relayOf returns the call's relay, or nil.
func relayOf(ctx context.Context) *relay {
	r, _ := ctx.Value(relayKey{}).(*relay)
	return r
}

// newRelay is the relay of one tools/call; nil when it has no session.
// levelSet says that the agent set a log level (logging/setLevel, or in the
// request's _meta at 2026-07-28); stateless, that the call came over
// stateless HTTP, whose session logs at the SDK's default level and can
// send the agent no request.
func newRelay(ctx context.Context, req *mcp.CallToolRequest, levelSet, stateless bool) *relay {
	if req.Session == nil {
		return nil
	}
	if _, ok := req.Params.Meta[mcp.MetaKeyLogLevel]; ok {
		levelSet = true // 2026-07-28: the level comes with the request
	}
	now := time.Now()
	return &relay{agent: req.Session, agentCtx: ctx, token: req.Params.GetProgressToken(), inputs: inputCaps(req),
		wantsLogs: levelSet || stateless, asked: levelSet || !stateless && declaresRequests(req.Session), lasting: !stateless,
		progress: newBucket(now), logs: newBucket(now), requests: newBucket(now), barrier: make(chan struct{})}
}

// declaresRequests reports whether the agent of ss declared sampling or
// elicitation at a protocol version that takes them as requests.
func declaresRequests(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.Capabilities != nil && ip.ProtocolVersion < "2026-07-28" &&
		(ip.Capabilities.Sampling != nil || ip.Capabilities.Elicitation != nil)
}

// levels are the agent sessions that set a log level (logging/setLevel).
type levels struct {
	mu sync.Mutex
	by map[*mcp.ServerSession]bool
}

// maxLevelSessions bounds what levels remembers; past it, it starts over
// (a forgotten session only loses the wait for its calls' last messages).
const maxLevelSessions = 4096

func (l *levels) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && method == "logging/setLevel" {
			l.mu.Lock()
			if l.by == nil || len(l.by) >= maxLevelSessions {
				l.by = map[*mcp.ServerSession]bool{}
			}
			l.by[ss] = true
			l.mu.Unlock()
		}
		return next(ctx, method, req)
	}
}

func (l *levels) set(ss *mcp.ServerSession) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.by[ss]
}

// sendProgress relays one upstream progress notification under the
// agent's token, its message redacted and bounded, within the rate.
func (r *relay) sendProgress(p *mcp.ProgressNotificationParams) {
	if r.token == nil || !r.open() || !r.progress.take(time.Now()) {
		return
	}
	ctx, cancel := context.WithTimeout(r.agentCtx, relayTimeout)
	defer cancel()
	_ = r.agent.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: r.token,
		Progress: p.Progress, Total: p.Total, Message: r.text(p.Message, MaxRelayedText)})
}

// Draining: the SDK reads an upstream's notifications in order and
// handles them one after the other, but hands a response to its caller as
// soon as it reads it, so the last notifications of a call may still be
// waiting to be relayed when its answer comes. A barrier follows every
// call's last notification into the SDK's queue (see barrier.go): once the
// SDK has handled it, every notification read before the answer has been
// relayed. A call waits for it only when its agent takes what came before:
// it gave a progress token, or set a log level (a stateless session logs at
// the SDK's default) and the upstream logs.
// drainMax bounds the wait should a barrier never come.
const drainMax = 250 * time.Millisecond

// reached tells the call its barrier was handled.
func (r *relay) reached() { r.barrierOnce.Do(func() { close(r.barrier) }) }

// drain waits for the call's barrier, at most drainMax.
func (r *relay) drain() {
	t := time.NewTimer(drainMax)
	defer t.Stop()
	select {
	case <-r.barrier:
	case <-t.C:
	}
}

// bucket is a token bucket: relayBurst at once, relayRate a second.
type bucket struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func newBucket(now time.Time) bucket { return bucket{tokens: relayBurst, last: now} }

func (b *bucket) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens = min(relayBurst, b.tokens+now.Sub(b.last).Seconds()*relayRate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// setMask gives the relay the call's Masker.
func (r *relay) setMask(m canonical.Masker) {
	if r != nil && m != nil {
		r.mask.Store(&m)
	}
}

// masker is the call's Masker, or canonical.Placeholders before the call
// reached its upstream (and for a nil relay).
func (r *relay) masker() canonical.Masker {
	if r != nil {
		if m := r.mask.Load(); m != nil {
			return *m
		}
	}
	return canonical.Placeholders
}

// text is a third party's text as the call's agent may read it: redacted
// by the projections' redactor, each masked value the call's handle (a
// value resolved into the call's arguments too, whatever the redactor
// makes of it), then
// cut to n bytes at a rune boundary. Only a bounded prefix is read (8n
// bytes, cut at a space or line break, so that no secret is cut in two
// before the redactor sees it), so that a message of megabytes costs what
// its shown part costs.
func (r *relay) text(s string, n int) string {
	if max := 8 * n; len(s) > max {
		s = s[:max]
		if i := strings.LastIndexAny(s, " \t\r\n"); i >= max/2 {
			s = s[:i]
		}
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	m := r.masker()
	return cutText(string(boundary.MaskResolved(m, redact.AppendMasked(nil, []byte(s), m))), n)
}

// cutText cuts s to at most n bytes at a rune boundary, ending a cut one
// with "…".
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// calls are an upstream's calls in flight, by the progress token the
// gateway gave each one upstream, and by its mark (metaCallMark), which
// never leaves the gateway.
type calls struct {
	mu    sync.Mutex
	by    map[string]*relay // nil relay: a call with no agent session
	marks map[string]*relay
}

// add registers a call and returns its upstream token and its mark.
func (c *calls) add(r *relay) (tok, mark string) {
	tok, mark = "toolcanon-"+canonical.NewOwner(), canonical.NewOwner()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by, c.marks = map[string]*relay{}, map[string]*relay{}
	}
	c.by[tok], c.marks[mark] = r, r
	return tok, mark
}

func (c *calls) remove(tok, mark string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.by, tok)
	delete(c.marks, mark)
}

// byMark returns the relay of the call with mark, or nil.
func (c *calls) byMark(mark string) *relay {
	if mark == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.marks[mark]
}

// byToken returns the relay of the call with upstream token tok, or nil.
func (c *calls) byToken(tok any) *relay {
	s, ok := tok.(string)
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.by[s]
}

// sendLog relays one upstream log message, its logger and data redacted
// and bounded, within the rate; the agent's session drops it below the
// level the agent asked for.
func (r *relay) sendLog(p *mcp.LoggingMessageParams) {
	if !r.open() || !r.logs.take(time.Now()) {
		return
	}
	data, ok := p.Data.(string)
	if !ok {
		b, err := json.Marshal(p.Data)
		if err != nil {
			return
		}
		data = string(b)
	}
	ctx, cancel := context.WithTimeout(r.agentCtx, relayTimeout)
	defer cancel()
	_ = r.agent.Log(ctx, &mcp.LoggingMessageParams{Level: p.Level, Logger: r.text(p.Logger, MaxRelayedText), Data: r.text(data, MaxRelayedText)})
}

// refusal is the JSON-RPC error an upstream's request gets when the gateway
// does not pass it to an agent.
func refusal(why string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "toolcanon: " + why}
}

// agentCan reports why the call's agent cannot be asked a request, or "".
func agentCan(r *relay, declared func(*mcp.ClientCapabilities) bool) string {
	if r == nil || !r.open() {
		return "the gateway cannot tell which call this request belongs to (it came outside a call's own stream or connection)"
	}
	ip := r.agent.InitializeParams()
	switch {
	case ip == nil || ip.Capabilities == nil || !declared(ip.Capabilities):
		return "the agent did not declare this capability"
	case ip.ProtocolVersion >= "2026-07-28":
		return "the agent's protocol version takes such requests only as multi round-trip results, which a recorded call cannot give"
	case !r.requests.take(time.Now()):
		return "too many requests for this call; try again in a moment"
	}
	return ""
}

// forwardSampling passes an upstream's sampling/createMessage to the
// call's agent, bounded and redacted (agentSampling), when it declared
// sampling; else it refuses it.
func forwardSampling(ctx context.Context, r *relay, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if why := agentCan(r, func(c *mcp.ClientCapabilities) bool { return c.Sampling != nil }); why != "" {
		return nil, refusal(why)
	}
	q, why := r.agentSampling(p)
	if why != "" {
		return nil, refusal(why)
	}
	return r.agent.CreateMessage(relayed(ctx, r), q)
}

// forwardElicitation passes an upstream's elicitation/create to the call's
// agent, bounded and redacted (agentElicit), when it declared elicitation;
// else it refuses it.
func forwardElicitation(ctx context.Context, r *relay, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if why := agentCan(r, func(c *mcp.ClientCapabilities) bool { return c.Elicitation != nil }); why != "" {
		return nil, refusal(why)
	}
	q, why := r.agentElicit(p)
	if why != "" {
		return nil, refusal(why)
	}
	return r.agent.Elicit(relayed(ctx, r), q)
}

// relayed is the context of a request passed to the agent: the agent's
// request (for its stream), ended when the upstream's request is.
func relayed(ctx context.Context, r *relay) context.Context {
	out, cancel := context.WithCancel(r.agentCtx)
	context.AfterFunc(ctx, cancel)
	return out
}
