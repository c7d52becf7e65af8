package gateway

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	progress bucket
	logs     bucket

	heard    atomic.Int64 // when the last upstream notification was read (Unix ns)
	mu       sync.Mutex
	finished bool
	cleanups []func()
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
func newRelay(ctx context.Context, req *mcp.CallToolRequest) *relay {
	if req.Session == nil {
		return nil
	}
	now := time.Now()
	return &relay{agent: req.Session, agentCtx: ctx, token: req.Params.GetProgressToken(),
		progress: newBucket(now), logs: newBucket(now)}
}

// sendProgress relays one upstream progress notification under the
// agent's token, its message redacted and bounded, within the rate.
func (r *relay) sendProgress(p *mcp.ProgressNotificationParams) {
	r.heard.Store(time.Now().UnixNano())
	if r.token == nil || !r.open() || !r.progress.take(time.Now()) {
		return
	}
	ctx, cancel := context.WithTimeout(r.agentCtx, relayTimeout)
	defer cancel()
	_ = r.agent.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: r.token,
		Progress: p.Progress, Total: p.Total, Message: agentText(p.Message)})
}

// Draining: the SDK reads an upstream's notifications in order but hands
// a response to its caller at once, so the last notifications of a call
// can be read after its answer. A call with a progress token waits until
// none came for drainIdle, at most drainMax.
const (
	drainIdle = 25 * time.Millisecond
	drainMax  = 250 * time.Millisecond
)

// drain waits for the upstream's notifications of the call that are still
// being read.
func (r *relay) drain() {
	start := time.Now()
	for {
		quiet := start
		if last := time.Unix(0, r.heard.Load()); last.After(quiet) {
			quiet = last
		}
		wait := drainIdle - time.Since(quiet)
		left := drainMax - time.Since(start)
		if wait <= 0 || left <= 0 {
			return
		}
		time.Sleep(min(wait, left))
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

// agentText is a third party's text as an agent may read it: redacted by
// the projections' redactor, then cut to MaxRelayedText bytes at a rune
// boundary. Only a bounded prefix is read, so that a message of megabytes
// costs what its shown part costs.
func agentText(s string) string {
	if n := 8 * MaxRelayedText; len(s) > n {
		// Cut at a space or line break, so that no secret is cut in two
		// before the redactor sees it.
		s = s[:n]
		if i := strings.LastIndexAny(s, " \t\r\n"); i >= n/2 {
			s = s[:i]
		}
	}
	return cutText(string(redact.New().Append(nil, []byte(s))), MaxRelayedText)
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
// gateway gave each one upstream.
type calls struct {
	mu sync.Mutex
	by map[string]*relay // nil relay: a call with no agent session
}

// add registers a call and returns its upstream token.
func (c *calls) add(r *relay) string {
	tok := "toolcanon-" + canonical.NewOwner()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[string]*relay{}
	}
	c.by[tok] = r
	return tok
}

func (c *calls) remove(tok string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.by, tok)
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
