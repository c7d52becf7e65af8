package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// rawStdio is a go-sdk server served over gateway.StdioTransport, spoken
// to line by line.
type rawStdio struct {
	t     testing.TB
	in    io.WriteCloser
	lines chan string
}

// serveRawStdio connects srv to a StdioTransport over pipes and initializes
// the session.
func serveRawStdio(t testing.TB, srv *mcp.Server) *rawStdio {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss, err := srv.Connect(context.Background(), &gateway.StdioTransport{Reader: inR, Writer: outW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inW.Close(); _ = outR.Close(); _ = ss.Close() })
	r := &rawStdio{t: t, in: inW, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	r.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if l := r.next(); !strings.Contains(l, `"result"`) {
		t.Fatalf("initialize: %s", l)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func (r *rawStdio) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// next is the next line the server writes, within 10 seconds.
func (r *rawStdio) next() string {
	r.t.Helper()
	select {
	case l, ok := <-r.lines:
		if !ok {
			r.t.Fatal("the session's output closed")
		}
		return l
	case <-time.After(10 * time.Second):
		r.t.Fatal("no answer within 10s")
	}
	return ""
}

// answer decodes one JSON-RPC answer.
type answer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int64 `json:"code"`
	} `json:"error"`
}

func decodeAnswer(t testing.TB, line string) answer {
	t.Helper()
	var a answer
	if err := json.Unmarshal([]byte(line), &a); err != nil {
		t.Fatalf("not a JSON-RPC answer: %s", line)
	}
	return a
}

// An id the SDK would read otherwise than it is written — a fraction, an
// exponent, an integer beyond ±(2^53-1), -0, null, a boolean, an object —
// is refused with -32600 and id null, on stdio and over HTTP, and the call
// it names is not run; strings and integers within the bound are answered
// with the very id sent. Before, 1.5 was answered and run as 1, and 2^63
// came back as -2^63.
func TestIDsAreRefusedOrEchoed(t *testing.T) {
	refused := []string{"1.5", "9223372036854775808", "9007199254740992", "-9007199254740992", "1e3", "1.0", "-0", "null", "true", "{}", "[1]"}
	echoed := []string{"7", "0", "9007199254740991", "-9007199254740991", `"x"`, `"1.5"`, `"\u00e9t\u00e9"`}

	// stdio: the gateway in process over the in-memory world.
	w := newWorld(t, gateway.Options{})
	srv, err := gateway.NewServer(w.b, gateway.Options{Runs: fixedRun("")})
	if err != nil {
		t.Fatal(err)
	}
	r := serveRawStdio(t, srv)
	call := func(id, callID string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"search","arguments":{"query":"q"},` +
			`"_meta":{"io.github.toolcanon/toolCallId":"` + callID + `","io.github.toolcanon/runId":"run-ids"}}}`
	}
	for i, id := range refused {
		r.send(call(id, fmt.Sprintf("stdio-refused-%d", i)))
		if a := decodeAnswer(t, r.next()); string(a.ID) != "null" || a.Error == nil || a.Error.Code != -32600 {
			t.Errorf("stdio, id %s: answered %+v, want -32600 with id null", id, a)
		}
	}
	if n := w.calls.Load(); n != 0 {
		t.Errorf("stdio: %d calls with refused ids ran", n)
	}
	for i, id := range echoed {
		r.send(call(id, fmt.Sprintf("stdio-echoed-%d", i)))
		if a := decodeAnswer(t, r.next()); !sameID(id, string(a.ID)) || a.Error != nil {
			t.Errorf("stdio, id %s: answered %+v, want a result with the same id", id, a)
		}
	}

	// HTTP: the gateway over the test upstream, which logs what it runs.
	log := filepath.Join(t.TempDir(), "upstream.log")
	g := openTestGateway(t, func(c configDoc) { c["upstreams"] = map[string]any{"up": stdioUpstream(t, log, "")} })
	hs := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
	defer hs.Close()
	hcall := func(id, text string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"},` +
			`"_meta":{"io.github.toolcanon/toolCallId":"` + text + `","io.github.toolcanon/runId":"run-ids"}}}`
	}
	for i, id := range refused {
		text := fmt.Sprintf("http-refused-%d", i)
		resp, body := postRPC(t, hs.URL, "", hcall(id, text))
		if a := decodeAnswer(t, string(body)); resp.StatusCode != http.StatusBadRequest || string(a.ID) != "null" || a.Error == nil || a.Error.Code != -32600 {
			t.Errorf("HTTP, id %s: %d %s, want 400 with -32600 and id null", id, resp.StatusCode, body)
		}
		if n := countExecutions(t, log, "echo", text); n != 0 {
			t.Errorf("HTTP, id %s: the call ran %d times", id, n)
		}
	}
	for i, id := range echoed {
		resp, body := postRPC(t, hs.URL, "", hcall(id, fmt.Sprintf("http-echoed-%d", i)))
		if a := decodeAnswer(t, sseData(body)); resp.StatusCode != http.StatusOK || !sameID(id, string(a.ID)) || a.Error != nil {
			t.Errorf("HTTP, id %s: %d %s, want a result with the same id", id, resp.StatusCode, body)
		}
	}
}

// sseData is the last data line of an event stream, or body as it is.
func sseData(body []byte) string {
	last := string(body)
	for _, l := range strings.Split(string(body), "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			last = d
		}
	}
	return last
}

// sameID reports whether the id an answer carries is the one sent, as
// JSON values: a string with the same text, or the same integer.
func sameID(sent, got string) bool {
	var a, b any
	da, db := json.NewDecoder(strings.NewReader(sent)), json.NewDecoder(strings.NewReader(got))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&a) != nil || db.Decode(&b) != nil {
		return false
	}
	return a == b
}

// Every request on stdio gets exactly one answer: a second request with an
// id in flight, an id of null, an id without a method are answered -32600
// at once, and an id is free again once its request is answered. Before,
// the SDK dropped each of them without a word and the agent waited for ever.
func TestStdioAnswersEveryRequest(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "waiting", Version: "1"}, nil)
	release := make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "wait"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	r := serveRawStdio(t, srv)
	wait := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"wait","arguments":{}}}`
	}
	r.send(wait("5"))
	r.send(wait(`"5"`)) // another id: the string "5" is not 5
	for _, c := range []struct{ line, id string }{
		{wait("5"), "5"},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, "null"},
		{`{"jsonrpc":"2.0","id":6}`, "6"},
	} {
		r.send(c.line)
		if a := decodeAnswer(t, r.next()); string(a.ID) != c.id || a.Error == nil || a.Error.Code != -32600 {
			t.Fatalf("%s: answered %+v, want -32600 with id %s", c.line, a, c.id)
		}
	}
	close(release)
	ids := map[string]bool{}
	for range 2 {
		a := decodeAnswer(t, r.next())
		if a.Error != nil || !strings.Contains(string(a.Result), "done") {
			t.Fatalf("a released wait: %+v", a)
		}
		ids[string(a.ID)] = true
	}
	if !ids["5"] || !ids[`"5"`] {
		t.Fatalf("the released waits answered ids %v, want 5 and \"5\"", ids)
	}
	r.send(wait("5"))
	if a := decodeAnswer(t, r.next()); string(a.ID) != "5" || a.Error != nil {
		t.Fatalf("id 5 again, once answered: %+v", a)
	}
}

// FuzzRPCID: whatever id a request carries, stdio and HTTP each answer it
// exactly once: with the very id, when it is a string or an integer within
// ±(2^53-1), else with -32600 and id null. Run it bounded, e.g.
// -fuzztime=20000x.
func FuzzRPCID(f *testing.F) {
	for _, s := range []string{"1", "-1", "0", "-0", "1.5", "1.0", "1e3", "1E+2", "9007199254740991", "9007199254740992",
		"-9007199254740991", "-9007199254740992", "9223372036854775807", "9223372036854775808", "18446744073709551616",
		"1" + strings.Repeat("0", 400), "null", "true", "false", "{}", "[]", `{"a":1}`, `""`, `"x"`, `"1"`, `"\u0000"`,
		`"\ud83d\ude00"`, `"` + strings.Repeat("x", 300) + `"`, "01", "+1", ".5", "NaN", `"a" "b"`} {
		f.Add(s)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "ids", Version: "1"}, nil)
	r := serveRawStdio(f, srv)
	g := openTestGateway(f, nil)
	h := g.Handler(gateway.HTTPOptions{})
	line := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` }
	f.Fuzz(func(t *testing.T, id string) {
		if strings.ContainsAny(id, "\r\n") || !json.Valid([]byte(id)) || strictjson.Check([]byte(line(id)), strictjson.MaxDepth) != nil {
			return // not one line of strict JSON with one id: not the id screen's business
		}
		r.t = t
		r.send(line(id))
		got := decodeAnswer(t, r.next())
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(line(id)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		hgot := decodeAnswer(t, sseData(rec.Body.Bytes()))
		for _, a := range []struct {
			via string
			answer
		}{{"stdio", got}, {"HTTP", hgot}} {
			if validRPCID(id) {
				if !sameID(id, string(a.ID)) || a.Error != nil {
					t.Fatalf("%s, id %s: answered %+v, want a result with the same id", a.via, id, a.answer)
				}
			} else if string(a.ID) != "null" || a.Error == nil || a.Error.Code != -32600 {
				t.Fatalf("%s, id %s: answered %+v, want -32600 with id null", a.via, id, a.answer)
			}
		}
		select {
		case extra := <-r.lines:
			t.Fatalf("stdio, id %s: a second answer %s", id, extra)
		default:
		}
	})
}

// validRPCID is the rule the gateway holds ids to, written apart from its
// code: one JSON string, or one integer written without a fraction, an
// exponent or -0, within ±(2^53-1).
func validRPCID(id string) bool {
	dec := json.NewDecoder(strings.NewReader(id))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return false
	}
	switch v := v.(type) {
	case string:
		return true
	case json.Number:
		n, ok := new(big.Int).SetString(strings.TrimSpace(id), 10)
		bound := new(big.Int).Lsh(big.NewInt(1), 53)
		return ok && regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`).MatchString(string(v)) && string(v) != "-0" &&
			n.CmpAbs(bound) < 0
	}
	return false
}
