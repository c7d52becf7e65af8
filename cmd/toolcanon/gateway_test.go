package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const checkConfig = `{
  "upstreams": {"kb": {"url": "http://127.0.0.1:1/mcp"}},
  "identity": {"project": "support", "principal": "agent-1"},
  "tools": [{"name": "search_docs", "upstream": "kb", "upstream_tool": "search",
    "pin": "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "definition": {"name": "kb.search", "version": "1.0.0", "description": "Search.", "effect": "read", "risk": "low",
      "timeout": "30s", "input_schema": {"type": "object", "additionalProperties": false, "required": ["q"],
        "properties": {"q": {"type": "string", "maxLength": 64}}}}}],
  "policy": {"grants": [{"principals": ["*"], "projects": ["support"], "allow": ["tool.call:*"]}]}
}`

func TestGatewayUsage(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "gw.json")
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(checkConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(strings.Replace(checkConfig, `"risk"`, `"rsk"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"gateway"}, exitUsage, "--config and at least one of --stdio and --listen are required"},
		{[]string{"gateway", "--config", good}, exitUsage, "at least one of --stdio and --listen"},
		{[]string{"gateway", "--stdio"}, exitUsage, "--config"},
		{[]string{"gateway", "--config", bad, "--stdio"}, exitUsage, bad + ":6:112: at \"/tools/0/definition/rsk\": unknown member \"rsk\"; fix: did you mean \"risk\"?"},
		{[]string{"gateway", "--config", filepath.Join(dir, "none.json"), "--stdio"}, exitUsage, "none.json: cannot read the file"},
		{[]string{"gateway", "check", "--config", good}, exitOK, good + ": ok: 1 tools from 1 upstreams"},
		{[]string{"gateway", "check", "--config", bad}, exitUsage, "unknown member"},
		{[]string{"gateway", "pin"}, exitUsage, "--config is required"},
		{[]string{"gateway", "pin", "--config", good}, exitFailure, "upstream \"kb\" unreachable"},
		{[]string{"gateway", "help"}, exitOK, "toolcanon gateway pin --config FILE"},
		{[]string{"gateway", "--config", good, "--listen", "127.0.0.1:99999"}, exitFailure, "cannot listen on"},
		{[]string{"gateway", "--config", good, "--stdio", "--trace-stdout"}, exitUsage, "--trace-stdout cannot share stdout with --stdio"},
		{[]string{"gateway", "--config", good, "--listen", "127.0.0.1:0", "--trace-stdout", "--trace-file", filepath.Join(dir, "t")}, exitUsage, "exclude each other"},
		{[]string{"gateway", "--config", good, "--stdio", "--trace-file", filepath.Join(dir, "no", "such", "dir")}, exitUsage, "cannot open the trace file"},
	} {
		code, stdout, stderr := runCmd(c.args...)
		if code != c.code || !strings.Contains(stdout+stderr, c.out) {
			t.Errorf("%v: exit %d, want %d; output lacks %q:\n%s%s", c.args, code, c.code, c.out, stdout, stderr)
		}
	}
}
