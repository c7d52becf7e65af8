package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `gateway check` checks an OAuth configuration and says where its
// metadata is; a bad one is refused with its pointer.
func TestGatewayCheckOAuth(t *testing.T) {
	dir := t.TempDir()
	cfg := strings.Replace(strings.Replace(checkConfig, `"allow"`, `"scopes": ["tools.read"], "allow"`, 1),
		`"policy"`, `"http": {"oauth": {"resource": "https://gw.example.com/mcp", "issuer": "https://auth.example.com"}}, "policy"`, 1)
	good, bad := filepath.Join(dir, "gw.json"), filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(strings.Replace(cfg, `"https://auth.example.com"`, `"http://auth.example.com"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd("gateway", "check", "--config", good)
	want := good + ": ok: 1 tools from 1 upstreams; OAuth resource https://gw.example.com/mcp, tokens of https://auth.example.com, " +
		"metadata at https://gw.example.com/.well-known/oauth-protected-resource/mcp\n"
	if code != exitOK || stdout != want {
		t.Errorf("exit %d:\n%s%s\nwant %s", code, stdout, stderr, want)
	}
	code, stdout, stderr = runCmd("gateway", "check", "--config", bad)
	if code != exitUsage || !strings.Contains(stderr, `at "/http/oauth/issuer"`) || !strings.Contains(stderr, "http only on loopback") {
		t.Errorf("exit %d:\n%s%s", code, stdout, stderr)
	}
}
