package main

import (
	"net"
	"sync"
)

// defaultMaxConnections bounds the gateway's HTTP connections open at once
// (--max-connections): well under a usual file limit, so that clients
// holding connections leave descriptors for the store's connections and
// the upstreams' processes.
const defaultMaxConnections = 4096

// limitListener accepts at most cap(slots) connections open at once: past
// it, Accept waits until one closes (the kernel's backlog holds the rest).
type limitListener struct {
	net.Listener
	slots     chan struct{}
	closed    chan struct{} // closed by Close: a waiting Accept returns
	closeOnce sync.Once
}

func newLimitListener(ln net.Listener, n int) net.Listener {
	if n <= 0 {
		return ln
	}
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), closed: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

// Close closes the listener, and ends an Accept waiting for a slot.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// limitConn frees its slot when first closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
