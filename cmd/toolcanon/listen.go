package main

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolcanon/toolcanon/gateway"
)

// Defaults of the HTTP listener's bounds.
const (
	// defaultMaxConnections bounds the gateway's HTTP connections open at
	// once (--max-connections): well under a usual file limit, so that
	// clients holding connections leave descriptors for the store's
	// connections and the upstreams' processes.
	defaultMaxConnections = 4096
	// defaultMaxConnectionsPerSource bounds those of one source address
	// (--max-connections-per-source), loopback included: a sixteenth of
	// defaultMaxConnections, so that no one address holds them all.
	defaultMaxConnectionsPerSource = 256
	// defaultAuthTimeout is the time a new connection has to send a request
	// that passes authentication (--auth-timeout).
	defaultAuthTimeout = 5 * time.Second
	// maxRefusing bounds the refused connections being answered at once;
	// past it one is closed unanswered.
	maxRefusing = 64
	// refuseLinger bounds the time spent answering a refused connection.
	refuseLinger = time.Second
)

// guardListener bounds the connections of an HTTP server: at most max
// open at once, at most perSource from one source (an IPv4 address, an
// IPv6 /64), each 0 for no bound. A connection past either is accepted,
// answered 503 with a JSON-RPC error and Retry-After, and closed, without
// reaching the server, so that Accept never waits. A connection is held to
// authTimeout from its accept until one of its requests passes the
// gateway's authentication (its reads, headers and idle waits included);
// then it has the server's own timeouts.
type guardListener struct {
	net.Listener
	max, perSource int
	authTimeout    time.Duration

	mu       sync.Mutex
	open     int
	bySource map[netip.Prefix]int
	refusing chan struct{} // one element per refused connection being answered
}

func newGuardListener(ln net.Listener, max, perSource int, authTimeout time.Duration) *guardListener {
	return &guardListener{Listener: ln, max: max, perSource: perSource, authTimeout: authTimeout,
		bySource: map[netip.Prefix]int{}, refusing: make(chan struct{}, maxRefusing)}
}

// Accept returns the next connection within the bounds, answering the
// others on the way.
func (l *guardListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := source(c.RemoteAddr())
		if !l.take(src) {
			l.refuse(c)
			continue
		}
		gc := &guardedConn{Conn: c, l: l, src: src, authBy: time.Now().Add(l.authTimeout)}
		if err := gc.SetReadDeadline(time.Time{}); err != nil {
			gc.Close()
			continue
		}
		return gc, nil
	}
}

// ConnContext is the server's ConnContext: the gateway's handler tells a
// connection when a request on it has authenticated.
func (l *guardListener) ConnContext(ctx context.Context, c net.Conn) context.Context {
	if gc, ok := c.(*guardedConn); ok {
		return gateway.OnAuthenticated(ctx, gc.authenticated)
	}
	return ctx
}

// take counts a connection of src, or reports false when a bound refuses
// it.
func (l *guardListener) take(src netip.Prefix) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.open >= l.max || l.perSource > 0 && l.bySource[src] >= l.perSource {
		return false
	}
	l.open++
	l.bySource[src]++
	return true
}

func (l *guardListener) release(src netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.bySource[src]--; l.bySource[src] <= 0 {
		delete(l.bySource, src)
	}
}

// refused is the answer of a connection past a bound.
var refused = func() []byte {
	body := gateway.RPCError(jsonrpc.CodeInternalError, "toolcanon: too many connections; try again later")
	return append([]byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"+
		"Connection: close\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"), body...)
}()

// refuse answers c with refused and closes it, in the background; with
// maxRefusing answers under way already, it closes c at once.
func (l *guardListener) refuse(c net.Conn) {
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(refuseLinger))
		if _, err := c.Write(refused); err != nil {
			return
		}
		// Closing with the client's request unread would reset the
		// connection, and the client could lose the answer: read until the
		// client closes, or the deadline.
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}()
}

// source is the bound's key of a remote address: an IPv4 address, or the
// /64 of an IPv6 address (what one host is usually given).
func source(a net.Addr) netip.Prefix {
	var ip netip.Addr
	if t, ok := a.(*net.TCPAddr); ok {
		ip = t.AddrPort().Addr().Unmap().WithZone("")
	}
	bits := 64
	if ip.Is4() {
		bits = 32
	}
	p, _ := ip.Prefix(bits) // the zero Prefix for what is no IP address
	return p
}

// guardedConn is a connection of a guardListener: it frees its place when
// closed, and until authenticated no read waits past authBy.
type guardedConn struct {
	net.Conn
	l    *guardListener
	src  netip.Prefix
	once sync.Once

	mu     sync.Mutex
	authed bool
	authBy time.Time
	read   time.Time // the read deadline the server set last
}

func (c *guardedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.src) })
	return err
}

// CloseWrite lets the server half-close the connection after its last
// answer, as it does a TCP connection.
func (c *guardedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *guardedConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

func (c *guardedConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read = t
	if !c.authed && (t.IsZero() || t.After(c.authBy)) {
		t = c.authBy
	}
	return c.Conn.SetReadDeadline(t)
}

// authenticated lifts the bound of authBy: the read deadline is the
// server's from now on.
func (c *guardedConn) authenticated() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.authed {
		c.authed = true
		_ = c.Conn.SetReadDeadline(c.read)
	}
}
