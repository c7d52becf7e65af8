package gateway_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// rpcLine is one JSON-RPC message the gateway wrote.
type rpcLine struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Malformed lines on `gateway --stdio` are answered with JSON-RPC errors and
// the next valid call is served; closing stdin then ends the gateway with
// exit code 0.
func TestStdioSurvivesMalformedLines(t *testing.T) {
	bin, up := binaries(t)
	dir := t.TempDir()
	cfg := baseConfig(t, map[string]any{"command": []string{up}}, "echo").write(t, dir)
	cmd := exec.Command(bin, "gateway", "--config", cfg, "--stdio")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	own(t, cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan rpcLine, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var l rpcLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("the gateway wrote a line that is not JSON: %q", sc.Text())
				continue
			}
			lines <- l
		}
		close(lines)
	}()
	next := func() rpcLine {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stdout closed\n%s", stderr)
			}
			return l
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer\n%s", stderr)
		}
		return rpcLine{}
	}
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if l := next(); string(l.ID) != "1" || l.Error != nil {
		t.Fatalf("initialize: %+v", l)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	bad := []struct {
		line string
		id   string
		code int64
	}{
		{`this is not json`, "null", -32700},
		{`{"id":7,"method":"tools/list"}`, "7", -32600},
		{`[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, "null", -32600},
		{`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":5}`, "10", -32602},
	}
	for _, b := range bad {
		send(b.line)
		l := next()
		if string(l.ID) != b.id || l.Error == nil || l.Error.Code != b.code || l.Error.Message == "" {
			t.Errorf("%s: answered %+v, want id %s, code %d", b.line, l, b.id, b.code)
		}
	}
	send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"},` +
		`"_meta":{"io.github.toolcanon/toolCallId":"call-stdio-1","io.github.toolcanon/runId":"run-stdio"}}}`)
	l := next()
	if string(l.ID) != "9" || l.Error != nil || !strings.Contains(string(l.Result), "still here") {
		t.Fatalf("the valid call after the malformed lines: %+v %s\n%s", l, l.Result, stderr)
	}
	_ = stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after stdin closed: %v\n%s", err, stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the gateway did not exit when stdin closed")
	}
}

// A stdin that cannot be read ends the gateway with a non-zero exit and one
// line on stderr.
func TestStdioFatalErrorExitsNonZero(t *testing.T) {
	bin, up := binaries(t)
	dir := t.TempDir()
	cfg := baseConfig(t, map[string]any{"command": []string{up}}, "echo").write(t, dir)
	f, err := os.Open(dir) // reading a directory fails
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(bin, "gateway", "--config", cfg, "--stdio")
	cmd.Stdin = f
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	own(t, cmd)
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("exit: %v, want a non-zero exit code\n%s", err, stderr)
	}
	var mine []string
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if strings.HasPrefix(line, "toolcanon gateway: ") {
			mine = append(mine, line)
		}
	}
	if len(mine) != 1 || !strings.Contains(mine[0], "stdio") {
		t.Fatalf("stderr: %q, want one line about stdio", stderr)
	}
}
