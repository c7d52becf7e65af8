package main

import (
	"net"
	"testing"
	"time"
)

// Past its cap, the listener accepts a connection only once another
// closes.
func TestLimitListenerWaitsForAClose(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newLimitListener(inner, 2)
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	for range 4 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
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
	refuse := func(what string) {
		t.Helper()
		select {
		case <-accepted:
			t.Fatalf("%s was accepted", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
	first, second := accept("the first connection"), accept("the second connection")
	refuse("a third connection past the cap of 2")
	_ = first.Close()
	_ = first.Close() // a second close frees nothing more
	defer accept("the third connection, after one closed").Close()
	refuse("a fourth connection, as if the second close had freed a slot again")
	_ = second.Close()
	defer accept("the fourth connection, after another closed").Close()

	// Full again: an Accept waiting for a slot ends when the listener
	// closes (a server's Shutdown does not wait for a connection to end).
	waiting := make(chan error, 1)
	go func() {
		_, err := ln.Accept()
		waiting <- err
	}()
	time.Sleep(50 * time.Millisecond)
	_ = ln.Close()
	select {
	case err := <-waiting:
		if err == nil {
			t.Fatal("Accept on a closed, full listener returned a connection")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an Accept waiting for a slot did not end when the listener closed")
	}
}
