package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/gateway"
)

const (
	fuzzInit  = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}` + "\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	fuzzProbe = `{"jsonrpc":"2.0","id":"%s","method":"tools/call","params":{"name":"search","arguments":{"query":"probe"},"_meta":{"io.github.toolcanon/toolCallId":"probe-call","io.github.toolcanon/runId":"probe-run"}}}`
)

// recordCrashes makes a fuzz worker of this package write what it prints
// when it crashes (a panic outside the fuzz function, a fatal error) to a
// file of TOOLCANON_FUZZ_CRASH_DIR, which make fuzz prints when the target
// fails: the fuzz coordinator gives its workers no stderr, so a worker
// that dies is reported only as "terminated unexpectedly: EOF".
func recordCrashes(f *testing.F) {
	dir := os.Getenv("TOOLCANON_FUZZ_CRASH_DIR")
	if dir == "" {
		return
	}
	out, err := os.CreateTemp(dir, "crash-*.txt")
	if err != nil {
		f.Fatal(err)
	}
	defer out.Close() // the runtime keeps a duplicate of the descriptor
	if err := debug.SetCrashOutput(out, debug.CrashOptions{}); err != nil {
		f.Fatal(err)
	}
}

// Whatever lines an agent sends on stdio, every line the gateway writes is
// a JSON-RPC message and a valid call sent after them is still served: no
// input ends the session. Run it bounded, e.g. -fuzztime=20000x.
func FuzzStdioInput(f *testing.F) {
	recordCrashes(f)
	for _, s := range []string{
		"not json", `{"id":7,"method":"tools/list"}`, `[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, `[]`, `{}`, `null`, `"x"`, `1e999`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, `{"jsonrpc":"1.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"x"}`, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":5}}`,
		`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{}}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"probe-after-input"}}`,
		`{"jsonrpc":"2.0","id":6,"error":{"code":1,"message":"x"}}`, `{"a":1,"a":2}`, "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}",
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}`,
		strings.Repeat("[", 10000), "\r\n\r\n", `{"jsonrpc":"2.0","id":10,"method":"ping"} {"jsonrpc":"2.0","id":11,"method":"ping"}`,
	} {
		f.Add(s)
	}
	w := newWorld(f, gateway.Options{})
	srv, err := gateway.NewServer(w.b, gateway.Options{Runs: fixedRun("")})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, input string) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ss, err := srv.Connect(ctx, &gateway.StdioTransport{Reader: inR, Writer: outW, MaxLineBytes: 64 << 10}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		// The probe's id is new every time, so that no input can cancel it
		// (notifications/cancelled) or answer it.
		probeID := "probe-" + canonical.NewOwner()
		go func() {
			_, _ = io.WriteString(inW, fuzzInit+input+"\n"+fmt.Sprintf(fuzzProbe, probeID)+"\n")
		}()
		served := make(chan error, 1)
		go func() {
			sc := bufio.NewScanner(outR)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var msg struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      json.RawMessage `json:"id"`
					Error   json.RawMessage `json:"error"`
				}
				if err := json.Unmarshal(sc.Bytes(), &msg); err != nil || msg.JSONRPC != "2.0" {
					served <- &lineError{sc.Text()}
					return
				}
				if string(msg.ID) == `"`+probeID+`"` && msg.Error == nil {
					served <- nil
					return
				}
			}
			served <- io.ErrUnexpectedEOF
		}()
		select {
		case err := <-served:
			if err != nil {
				t.Fatalf("after %q: %v", input, err)
			}
		case <-ctx.Done():
			t.Fatalf("after %q: the probe call was not answered", input)
		}
		_ = inW.Close()
		_ = outR.Close()
	})
}

type lineError struct{ line string }

func (e *lineError) Error() string {
	return "the gateway wrote a line that is not a JSON-RPC message: " + e.line
}

// Whatever body a POST carries, the HTTP entry point answers it without a
// server error, and a valid request after it is served. Run it bounded,
// e.g. -fuzztime=20000x.
func FuzzHTTPBody(f *testing.F) {
	recordCrashes(f)
	for _, s := range []string{
		"not json", `{"id":7,"method":"tools/list"}`, `[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, `[]`, `{}`, `null`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"x"}`, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":5}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"io.github.toolcanon/toolCallId":"c1","io.github.toolcanon/runId":"r1"}}}`,
		strings.Repeat("[", 10000), `{"a":1,"a":2}`, "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}",
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"a":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}`, `{"jsonrpc":"2.0","id":1e400,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":"` + strings.Repeat("x", 300) + `","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
	} {
		f.Add(s)
	}
	g := openTestGateway(f, nil)
	h := g.Handler(gateway.HTTPOptions{MaxBodyBytes: 64 << 10})
	post := func(body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	f.Fuzz(func(t *testing.T, body string) {
		if rec := post(body); rec.Code >= 500 {
			t.Fatalf("%q: %d %s", body, rec.Code, rec.Body)
		}
		probe := post(`{"jsonrpc":"2.0","id":"probe","method":"tools/list"}`)
		if probe.Code != http.StatusOK || !strings.Contains(probe.Body.String(), `"echo"`) {
			t.Fatalf("after %q the probe got %d %s", body, probe.Code, probe.Body)
		}
	})
}
