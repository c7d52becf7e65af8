package gateway_test

import (
	"bufio"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// `toolcanon gateway --listen` beyond loopback starts with http.oauth and
// no bearer tokens (OAuth is authentication), serves the protected
// resource metadata beside /mcp, and refuses /mcp without a token with a
// challenge naming it.
func TestOAuthGatewayProcess(t *testing.T) {
	bin, up := binaries(t)
	cfg := baseConfig(t, map[string]any{"command": []string{up}}, "echo")
	cfg["policy"] = map[string]any{"grants": []any{map[string]any{"principals": []string{"*"}, "projects": []string{"support"},
		"scopes": []string{"tools.read"}, "allow": []string{"tool.call:*"}}}}
	cfg["http"] = map[string]any{"oauth": map[string]any{"resource": "https://gw.example.com/mcp", "issuer": "https://auth.example.com"}}
	cmd := exec.Command(bin, "gateway", "--config", cfg.write(t, t.TempDir()), "--listen", "0.0.0.0:0")
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
	port := ""
	var seen []string
	for port == "" && sc.Scan() {
		seen = append(seen, sc.Text())
		if m := regexp.MustCompile(`listening on http://\S*:(\d+)/mcp`).FindStringSubmatch(sc.Text()); m != nil {
			port = m[1]
		}
	}
	if port == "" {
		t.Fatalf("the gateway did not serve:\n%s", strings.Join(seen, "\n"))
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	base := "http://127.0.0.1:" + port
	for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"resource":"https://gw.example.com/mcp"`) ||
			!strings.Contains(string(b), `"authorization_servers":["https://auth.example.com"]`) {
			t.Errorf("%s: %d %s", p, resp.StatusCode, b)
		}
	}
	resp, _ := postRPC(t, base+"/mcp", "", listBody)
	if p := challenge(t, resp); resp.StatusCode != http.StatusUnauthorized ||
		p["resource_metadata"] != "https://gw.example.com/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("/mcp without a token: %d %v", resp.StatusCode, p)
	}
	resp, _ = postRPC(t, base+"/mcp", "a.b.c", listBody)
	if p := challenge(t, resp); resp.StatusCode != http.StatusUnauthorized || p["error"] != "invalid_token" {
		t.Errorf("/mcp with a bad token: %d %v", resp.StatusCode, p)
	}
}
