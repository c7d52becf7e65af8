package gateway

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/canonical"
)

// DefaultMaxAgentConnections is how many connections of their own an
// upstream gives agent sessions at once when UpstreamOptions does not say.
const DefaultMaxAgentConnections = 16

// agentConns are an upstream's connections of one agent session each. A
// stdio connection carries no stream per call, and an HTTP upstream may
// send a message on its session's own stream rather than the call's (as
// MCP allows for a request not tied to one): such a message can be told
// only from the connection it came on. An agent session whose calls want
// such messages (it set a log level, or declared sampling or elicitation)
// gets an upstream connection of its own — a process over stdio, a session
// over HTTP (when the agent's session outlives its requests: stdio and
// --sessions) — and everything that connection sends goes to that agent. A
// stateless HTTP request is a session of its own: its messages reach it
// only on its call's stream (marks). The shared connection's unmarked
// messages are dropped, its requests refused.
type agentConns struct {
	mu  sync.Mutex
	max int
	by  map[*mcp.ServerSession]*agentConn
	of  map[*mcp.ClientSession]*agentConn
	// full is set when a session found every connection taken, so that
	// the log says so once until one frees.
	full bool
}

// agentConn is the connection of one agent session.
type agentConn struct {
	agent *mcp.ServerSession
	ready chan struct{} // closed once sess or err is set
	sess  *mcp.ClientSession
	err   error

	mu    sync.Mutex
	calls []*relay // the calls in flight on it, oldest first
}

// enter counts r among the calls in flight on c; leave ends it.
func (c *agentConn) enter(r *relay) {
	c.mu.Lock()
	c.calls = append(c.calls, r)
	c.mu.Unlock()
}

func (c *agentConn) leave(r *relay) {
	c.mu.Lock()
	c.calls = slices.DeleteFunc(c.calls, func(x *relay) bool { return x == r })
	c.mu.Unlock()
}

// current returns the latest call in flight on c still open to messages,
// or nil: every call on c is its agent's, so any of them may carry them.
func (c *agentConn) current() *relay {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.calls) - 1; i >= 0; i-- {
		if c.calls[i].open() {
			return c.calls[i]
		}
	}
	return nil
}

// agentSession returns the upstream session of r's agent session,
// connecting one first; nil, with no error, when every connection of the
// upstream's cap is taken (the call then runs on the shared one).
func (u *Upstream) agentSession(ctx context.Context, r *relay) (*mcp.ClientSession, *agentConn, error) {
	u.mu.Lock()
	closed := u.closed
	u.mu.Unlock()
	if closed {
		return nil, nil, canonical.Errorf(canonical.CodeUpstreamUnavailable, "gateway: upstream %q is closed", u.opts.Name)
	}
	a := &u.agents
	a.mu.Lock()
	if a.by == nil {
		a.by, a.of = map[*mcp.ServerSession]*agentConn{}, map[*mcp.ClientSession]*agentConn{}
	}
	c := a.by[r.agent]
	if c == nil {
		if len(a.by) >= a.max {
			first := !a.full
			a.full = true
			a.mu.Unlock()
			if first {
				u.log.Warn("every connection for an agent's own messages is taken; calls run on the shared one, their logs dropped and requests refused",
					slog.Int("max", a.max))
			}
			return nil, nil, nil
		}
		c = &agentConn{agent: r.agent, ready: make(chan struct{})}
		a.by[r.agent] = c
		a.mu.Unlock()
		version := upstreamProtocol
		if r.inputs != nil {
			version = modernProtocol
		}
		c.sess, c.err = u.dial(ctx, version)
		a.mu.Lock()
		if c.err != nil {
			delete(a.by, r.agent) // the next call tries again
		} else {
			a.of[c.sess] = c
		}
		a.mu.Unlock()
		close(c.ready)
		if c.err == nil {
			go u.endWith(c)
		}
	} else {
		a.mu.Unlock()
	}
	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	if c.err != nil {
		return nil, nil, c.err
	}
	return c.sess, c, nil
}

// endWith closes c's upstream session when its agent session ends, and
// forgets c when either ends.
func (u *Upstream) endWith(c *agentConn) {
	ended := make(chan struct{})
	go func() {
		_ = c.sess.Wait()
		close(ended)
	}()
	agentGone := make(chan struct{})
	go func() {
		_ = c.agent.Wait()
		close(agentGone)
	}()
	select {
	case <-agentGone:
	case <-ended:
	}
	u.forget(c)
	<-ended
}

// forget drops c from the connections and closes its upstream session.
func (u *Upstream) forget(c *agentConn) {
	a := &u.agents
	a.mu.Lock()
	if a.by[c.agent] == c {
		delete(a.by, c.agent)
		a.full = false
	}
	delete(a.of, c.sess)
	a.mu.Unlock()
	_ = c.sess.Close()
	u.barriers.forget(c.sess)
}

// relayFor returns the call an upstream's log message or request belongs
// to, or nil: over HTTP the call whose stream it came on (its mark), else
// the latest call of the agent whose own connection it came on.
func (u *Upstream) relayFor(s *mcp.ClientSession, meta mcp.Meta) *relay {
	if u.opts.URL != "" {
		if r := u.inflight.byMark(markOf(meta)); r != nil {
			return r
		}
	}
	u.agents.mu.Lock()
	c := u.agents.of[s]
	u.agents.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.current()
}

// closeAgents closes every agent connection.
func (u *Upstream) closeAgents() {
	u.agents.mu.Lock()
	all := make([]*agentConn, 0, len(u.agents.of))
	for _, c := range u.agents.of {
		all = append(all, c)
	}
	u.agents.mu.Unlock()
	for _, c := range all {
		u.forget(c)
	}
}
