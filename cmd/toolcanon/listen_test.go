package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// Past its cap, the listener answers a new connection 503 and closes it,
// and Accept goes on to the next one; a closed connection frees its place
// once, however often it is closed.
func TestGuardListenerRefusesPastItsCap(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newGuardListener(inner, 2, 0, time.Minute)
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	accept := func(what string) net.Conn {
		t.Helper()
		select {
		case c := <-accepted:
			return c
		case <-time.After(5 * time.Second):
			t.Fatalf("%s was not accepted", what)
			return nil
		}
	}
	refused := func(what string) {
		t.Helper()
		c := dial()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(c, "GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%s: %v %v, want 503 with Retry-After", what, resp, err)
		}
		select {
		case <-accepted:
			t.Fatalf("%s reached the server", what)
		default:
		}
	}
	dial()
	dial()
	first, second := accept("the first connection"), accept("the second connection")
	refused("a third connection past the cap of 2")
	refused("a fourth connection past the cap of 2")
	_ = first.Close()
	_ = first.Close() // a second close frees nothing more
	dial()
	accept("a connection after one closed")
	refused("a connection past the cap again, as if the second close had freed a place")
	_ = second.Close()
	dial()
	accept("a connection after another closed")

	_ = ln.Close()
	select {
	case _, open := <-accepted:
		if open {
			t.Fatal("the closed listener returned a connection")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept did not end when the listener closed")
	}
}

// Until it authenticates, a connection's reads wait no longer than its
// auth timeout from its accept, whatever deadline the server sets; once
// authenticated, the server's deadline holds again.
func TestGuardedConnWaitsForAuthentication(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newGuardListener(inner, 0, 0, 300*time.Millisecond)
	defer ln.Close()
	read := func(authenticate bool) time.Duration {
		t.Helper()
		client, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(time.Minute)) // as a server's header timeout
		if authenticate {
			c.(*guardedConn).authenticated()
		}
		start := time.Now()
		done := make(chan struct{})
		go func() { _, _ = c.Read(make([]byte, 1)); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Second):
			_ = client.Close() // ends the read
			<-done
		}
		return time.Since(start)
	}
	if took := read(false); took > 800*time.Millisecond {
		t.Errorf("an unauthenticated connection's read waited %v, past its 300ms auth timeout", took)
	}
	if took := read(true); took < time.Second {
		t.Errorf("an authenticated connection's read ended after %v, before the server's deadline", took)
	}
}
