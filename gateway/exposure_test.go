package gateway_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
)

// `gateway --listen` beyond loopback without bearer tokens refuses to
// start, naming both fixes; on loopback, with tokens, or with
// --insecure-no-auth it serves.
func TestOpenListenerIsRefused(t *testing.T) {
	bin, up := binaries(t)
	dir := t.TempDir()
	open := baseConfig(t, map[string]any{"command": []string{up}}, "echo").write(t, dir)
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0", "toolcanon-no-such-host.invalid:0"} {
		cmd := exec.Command(bin, "gateway", "--config", open, "--listen", addr)
		own(t, cmd)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("--listen %s without tokens: %v, want exit code 2\n%s", addr, err, out)
		}
		for _, fix := range []string{"bearer_tokens", "--insecure-no-auth", "refusing to serve"} {
			if !strings.Contains(string(out), fix) {
				t.Errorf("--listen %s: the refusal does not mention %s:\n%s", addr, fix, out)
			}
		}
	}
	for _, c := range []struct {
		name, addr string
		extra      []string
		tokens     bool
	}{
		{"loopback", "127.0.0.1:0", nil, false},
		{"localhost", "localhost:0", nil, false},
		{"insecure", "0.0.0.0:0", []string{"--insecure-no-auth"}, false},
		{"tokens", "0.0.0.0:0", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := baseConfig(t, map[string]any{"command": []string{up}}, "echo")
			if c.tokens {
				sum := sha256.Sum256([]byte("s3cret-token"))
				cfg["http"] = map[string]any{"bearer_tokens": []any{map[string]any{"sha256": hex.EncodeToString(sum[:]), "subject": "alice"}}}
			}
			d := t.TempDir()
			cmd := exec.Command(bin, append([]string{"gateway", "--config", cfg.write(t, d), "--listen", c.addr}, c.extra...)...)
			own(t, cmd)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			sc := bufio.NewScanner(stderr)
			var seen []string
			for sc.Scan() {
				seen = append(seen, sc.Text())
				if strings.Contains(sc.Text(), "listening on") {
					go func() { _, _ = io.Copy(io.Discard, stderr) }()
					return
				}
			}
			t.Fatalf("--listen %s did not serve:\n%s", c.addr, strings.Join(seen, "\n"))
		})
	}
}

// openTestGateway opens a gateway in process over the test upstream.
func openTestGateway(t testing.TB, mutate func(configDoc)) *gateway.Gateway {
	t.Helper()
	_, up := binaries(t)
	cfg := baseConfig(t, map[string]any{"command": []string{up}}, "echo")
	if mutate != nil {
		mutate(cfg)
	}
	c, err := gateway.LoadConfig(cfg.write(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.Open(context.Background(), c, memstore.New(), gateway.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// A body trickled one byte at a time is cut off once the body timeout
// passes, however long the sender would go on.
func TestSlowBodyIsCutOff(t *testing.T) {
	g := openTestGateway(t, nil)
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{BodyTimeout: 300 * time.Millisecond}))
	defer srv.Close()
	const bodyLen = 400 // at 50ms a byte, 20s if nothing cuts it
	got, elapsed := trickle(t, srv, fmt.Sprintf("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", bodyLen),
		" ", bodyLen)
	if elapsed > 3*time.Second {
		t.Fatalf("cut off after %v", elapsed)
	}
	if got != "" && !strings.Contains(got, " 408 ") {
		t.Fatalf("answered %q, want 408 or a closed connection", got)
	}
}

// trickle sends head to srv, then more, one at a time every 50ms, at most
// n times, and returns what the server answered (until it closed the
// connection; "" when a write failed first) and when. It fails the test
// when all n are sent without an answer.
func trickle(t *testing.T, srv *httptest.Server, head, more string, n int) (string, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	answered := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(conn)
		answered <- string(b)
	}()
	start := time.Now()
	for i := 0; i < n; i++ {
		select {
		case got := <-answered:
			t.Logf("answered after %v, %d sent: %q", time.Since(start), i, strings.SplitN(got, "\r\n", 2)[0])
			return got, time.Since(start)
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := io.WriteString(conn, more); err != nil {
			t.Logf("writes fail after %v: %v", time.Since(start), err)
			return "", time.Since(start)
		}
	}
	t.Fatalf("no answer in %v to a request whose body trickles", time.Since(start))
	return "", 0
}

// postRPC posts body to url as an MCP client does, with token as its
// bearer token unless it is empty, and returns the answer and its body.
func postRPC(t *testing.T, url, token, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// A body over the cap is refused with 413 and a JSON-RPC error.
func TestLargeBodyIsRefused(t *testing.T) {
	g := openTestGateway(t, nil)
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{MaxBodyBytes: 1 << 10}))
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2<<10) + `"}}`
	resp, b := postRPC(t, srv.URL, "", body)
	var msg struct {
		ID    any `json:"id"`
		Error struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || json.Unmarshal(b, &msg) != nil || msg.Error.Code != -32600 || msg.ID != nil {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

// With sessions, a new session over the cap is refused; once one closes,
// another may open.
func TestSessionsAreCapped(t *testing.T) {
	g := openTestGateway(t, nil)
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{Sessions: true, MaxSessions: 2}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func() (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, nil)
	}
	var open []*mcp.ClientSession
	// Closed before the server (deferred after it), also when the test
	// fails: an open session's event stream would block srv.Close.
	defer func() {
		for _, cs := range open {
			_ = cs.Close()
		}
	}()
	// An opening is counted until its handler returns, so a session opened
	// right after another may be refused for a moment below the cap: each
	// of the two is given a few tries.
	for i := 0; i < 2; i++ {
		waitFor(t, func() bool {
			cs, err := dial()
			if err == nil {
				open = append(open, cs)
			}
			return err == nil
		}, "a session to open below the cap")
	}
	if cs, err := dial(); err == nil {
		cs.Close()
		t.Fatal("a third session opened past the cap of 2")
	}
	_ = open[0].Close()
	waitFor(t, func() bool {
		cs, err := dial()
		if err == nil {
			open[0] = cs
		}
		return err == nil
	}, "a session to open after one closed")
}

// LoopbackOnly tells loopback addresses from the rest.
func TestLoopbackOnly(t *testing.T) {
	ctx := context.Background()
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:8080": true, "localhost:8080": true, "127.8.9.10:1": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:8080": false, "10.0.0.5:8080": false, "nonsense": false,
		"toolcanon-no-such-host.invalid:80": false, "[::ffff:127.0.0.1]:80": true,
	} {
		if got := gateway.LoopbackOnly(ctx, addr); got != want {
			t.Errorf("LoopbackOnly(%q) = %v, want %v", addr, got, want)
		}
	}
}

// bearer adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// The README's gateway section works as written: its configuration opens,
// its example token is the one its digest names and lists the tools, a
// request without it is refused, and every --listen it shows is loopback.
func TestReadmeGatewayIsAuthenticated(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(b), "## Put toolcanon in front of your MCP servers")
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, _ := strings.Cut(section, "```json\n")
	block, _, _ = strings.Cut(block, "```")
	cfg, err := gateway.ParseConfig(filepath.Join(t.TempDir(), "gateway.json"), []byte(block))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("example token `([^`]+)`").FindStringSubmatch(section)
	if m == nil || len(cfg.HTTP.BearerTokens) != 1 || sha256.Sum256([]byte(m[1])) != cfg.HTTP.BearerTokens[0].SHA256 {
		t.Fatalf("the README's example token does not match its configuration's digest: %v", m)
	}
	listens := regexp.MustCompile(`toolcanon gateway [^\n]*--listen (\S+)`).FindAllStringSubmatch(section, -1)
	if len(listens) == 0 {
		t.Fatal("the README shows no --listen")
	}
	for _, l := range listens {
		if !gateway.LoopbackOnly(context.Background(), l[1]) {
			t.Errorf("the README listens on %s, not loopback", l[1])
		}
	}
	for _, env := range []string{"LOGS_TOKEN"} {
		t.Setenv(env, "upstream-token")
	}
	g, err := gateway.Open(context.Background(), cfg, memstore.New(), gateway.OpenOptions{ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(rt http.RoundTripper) (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1}, nil)
	}
	if cs, err := dial(http.DefaultTransport); err == nil {
		cs.Close()
		t.Fatal("a client without the token connected")
	}
	cs, err := dial(bearerTransport{m[1]})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	lr, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lr.Tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"search_docs", "query_logs", "progress_facts", "progress_report"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list has %v, not %s", names, want)
		}
	}
}

// withToken configures one bearer token, "secret-token", for alice.
func withToken(cfg configDoc) {
	sum := sha256.Sum256([]byte("secret-token"))
	cfg["http"] = map[string]any{"bearer_tokens": []any{map[string]any{"sha256": hex.EncodeToString(sum[:]), "subject": "alice"}}}
}

// A request refused before it is authenticated, or sent to a path the
// server does not serve, is answered once the body timeout passes, however
// slowly its body comes: before, the server read what was left of the body
// with no deadline before it answered, and a byte now and then held the
// connection for ever.
func TestUnauthenticatedSlowBodyIsAnswered(t *testing.T) {
	g := openTestGateway(t, withToken)
	mux := http.NewServeMux()
	mux.Handle("/mcp", g.Handler(gateway.HTTPOptions{BodyTimeout: 300 * time.Millisecond}))
	srv := httptest.NewServer(gateway.BoundBodies(mux, 300*time.Millisecond, gateway.DefaultMaxBodyBytes))
	defer srv.Close()
	for _, path := range []string{"/mcp", "/elsewhere"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			// 200 chunks at 50ms: 10s if nothing answers.
			_, elapsed := trickle(t, srv, "POST "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n",
				"1\r\n \r\n", 200)
			if elapsed > 5*time.Second {
				t.Fatalf("answered after %v", elapsed)
			}
		})
	}
}

// Every HTTP failure is a JSON-RPC error with a fixed message, never a
// decoder's or the SDK's plain text; a 401 names the scheme it wants; a
// batch is refused as over stdio.
func TestHTTPFailuresAreJSONRPCErrors(t *testing.T) {
	g := openTestGateway(t, withToken)
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
	defer srv.Close()
	for _, c := range []struct {
		name, token, body string
		status            int
		code              int64
		id                any
	}{
		{"no token", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 401, -32600, nil},
		{"wrong token", "nope", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 401, -32600, nil},
		{"not JSON", "secret-token", `{`, 400, -32700, nil},
		{"too deep", "secret-token", strings.Repeat("[", 2000) + strings.Repeat("]", 2000), 400, -32700, nil},
		{"batch", "secret-token", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, 400, -32600, nil},
		{"no jsonrpc", "secret-token", `{"id":7,"method":"ping"}`, 400, -32600, float64(7)},
		{"unknown method", "secret-token", `{"jsonrpc":"2.0","id":3,"method":"nope"}`, 400, -32600, nil},
		{"params not an object", "secret-token", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":5}`, 400, -32602, float64(4)},
	} {
		resp, b := postRPC(t, srv.URL, c.token, c.body)
		var msg struct {
			ID    any `json:"id"`
			Error struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if resp.StatusCode != c.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
			json.Unmarshal(b, &msg) != nil || msg.Error.Code != c.code || msg.ID != c.id {
			t.Errorf("%s: %d %s %s, want %d and a JSON-RPC error %d of id %v", c.name, resp.StatusCode, resp.Header.Get("Content-Type"), b, c.status, c.code, c.id)
			continue
		}
		for _, leak := range []string{"json:", "unmarshal", "jsonrpc message", "not handled", "token"} {
			if c.status != 401 && strings.Contains(msg.Error.Message, leak) {
				t.Errorf("%s: the message %q carries %q", c.name, msg.Error.Message, leak)
			}
		}
		if c.status == 401 && resp.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("%s: WWW-Authenticate %q, want Bearer", c.name, resp.Header.Get("WWW-Authenticate"))
		}
	}
}

// tools/list answers with the principal's own tools: it is marked private,
// so that no shared cache serves it to another principal.
func TestToolListIsPrivate(t *testing.T) {
	g := openTestGateway(t, nil)
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
	defer srv.Close()
	resp, b := postRPC(t, srv.URL, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"tools"`) {
		t.Fatalf("tools/list: %d %s", resp.StatusCode, b)
	}
	if strings.Contains(string(b), `"cacheScope":"public"`) || !strings.Contains(string(b), `"cacheScope":"private"`) {
		t.Errorf("tools/list is not marked private: %s", b)
	}
}

// With sessions, no principal holds more than its share: past it, its new
// sessions are refused while another principal's open; once one of its
// sessions closes, it may open another.
func TestSessionsArePerPrincipal(t *testing.T) {
	token := func(secret, subject string) map[string]any {
		sum := sha256.Sum256([]byte(secret))
		return map[string]any{"sha256": hex.EncodeToString(sum[:]), "subject": subject}
	}
	g := openTestGateway(t, func(cfg configDoc) {
		cfg["http"] = map[string]any{"bearer_tokens": []any{token("alice-token", "alice"), token("bob-token", "bob")}}
	})
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{Sessions: true, MaxSessions: 5, MaxSessionsPerPrincipal: 2}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(secret string) (*mcp.ClientSession, error) {
		hc := &http.Client{Transport: bearerTransport{token: secret}}
		return mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, MaxRetries: -1}, nil)
	}
	var open []*mcp.ClientSession
	defer func() {
		for _, cs := range open {
			_ = cs.Close()
		}
	}()
	for i := 0; i < 2; i++ {
		cs, err := dial("bob-token")
		if err != nil {
			t.Fatalf("bob's session %d: %v", i, err)
		}
		open = append(open, cs)
	}
	if cs, err := dial("bob-token"); err == nil {
		cs.Close()
		t.Fatal("bob opened a third session past his cap of 2")
	}
	cs, err := dial("alice-token")
	if err != nil {
		t.Fatalf("alice's session while bob holds his cap: %v", err)
	}
	open = append(open, cs)
	_ = open[0].Close()
	waitFor(t, func() bool {
		cs, err := dial("bob-token")
		if err == nil {
			open[0] = cs
		}
		return err == nil
	}, "bob's session to open after one of his closed")
}

// The README's exposure checklist — the "Safe to expose" paragraph and the
// limits table — names every flag with the default the command has: each
// "`--flag` (value)" of the paragraph, and each row of the table that
// names flags, its values in the flags' order.
func TestReadmeExposureChecklistMatchesFlags(t *testing.T) {
	bin, _ := binaries(t)
	out, _ := exec.Command(bin, "gateway", "--readme-check-unknown-flag").CombinedOutput()
	defaults := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z-]+) [a-z]+\n[^\n]*\(default ([^)]+)\)$`).FindAllStringSubmatch(string(out), -1) {
		defaults[m[1]] = m[2]
	}
	if len(defaults) < 10 {
		t.Fatalf("read %d flag defaults from:\n%s", len(defaults), out)
	}
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, para, _ := strings.Cut(string(b), "**Safe to expose.**")
	para, _, _ = strings.Cut(para, "\n\n")
	_, table, _ := strings.Cut(string(b), "## Limits and defaults")
	table, _, _ = strings.Cut(strings.TrimLeft(table, "\n"), "\n\n")
	checked := 0
	check := func(where, flag, value string) {
		t.Helper()
		def, ok := defaults[flag]
		if !ok {
			t.Errorf("%s: --%s is no flag of toolcanon gateway with a default", where, flag)
			return
		}
		if readmeValue(value) != readmeValue(def) {
			t.Errorf("%s: --%s is %q in the README, %q in the command", where, flag, value, def)
		}
		checked++
	}
	for _, m := range regexp.MustCompile("`--([a-z-]+)`\\s+\\(([^)]+)\\)").FindAllStringSubmatch(para, -1) {
		check("Safe to expose", m[1], m[2])
	}
	flagRE := regexp.MustCompile("`--([a-z-]+)`")
	for _, row := range strings.Split(table, "\n") {
		cells := strings.Split(row, " | ")
		if len(cells) != 3 {
			continue
		}
		flags := flagRE.FindAllStringSubmatch(cells[2], -1)
		if len(flags) == 0 {
			continue
		}
		value, _, _ := strings.Cut(cells[1], ";")
		if _, inGateway, ok := strings.Cut(value, "(gateway: "); ok {
			value, _, _ = strings.Cut(inGateway, ")")
		}
		values := strings.Split(value, " / ")
		if len(values) != len(flags) {
			t.Errorf("the limits table's row %q: %d values for %d flags", row, len(values), len(flags))
			continue
		}
		for i, f := range flags {
			v, _, _ := strings.Cut(values[i], " (")
			check("the limits table", f[1], v)
		}
	}
	if checked < 12 {
		t.Errorf("checked %d flags of the README only", checked)
	}
}

// readmeValue writes a README value or a flag's default one way: a count
// without its thousands commas, a duration as Go prints it.
func readmeValue(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), ",", "")
	for unit, d := range map[string]time.Duration{" s": time.Second, " min": time.Minute, " h": time.Hour} {
		if n, ok := strings.CutSuffix(s, unit); ok {
			if v, err := strconv.Atoi(n); err == nil {
				return (time.Duration(v) * d).String()
			}
		}
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d.String()
	}
	return s
}
