package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// tlsRedis is a redis-server that serves TLS (as a managed Redis does),
// with an ACL user "toolcanon" that has the least-privilege ACL of a
// worker, of the reaper and of doctor, and whose password is in a file.
type tlsRedis struct {
	srv    *redistest.Server
	files  redistest.TLSFiles
	pwFile string
	url    string // rediss://toolcanon@<its TLS address>
}

const tlsRedisPassword = "Zq8-tls-acl-password"

func startTLSRedis(t *testing.T, extra ...string) tlsRedis {
	t.Helper()
	dir := t.TempDir()
	files, err := redistest.NewTLSFiles(dir, "redis.example.com")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := redistest.StartTLSServer(files, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	args := append([]string{"ACL", "SETUSER", "toolcanon", "reset", "on", ">" + tlsRedisPassword, "resetkeys", "~tc:*",
		"resetchannels", "-@all"}, redisstore.ACLGrants(redisstore.ACLWorker, redisstore.ACLReap, redisstore.ACLCheck)...)
	if _, err := redistest.Command(srv.Addr, args...); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "redis.password")
	if err := os.WriteFile(pw, []byte(tlsRedisPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvRedisPassword, "")
	return tlsRedis{srv: srv, files: files, pwFile: pw, url: "rediss://toolcanon@" + srv.TLSAddr}
}

// flags are the connection flags for r, then extra.
func (r tlsRedis) flags(extra ...string) []string {
	return append([]string{"--redis", r.url, "--tls-ca-file", r.files.CA, "--password-file", r.pwFile}, extra...)
}

// inspect, reap and abandon reach a server that serves only TLS (to them)
// as an ACL user whose password is in a file.
func TestOperatorCommandsOverTLS(t *testing.T) {
	r := startTLSRedis(t)
	run := seedLeases(t, r.srv.Addr)
	time.Sleep(50 * time.Millisecond) // c_dead's lease passes

	code, out, stderr := runCmd(append([]string{"inspect", "--run", run}, r.flags()...)...)
	if code != exitOK || !strings.Contains(out, "in flight 2") || !strings.Contains(out, "c_done  kb.search  READY") {
		t.Fatalf("inspect: exit %d:\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCmd(append([]string{"reap", "--run", run}, r.flags()...)...)
	if code != exitOK || !strings.Contains(out, "c_dead  abandoned") || !strings.Contains(out, "1 call(s) abandoned") {
		t.Fatalf("reap: exit %d:\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCmd(append([]string{"reap", "--all", "--once"}, r.flags()...)...)
	if code != exitOK || !strings.Contains(out, "0 call(s) abandoned") {
		t.Fatalf("reap --all: exit %d:\n%s%s", code, out, stderr)
	}
	code, _, stderr = runCmd(append([]string{"abandon", "--run", run, "--call", "c_live"}, r.flags()...)...)
	if code != exitRefused {
		t.Fatalf("abandon of a running lease: exit %d: %s", code, stderr)
	}
}

// What goes wrong is said plainly: plain TCP to the TLS port, a server the
// CA does not vouch for, a name the certificate does not carry, a wrong
// password, and (where the server asks for one) no client certificate.
func TestTLSConnectionFailuresAreClear(t *testing.T) {
	r := startTLSRedis(t, "--tls-auth-clients", "yes")
	cert := []string{"--tls-cert-file", r.files.ClientCert, "--tls-key-file", r.files.ClientKey}
	wrongPW := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(wrongPW, []byte("not-the-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"client certificate", r.flags(cert...), exitOK, ""},
		{"no client certificate", r.flags(), exitFailure, "cannot reach Redis at " + r.url},
		{"plain TCP", []string{"--redis", "redis://toolcanon@" + r.srv.TLSAddr, "--password-file", r.pwFile}, exitFailure, "cannot reach Redis at redis://toolcanon@"},
		{"system roots", []string{"--redis", r.url, "--password-file", r.pwFile}, exitFailure, "certificate signed by unknown authority"},
		{"another name", r.flags(append(cert, "--tls-server-name", "other.example.com")...), exitFailure, "certificate is valid for"},
		{"by its name", r.flags(append(cert, "--tls-server-name", "redis.example.com")...), exitOK, ""},
		{"wrong password", []string{"--redis", r.url, "--tls-ca-file", r.files.CA, "--password-file", wrongPW,
			"--tls-cert-file", r.files.ClientCert, "--tls-key-file", r.files.ClientKey}, exitFailure, "WRONGPASS"},
		{"TLS files on plain TCP", []string{"--redis", "redis://" + r.srv.Addr, "--tls-ca-file", r.files.CA}, exitUsage,
			"--tls-ca-file: needs TLS: write the URL as rediss://host:port"},
		{"password in the URL", []string{"--redis", "rediss://toolcanon:" + tlsRedisPassword + "@" + r.srv.TLSAddr}, exitUsage,
			"--redis: the URL carries a password"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, stderr := runCmd(append([]string{"inspect", "--run", "never-begun"}, c.args...)...)
			if c.code == exitOK {
				// The connection worked: the run is unknown.
				if code != exitNotFound {
					t.Fatalf("exit %d, want %d (connected):\n%s%s", code, exitNotFound, out, stderr)
				}
				return
			}
			if code != c.code || !strings.Contains(stderr, c.msg) || strings.Contains(stderr+out, tlsRedisPassword) {
				t.Fatalf("exit %d, want %d and %q:\n%s%s", code, c.code, c.msg, out, stderr)
			}
		})
	}
}

// The UI reads a store over TLS as the ACL user.
func TestUIOverTLS(t *testing.T) {
	r := startTLSRedis(t)
	run := seedLeases(t, r.srv.Addr)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() { done <- uiServe(ctx, r.flags("--listen", "127.0.0.1:0"), &stdout, &stderr) }()
	defer func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("exit %d: %s", code, stderr.String())
		}
	}()
	url := waitFor(t, `http://(127\.0\.0\.1:\d+)/`, &stdout, &stderr)
	res, err := http.Get("http://" + url + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), run) {
		t.Fatalf("runs page: %d, the run %s listed: %v", res.StatusCode, run, strings.Contains(string(body), run))
	}
}

// waitFor waits until out shows the pattern and returns its first group.
func waitFor(t *testing.T, pattern string, out, errs *lockedBuffer) string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
	}
	t.Fatalf("no %s in %q %q", pattern, out.String(), errs.String())
	return ""
}

// The gateway's configuration names its Redis in a "redis" object with the
// flags' names: a call through it is recorded over TLS, as the ACL user.
func TestGatewayConfigRedisOverTLS(t *testing.T) {
	r := startTLSRedis(t)
	search := &mcp.Tool{Name: "search", Description: "Search.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["q"],"properties":{"q":{"type":"string","maxLength":64}}}`)}
	pin, err := gateway.Digest(search)
	if err != nil {
		t.Fatal(err)
	}
	up := mcp.NewServer(&mcp.Implementation{Name: "kb", Version: "1.0.0"}, nil)
	up.AddTool(search, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refunds need a second approver"}}}, nil
	})
	upstream := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	defer upstream.Close()

	dir := t.TempDir()
	for name, from := range map[string]string{"ca.pem": r.files.CA, "redis.password": r.pwFile} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dir, "gateway.json")
	doc := strings.NewReplacer("UPSTREAM", upstream.URL, "PIN", pin, "REDIS", r.url).Replace(`{
  "upstreams": {"kb": {"url": "UPSTREAM"}},
  "identity": {"project": "support", "principal": "agent-1"},
  "tools": [{"name": "search_docs", "upstream": "kb", "upstream_tool": "search", "pin": "PIN",
    "definition": {"name": "kb.search", "version": "1.0.0", "description": "Search.", "effect": "read", "risk": "low",
      "timeout": "30s", "input_schema": {"type": "object", "additionalProperties": false, "required": ["q"],
        "properties": {"q": {"type": "string", "maxLength": 64}}}}}],
  "policy": {"grants": [{"principals": ["*"], "projects": ["support"], "allow": ["tool.call:*"]}]},
  "redis": {"url": "REDIS", "tls_ca_file": "ca.pem", "password_file": "redis.password"}
}`)
	if err := os.WriteFile(config, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runCmd("gateway", "--config", config, "--listen", "127.0.0.1:0", "--redis", r.url); code != exitUsage ||
		!strings.Contains(stderr, "names its Redis") {
		t.Fatalf("the store named twice: exit %d:\n%s%s", code, out, stderr)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- gatewayServe(ctx, []string{"--config", config, "--listen", "127.0.0.1:0", "--reap-interval", "0"}, &stdout, &stderr)
	}()
	defer func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("exit %d: %s", code, stderr.String())
		}
	}()
	addr := waitFor(t, `listening on http://(127\.0\.0\.1:\d+)/mcp`, &stderr, &stdout)
	run := "tls-gw-run"
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_docs","arguments":{"q":"refunds"},` +
		`"_meta":{"io.github.toolcanon/toolCallId":"call_tls_1","io.github.toolcanon/runId":"` + run + `"}}}`
	req, _ := http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(answer), "second approver") {
		t.Fatalf("tools/call: %d %s\n%s", res.StatusCode, answer, stderr.String())
	}
	// The run the agent named is its principal's (gateway.PrincipalRun).
	code, out, errs := runCmd(append([]string{"inspect", "--run", gateway.PrincipalRun("agent-1", run), "--json"}, r.flags()...)...)
	if code != exitOK || !strings.Contains(out, `"tool_call_id": "call_tls_1"`) || !strings.Contains(out, `"status": "READY"`) {
		t.Fatalf("the call's record, read over TLS: exit %d:\n%s%s", code, out, errs)
	}
}

// The README's one example of a managed Redis with TLS and an ACL user
// works as printed against a server that serves TLS: only the server's
// name and port are this test's, its CA in server-ca.pem and the user's
// password in redis.password, as the README says.
func TestReadmeManagedRedisExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const host = "redis.example.com:6380"
	var line string
	for l := range strings.Lines(string(readme)) {
		if strings.HasPrefix(l, "toolcanon ") && strings.Contains(l, "rediss://toolcanon@"+host) {
			if line != "" {
				t.Fatalf("the README shows more than one managed-Redis example:\n%s%s", line, l)
			}
			line = l
		}
	}
	if line == "" {
		t.Fatal("the README shows no managed-Redis example")
	}
	r := startTLSRedis(t)
	dir := t.TempDir()
	for name, from := range map[string]string{"server-ca.pem": r.files.CA, "redis.password": r.pwFile} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	args := strings.Fields(strings.ReplaceAll(line, host, r.srv.TLSAddr))
	code, out, stderr := runCmd(args[1:]...)
	if code != exitOK || !strings.Contains(out, "OK      tls                on") ||
		!strings.Contains(out, `user "toolcanon" may run every command`) {
		t.Fatalf("%s: exit %d:\n%s%s", strings.Join(args, " "), code, out, stderr)
	}
}
