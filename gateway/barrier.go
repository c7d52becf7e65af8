package gateway

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/canonical"
)

// Barriers. The SDK handles an upstream's notifications one after the
// other, in the order it reads them, and hands a response to its caller as
// soon as it reads it. A barrier is a progress notification the gateway
// itself puts into what the SDK reads, just before a call's response: when
// the gateway's handler sees it, every notification read before that
// response has been handled (relayed), and a call that drains waits for
// nothing else — no idle timer, no fixed wait.
//
//   - Over streamable HTTP the barrier goes on the call's own response
//     stream, before its response event, naming the call by its mark (a
//     secret of the call the upstream never sees); a response that is no
//     event stream carries no notification, and releases the call at once.
//   - Over stdio the connection numbers the responses it reads and puts
//     barrier n before response n; a call waits until the barrier of the
//     last response read when its own came back has been handled.
//
// A barrier's token begins with barrierPrefix and carries a nonce or a
// mark the upstream does not know: it cannot forge one that ends a wait.
const barrierPrefix = "toolcanon-barrier-"

// barrierEvent is the SSE event of the barrier of the call marked mark.
func barrierEvent(mark string) []byte {
	b := []byte(`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`)
	tok, _ := json.Marshal(barrierPrefix + "m:" + mark)
	b = append(b, tok...)
	return append(b, `,"progress":0}}`+"\n\n"...)
}

// isResponseEvent reports whether the raw lines of an SSE event hold a
// JSON-RPC response: a message with an id and a result or an error, and no
// method. Only a call's own stream is asked, where the one response is the
// call's.
func isResponseEvent(raw []byte) bool {
	s := string(raw)
	return strings.Contains(s, `"id"`) && !strings.Contains(s, `"method"`) &&
		(strings.Contains(s, `"result"`) || strings.Contains(s, `"error"`))
}

// barrierConn is a stdio upstream's connection, with a barrier before
// every response it reads.
type barrierConn struct {
	mcp.Connection
	st   *barrierState
	held jsonrpc.Message // a response read, returned after its barrier
}

// barrierState counts one connection's barriers: those read (one per
// response) and those handled.
type barrierState struct {
	nonce   string
	read    atomic.Int64
	mu      sync.Mutex
	handled int64
	changed chan struct{} // closed, and replaced, whenever handled grows
}

func newBarrierState() *barrierState {
	return &barrierState{nonce: canonical.NewOwner(), changed: make(chan struct{})}
}

// Read returns the next message; a response comes after its barrier. The
// SDK reads a connection from one goroutine.
func (c *barrierConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if m := c.held; m != nil {
		c.held = nil
		return m, nil
	}
	m, err := c.Connection.Read(ctx)
	if resp, ok := m.(*jsonrpc.Response); ok && err == nil {
		n := c.st.read.Add(1)
		c.held = resp
		tok, _ := json.Marshal(barrierPrefix + "s:" + c.st.nonce + ":" + strconv.FormatInt(n, 10))
		return &jsonrpc.Request{Method: "notifications/progress",
			Params: json.RawMessage(`{"progressToken":` + string(tok) + `,"progress":0}`)}, nil
	}
	return m, err
}

// reached notes barrier n handled.
func (st *barrierState) reached(n int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if n > st.handled {
		st.handled = n
		close(st.changed)
		st.changed = make(chan struct{})
	}
}

// wait waits until the barrier of every response read so far is handled,
// at most max.
func (st *barrierState) wait(max time.Duration) {
	want := st.read.Load()
	t := time.NewTimer(max)
	defer t.Stop()
	for {
		st.mu.Lock()
		done, changed := st.handled >= want, st.changed
		st.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-t.C:
			return
		}
	}
}

// barrierTransport gives its connection barriers, and the connection's
// state to whoever holds the transport.
type barrierTransport struct {
	mcp.Transport
	st *barrierState
}

// Connect implements mcp.Transport.
func (t *barrierTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &barrierConn{Connection: c, st: t.st}, nil
}

// barriers are an upstream's stdio connections' barrier states, by
// session.
type barriers struct {
	mu sync.Mutex
	of map[*mcp.ClientSession]*barrierState
}

func (b *barriers) put(s *mcp.ClientSession, st *barrierState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.of == nil {
		b.of = map[*mcp.ClientSession]*barrierState{}
	}
	b.of[s] = st
}

func (b *barriers) get(s *mcp.ClientSession) *barrierState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.of[s]
}

func (b *barriers) forget(s *mcp.ClientSession) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.of, s)
}

// barrier handles a barrier progress token, and reports whether tok is
// one (a barrier is never relayed).
func (u *Upstream) barrier(s *mcp.ClientSession, tok any) bool {
	str, ok := tok.(string)
	if !ok {
		return false
	}
	rest, ok := strings.CutPrefix(str, barrierPrefix)
	if !ok {
		return false
	}
	if mark, ok := strings.CutPrefix(rest, "m:"); ok {
		if r := u.inflight.byMark(mark); r != nil {
			r.reached()
		}
		return true
	}
	if rest, ok := strings.CutPrefix(rest, "s:"); ok {
		if st := u.barriers.get(s); st != nil {
			nonce, n, _ := strings.Cut(rest, ":")
			if k, err := strconv.ParseInt(n, 10, 64); err == nil && nonce == st.nonce {
				st.reached(k)
			}
		}
	}
	return true
}

// reachedMark releases the call marked mark: its response carried no
// event stream, or the stream ended before a response.
func (u *Upstream) reachedMark(mark string) {
	if r := u.inflight.byMark(mark); r != nil {
		r.reached()
	}
}

// drain waits until the notifications s read before r's response have
// been relayed (see barriers), at most drainMax.
func (u *Upstream) drain(r *relay, s *mcp.ClientSession) {
	if u.opts.URL != "" {
		r.drain()
		return
	}
	if st := u.barriers.get(s); st != nil {
		st.wait(drainMax)
	}
}
