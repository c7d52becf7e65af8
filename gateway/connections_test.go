package gateway_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests run the built gateway with a bearer token and talk to it
// over raw sockets, as a hostile client would: connections that never
// authenticate must not keep a client with the token from being answered.

// connGateway starts `toolcanon gateway --listen 127.0.0.1:0` with
// withToken's token and the extra flags, and returns its host:port.
func connGateway(t *testing.T, extra ...string) string {
	t.Helper()
	_, up := binaries(t)
	cfg := baseConfig(t, map[string]any{"command": []string{up}}, "echo")
	withToken(cfg)
	g := startHTTPGateway(t, cfg.write(t, t.TempDir()), extra...)
	return strings.TrimSuffix(strings.TrimPrefix(g.url, "http://"), "/mcp")
}

// dialFrom connects to addr from the loopback address from (127.0.0.1,
// 127.0.0.2, …: every address of 127/8 is this machine's).
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// listRequest is a stateless tools/list POST, with the token when it is not "".
func listRequest(token string) string {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", auth, len(body), body)
}

// exchange sends req on c and reads the answer, within limit.
func exchange(c net.Conn, br *bufio.Reader, req string, limit time.Duration) (*http.Response, []byte, error) {
	_ = c.SetDeadline(time.Now().Add(limit))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, req); err != nil {
		return nil, nil, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, nil, err
	}
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// closedWithin reports whether the server closes c within limit (whatever
// it still sends first is read and dropped).
func closedWithin(c net.Conn, br *bufio.Reader, limit time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// served asserts that a client with the token, connecting from from, gets
// tools/list within limit.
func served(t *testing.T, from, addr string, limit time.Duration) {
	t.Helper()
	c := dialFrom(t, from, addr)
	start := time.Now()
	resp, body, err := exchange(c, bufio.NewReader(c), listRequest("secret-token"), limit)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"echo"`) {
		t.Fatalf("a client with the token, from %s, after %v: %v %v %s", from, time.Since(start).Round(time.Millisecond), resp, err, body)
	}
}

// An answer to a request without a valid token closes its connection: four
// clients that got a 401 and stay connected do not hold the four places of
// --max-connections 4, and a client with the token is answered at once.
// Before, each 401 connection stayed open for the 2-minute idle timeout and
// the client with the token waited.
func TestUnauthenticatedConnectionsAreClosed(t *testing.T) {
	addr := connGateway(t, "--max-connections", "4")
	for i := range 4 {
		c := dialFrom(t, "127.0.0.1", addr)
		br := bufio.NewReader(c)
		token := ""
		if i%2 == 1 {
			token = "wrong-token"
		}
		resp, _, err := exchange(c, br, listRequest(token), 5*time.Second)
		if err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a request without a valid token: %v %v", resp, err)
		}
		if !resp.Close { // Connection: close
			t.Errorf("a 401 does not say Connection: close")
		}
		if !closedWithin(c, br, 2*time.Second) {
			t.Errorf("the connection of a 401 is still open after 2s")
		}
		// c stays open on this side.
	}
	served(t, "127.0.0.1", addr, 2*time.Second)

	// A path nobody serves is no more a reason to keep a connection.
	c := dialFrom(t, "127.0.0.1", addr)
	br := bufio.NewReader(c)
	resp, _, err := exchange(c, br, "GET /elsewhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 5*time.Second)
	if err != nil || resp.StatusCode != http.StatusNotFound || !resp.Close || !closedWithin(c, br, 2*time.Second) {
		t.Errorf("GET /elsewhere: %v %v, want a 404 that closes its connection", resp, err)
	}
}

// At --max-connections a new connection is answered 503 at once, with a
// JSON-RPC error and Retry-After, and closed; connections that never send
// a request are closed after --auth-timeout, and the place is free again.
// A connection that authenticated keeps the server's idle timeout.
func TestConnectionCapAnswersAtOnce(t *testing.T) {
	const authTimeout = 2 * time.Second
	addr := connGateway(t, "--max-connections", "4", "--auth-timeout", authTimeout.String())

	// One authenticated connection and three silent ones fill the cap.
	authed := dialFrom(t, "127.0.0.1", addr)
	authedBr := bufio.NewReader(authed)
	if resp, _, err := exchange(authed, authedBr, listRequest("secret-token"), 5*time.Second); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a client with the token: %v %v", resp, err)
	}
	opened := time.Now()
	var silent []net.Conn
	for range 3 {
		silent = append(silent, dialFrom(t, "127.0.0.1", addr))
	}
	time.Sleep(100 * time.Millisecond) // the server has accepted them

	c := dialFrom(t, "127.0.0.2", addr)
	start := time.Now()
	resp, body, err := exchange(c, bufio.NewReader(c), listRequest("secret-token"), 5*time.Second)
	if err != nil {
		t.Fatalf("a connection past the cap: %v", err)
	}
	var msg struct {
		ID    any `json:"id"`
		Error struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	if took := time.Since(start); resp.StatusCode != http.StatusServiceUnavailable || took > time.Second ||
		resp.Header.Get("Retry-After") == "" || !resp.Close ||
		resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &msg) != nil || msg.Error.Code != -32603 || msg.ID != nil {
		t.Fatalf("a connection past the cap got, after %v: %d %v %s; want at once a 503 with Retry-After and a JSON-RPC error", took, resp.StatusCode, resp.Header, body)
	}

	for _, s := range silent {
		if !closedWithin(s, bufio.NewReader(s), time.Until(opened.Add(authTimeout+time.Second))) {
			t.Fatalf("a connection that sent nothing is open %v after it opened (--auth-timeout %v)", time.Since(opened), authTimeout)
		}
	}
	served(t, "127.0.0.2", addr, 2*time.Second)

	// The authenticated connection, idle past --auth-timeout, still serves.
	time.Sleep(time.Until(opened.Add(authTimeout + 500*time.Millisecond)))
	if resp, _, err := exchange(authed, authedBr, listRequest("secret-token"), 5*time.Second); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("an authenticated connection idle past --auth-timeout: %v %v", resp, err)
	}
}

// One source address has at most --max-connections-per-source, loopback
// included; another address is served meanwhile.
func TestConnectionsPerSourceAreCapped(t *testing.T) {
	addr := connGateway(t, "--max-connections", "16", "--max-connections-per-source", "2")
	for range 2 {
		dialFrom(t, "127.0.0.1", addr)
	}
	time.Sleep(100 * time.Millisecond)
	c := dialFrom(t, "127.0.0.1", addr)
	if resp, _, err := exchange(c, bufio.NewReader(c), listRequest("secret-token"), 5*time.Second); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third connection from 127.0.0.1: %v %v, want 503", resp, err)
	}
	served(t, "127.0.0.2", addr, 2*time.Second)
}

// A flood of connections without a token from one address — requests
// refused 401, headers trickled, connections opened and left silent —
// does not keep a client with the token, on another address, from being
// answered within a second, every time.
func TestUnauthenticatedFloodLeavesOthersServed(t *testing.T) {
	addr := connGateway(t, "--max-connections", "64", "--max-connections-per-source", "32", "--auth-timeout", "2s")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}, Timeout: time.Second}
			for n := 0; n < 200; n++ {
				select {
				case <-stop:
					return
				default:
				}
				c, err := d.Dial("tcp", addr)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				switch w % 3 {
				case 0: // a 401, its answer never read
					_, _ = io.WriteString(c, listRequest(""))
				case 1: // headers one byte at a time
					trickleHeaders(c, stop)
				case 2: // nothing at all
				}
				select {
				case <-stop:
				case <-time.After(3 * time.Second):
				}
				c.Close()
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(500 * time.Millisecond)
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); {
		served(t, "127.0.0.2", addr, time.Second)
		time.Sleep(200 * time.Millisecond)
	}
}

// trickleHeaders writes a request's first header lines one byte every
// 100ms, until a write fails or stop closes.
func trickleHeaders(c net.Conn, stop <-chan struct{}) {
	for _, b := range []byte("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n") {
		if _, err := c.Write([]byte{b}); err != nil {
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}
