package gateway_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/registry"
)

const pinA = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// goodConfig is a complete configuration; bad ones are edits of it.
var goodConfig = `{
  "upstreams": {
    "kb": {"command": ["./kb-server", "--index", "main"], "env": {"KB_MODE": "ro"}},
    "logs": {"url": "http://127.0.0.1:8931/mcp", "bearer_token_env": "LOGS_TOKEN"}
  },
  "identity": {
    "project": "support",
    "principal": "desktop-agent",
    "tool_call_id_keys": ["redpanda.com/llm-tool-call-id"],
    "run_header": "X-Toolcanon-Run",
    "default_run": "run-desktop"
  },
  "run": {"max_calls": 100, "max_calls_per_tool": 60, "max_result_bytes": 16384, "ttl": "2h"},
  "tools": [
    {
      "name": "search_docs", "upstream": "kb", "upstream_tool": "search", "pin": "` + pinA + `",
      "definition": {
        "name": "kb.search", "version": "1.0.0", "description": "Search the knowledge base.",
        "effect": "read", "risk": "low", "permissions": ["kb.read"], "timeout": "30s",
        "input_schema": {"type": "object", "additionalProperties": false, "required": ["question"],
          "properties": {"question": {"type": "string", "minLength": 1, "maxLength": 256}}}
      },
      "projector": {"kind": "rag", "input": {"query": "question"}},
      "ttl": "1h"
    },
    {
      "name": "query_logs", "upstream": "logs", "upstream_tool": "query", "pin": "` + pinA + `",
      "definition": {
        "name": "logs.query", "version": "1.0.0", "description": "Query the logs.",
        "effect": "read", "risk": "low", "timeout": "10s",
        "input_schema": {"type": "object", "additionalProperties": false, "required": ["service", "q"],
          "properties": {"service": {"type": "string", "minLength": 1, "maxLength": 64}, "q": {"type": "string", "minLength": 1, "maxLength": 256}}}
      },
      "projector": {"kind": "querylog", "input": {"topic": "service", "query": "q"}, "source_kind": "LOKI", "limits": {"total": 8192}}
    }
  ],
  "policy": {"grants": [{"principals": ["*"], "projects": ["support"], "allow": ["tool.call:*", "kb.read"]}]},
  "progress": {"threshold": 3},
  "http": {"bearer_tokens": [{"sha256": "` + strings.Repeat("ab", 32) + `", "subject": "alice"}]}
}`

func TestGoodConfigParses(t *testing.T) {
	cfg, err := gateway.ParseConfig("/etc/toolcanon/gateway.json", []byte(goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Upstreams["kb"].Command[0]; got != "/etc/toolcanon/kb-server" {
		t.Errorf("relative command resolved to %q", got)
	}
	if cfg.Upstreams["logs"].BearerTokenEnv != "LOGS_TOKEN" || cfg.Identity.DefaultRun != "run-desktop" {
		t.Errorf("upstreams %+v identity %+v", cfg.Upstreams, cfg.Identity)
	}
	if cfg.Run.Limits.MaxCallsPerRun != 100 || cfg.Run.Limits.MaxCallsPerTool != 60 || cfg.Run.TTL != 2*time.Hour {
		t.Errorf("run %+v", cfg.Run)
	}
	if len(cfg.Tools) != 2 || cfg.Tools[0].Definition.Timeout != 30*time.Second || cfg.Tools[0].TTL != time.Hour ||
		cfg.Tools[0].Projector.Input["query"] != "question" || cfg.Tools[1].Projector.Limits.Total != 8192 {
		t.Errorf("tools %+v", cfg.Tools)
	}
	if cfg.Progress == nil || cfg.Progress.FactsTool != "progress_facts" || cfg.Progress.Threshold != 3 || len(cfg.HTTP.BearerTokens) != 1 {
		t.Errorf("progress %+v http %+v", cfg.Progress, cfg.HTTP)
	}
	if len(cfg.Version) != 16 {
		t.Errorf("version %q", cfg.Version)
	}
}

// edit replaces old with new in goodConfig, once.
func edit(t *testing.T, old, new string) string {
	t.Helper()
	if !strings.Contains(goodConfig, old) {
		t.Fatalf("goodConfig lacks %q", old)
	}
	return strings.Replace(goodConfig, old, new, 1)
}

func TestBadConfigsNameThePlaceAndTheFix(t *testing.T) {
	cases := []struct {
		name, doc   string
		line        int    // 0: not checked
		pointer     string // "" not checked
		msg, fixSub string
	}{
		{"syntax", edit(t, `"kb.read"]}]}`, `"kb.read"],}]}`), 37, "", "invalid JSON", "strict JSON"},
		{"comment", "{\n  // no\n}", 2, "", "invalid JSON", "no comments"},
		{"duplicate key", edit(t, `"risk": "low", "permissions"`, `"risk": "low", "risk": "high", "permissions"`), 19, "", "appears twice", "no repeated names"},
		{"unknown member", edit(t, `"ttl": "1h"`, `"tll": "1h"`), 24, "/tools/0/tll", "unknown member", `did you mean "ttl"?`},
		{"missing pin", edit(t, `"pin": "`+pinA+`",
      "definition": {
        "name": "kb.search"`, `"definition": {
        "name": "kb.search"`), 15, "/tools/0", `missing member "pin"`, "toolcanon gateway pin"},
		{"bad pin", edit(t, `"pin": "`+pinA, `"pin": "sha256:xyz`), 16, "/tools/0/pin", "not a pin", "gateway pin"},
		{"unknown upstream", edit(t, `"upstream": "logs"`, `"upstream": "log"`), 0, "/tools/1/upstream", `no upstream "log"`, "kb, logs"},
		{"open schema", edit(t, `"additionalProperties": false, "required": ["question"]`, `"required": ["question"]`), 0,
			"/tools/0/definition/input_schema", `"additionalProperties"`, "bounded subset"},
		{"string without bound", edit(t, `"minLength": 1, "maxLength": 256}}}
      },
      "projector": {"kind": "rag"`, `"minLength": 1}}}
      },
      "projector": {"kind": "rag"`), 0, "/tools/0/definition/input_schema/properties/question", "maxLength", "bounded subset"},
		{"ref", edit(t, `"question": {"type": "string"`, `"question": {"$ref": "#/x", "type": "string"`), 0,
			"/tools/0/definition/input_schema/properties/question", "$ref", "no $ref"},
		{"timeout", edit(t, `"timeout": "30s"`, `"timeout": "1.5s"`), 0, "/tools/0/definition/timeout", "duration", "whole seconds"},
		{"effect", edit(t, `"effect": "read", "risk": "low", "permissions"`, `"effect": "readonly", "risk": "low", "permissions"`), 0,
			"/tools/0/definition/effect", "not an effect", "read, write"},
		{"no upstream kind", edit(t, `"command": ["./kb-server", "--index", "main"], `, ``), 0, "/upstreams/kb", "exactly one of command and url", "either"},
		{"both upstream kinds", edit(t, `"env": {"KB_MODE": "ro"}`, `"env": {"KB_MODE": "ro"}, "url": "http://x/mcp"`), 0, "/upstreams/kb", "exactly one", "either"},
		{"bad url", edit(t, `"http://127.0.0.1:8931/mcp"`, `"ftp://x"`), 0, "/upstreams/logs/url", "not an http", "http://"},
		{"duplicate tool name", edit(t, `"name": "query_logs"`, `"name": "search_docs"`), 0, "/tools/1/name", "already used", "its own name"},
		{"no policy", strings.Replace(goodConfig, `"policy": {"grants": [{"principals": ["*"], "projects": ["support"], "allow": ["tool.call:*", "kb.read"]}]},`, "", 1),
			1, "/", `missing member "policy"`, "grants"},
		{"empty grants", edit(t, `"grants": [{"principals": ["*"], "projects": ["support"], "allow": ["tool.call:*", "kb.read"]}]`, `"grants": []`), 0,
			"/policy/grants", "1 to 64 grants", "denied"},
		{"bad project", edit(t, `"project": "support"`, `"project": "sup port"`), 0, "/identity/project", "not a project id", "[A-Za-z0-9_.-]"},
		{"projector over result limit", edit(t, `"limits": {"total": 8192}`, `"limits": {"total": 65536}`), 0, "/tools/1/projector/limits/total",
			"exceeds the run's max_result_bytes", "max_result_bytes"},
		{"input on mcp", edit(t, `"kind": "rag", "input"`, `"kind": "mcp", "input"`), 0, "/tools/0/projector/input", "rag and querylog", "kind"},
		{"limits do not fit", edit(t, `"max_result_bytes": 16384`, `"max_result_bytes": 16384, "max_record_bytes": 1024`), 0, "/run", "do not fit", "max_record_bytes"},
		{"token digest", edit(t, strings.Repeat("ab", 32), "abc"), 0, "/http/bearer_tokens/0/sha256", "64 hex", "never the token"},
		// A ttl shorter than the tool's timeout (plus projecting and
		// recording) used to load, and then every call was refused.
		{"tool ttl under its timeout", edit(t, `"ttl": "1h"`, `"ttl": "20s"`), 24, "/tools/0/ttl", "shorter than what a call of search_docs needs", "at least 50.03s"},
		{"tool ttl just under", edit(t, `"ttl": "1h"`, `"ttl": "50s"`), 24, "/tools/0/ttl", "timeout 30s", "lower the tool's timeout"},
		{"run ttl under a timeout", edit(t, `"ttl": "2h"`, `"ttl": "25s"`), 0, "/run/ttl", "shorter than what a call of query_logs needs", "at least 30.03s"},
		{"run token key in two places", edit(t, `"default_run": "run-desktop"`, `"default_run": "run-desktop", "run_token": {"audience": "a", "keys": [{"id": "k1", "key_file": "k", "key_env": "K"}]}`), 0,
			"/identity/run_token/keys/0", "exactly one of key_file and key_env", "key_file"},
		{"run token required not a bool", edit(t, `"default_run": "run-desktop"`, `"default_run": "run-desktop", "run_token": {"audience": "a", "keys": [{"id": "k1", "key_env": "K"}], "required": "yes"}`), 0,
			"/identity/run_token/required", "true or false", "required"},
		// The first format had neither audience nor key id.
		{"run token of the first format", edit(t, `"default_run": "run-desktop"`, `"default_run": "run-desktop", "run_token": {"key_file": "k", "required": true}`), 0,
			"/identity/run_token", "first format", "audience"},
		{"run token without audience", edit(t, `"default_run": "run-desktop"`, `"default_run": "run-desktop", "run_token": {"keys": [{"id": "k1", "key_env": "K"}]}`), 0,
			"/identity/run_token", `missing member "audience"`, "audience"},
		{"run token key without id", edit(t, `"default_run": "run-desktop"`, `"default_run": "run-desktop", "run_token": {"audience": "a", "keys": [{"key_env": "K"}]}`), 0,
			"/identity/run_token/keys/0", `missing member "id"`, "id"},
		{"run token key ids repeated", edit(t, `"default_run": "run-desktop"`, `"default_run": "run-desktop", "run_token": {"audience": "a", "keys": [{"id": "k1", "key_env": "K"}, {"id": "k1", "key_env": "L"}], "mint": "k1"}`), 0,
			"/identity/run_token/keys/1/id", "keys/0", "its own id"},
		{"run token keys without mint", edit(t, `"default_run": "run-desktop"`, `"default_run": "run-desktop", "run_token": {"audience": "a", "keys": [{"id": "k1", "key_env": "K"}, {"id": "k2", "key_env": "L"}]}`), 0,
			"/identity/run_token", `"mint" names`, "mint"},
		{"run token mint unknown", edit(t, `"default_run": "run-desktop"`, `"default_run": "run-desktop", "run_token": {"audience": "a", "keys": [{"id": "k1", "key_env": "K"}], "mint": "k2"}`), 0,
			"/identity/run_token/mint", `no key has the id "k2"`, "mint"},
		// The policy is asked for tool.call:<definition.name>: a grant of the
		// name agents call used to load and allow nothing.
		{"grant of an agent-facing name", edit(t, `"allow": ["tool.call:*", "kb.read"]`, `"allow": ["kb.read", "tool.call:search_docs"]`), 0,
			"/policy/grants/0/allow/1", `"tool.call:search_docs" names the tool as agents call it`, `write "tool.call:kb.search"`},
		{"not an object", `[]`, 1, "/", "expected an object", "{…}"},
		{"trailing data", goodConfig + "{}", 0, "", "after the end", "strict JSON"},
		{"invalid utf8", strings.Replace(goodConfig, "Query the logs.", "Query \xff logs.", 1), 0, "", "not valid UTF-8", "strict JSON"},
		{"lone surrogate", edit(t, `"Query the logs."`, `"Query \ud800 logs."`), 0, "", "surrogate", "strict JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := gateway.ParseConfig("gw.json", []byte(c.doc))
			var ce *gateway.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *ConfigError", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "gw.json:") || canonical.CodeOf(err) != canonical.CodeInvalidArgument {
				t.Errorf("error %q does not name the file, or has code %s", msg, canonical.CodeOf(err))
			}
			if c.line != 0 && ce.Line != c.line {
				t.Errorf("line %d, want %d: %s", ce.Line, c.line, msg)
			}
			if ce.Line == 0 {
				t.Errorf("no line: %s", msg)
			}
			if c.pointer != "" && ce.Pointer != c.pointer && !(c.pointer == "/" && ce.Pointer == "") {
				t.Errorf("pointer %q, want %q: %s", ce.Pointer, c.pointer, msg)
			}
			if !strings.Contains(msg, c.msg) || !strings.Contains(ce.Fix, c.fixSub) {
				t.Errorf("error %q lacks %q or a fix with %q", msg, c.msg, c.fixSub)
			}
		})
	}
}

func TestRunTokenKeyFileIsRelativeToTheConfig(t *testing.T) {
	doc := strings.Replace(goodConfig, `"default_run": "run-desktop"`, `"default_run": "run-desktop", "run_token": {"audience": "support-eu", `+
		`"keys": [{"id": "k2", "key_file": "keys/run.key"}, {"id": "k1", "key_env": "RUN_TOKEN_KEY_TEST"}], "mint": "k2", "required": true}`, 1)
	cfg, err := gateway.ParseConfig("/etc/toolcanon/gateway.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	rt := cfg.Identity.RunToken
	if rt == nil || rt.Audience != "support-eu" || len(rt.Keys) != 2 || rt.Keys[0].KeyFile != "/etc/toolcanon/keys/run.key" || rt.Mint != "k2" || !rt.Required {
		t.Fatalf("run token config = %+v", rt)
	}
	dir := t.TempDir()
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("too short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (gateway.RunTokenKeySource{ID: "k1", KeyFile: short}).Read(); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
		t.Fatalf("a short key: %v", err)
	}
	t.Setenv("RUN_TOKEN_KEY_TEST", strings.Repeat("e", gateway.MinRunTokenKey))
	if k, err := (gateway.RunTokenKeySource{ID: "k1", KeyEnv: "RUN_TOKEN_KEY_TEST"}).Read(); err != nil || len(k.Key) != gateway.MinRunTokenKey || k.ID != "k1" {
		t.Fatalf("a key from the environment: %+v, %v", k, err)
	}
}

func TestLoadConfigReadsTheFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := gateway.LoadConfig(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json: cannot read") {
		t.Fatalf("missing file: %v", err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`{"x":"`+strings.Repeat("a", gateway.MaxConfigBytes)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.LoadConfig(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("big file: %v", err)
	}
	// The pin command needs only the upstreams.
	pinOnly := filepath.Join(dir, "pin.json")
	if err := os.WriteFile(pinOnly, []byte(`{"upstreams": {"kb": {"url": "http://127.0.0.1:1/mcp"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.LoadConfig(pinOnly); err == nil {
		t.Fatal("a configuration without tools was accepted for serving")
	}
	cfg, err := gateway.LoadPinConfig(pinOnly)
	if err != nil || cfg.Upstreams["kb"].URL == "" || len(cfg.Tools) != 0 {
		t.Fatalf("pin config: %+v, %v", cfg, err)
	}
}

func TestStaticPolicy(t *testing.T) {
	p, err := gateway.NewStaticPolicy([]gateway.Grant{
		{Principals: []string{"alice"}, Projects: []string{"support"}, Allow: []string{"tool.call:kb.*", "kb.read"}},
		{Principals: []string{"*"}, Projects: []string{"*"}, Allow: []string{"tool.call:public.search"}, RequireApproval: []string{"tool.call:kb.delete"}},
	}, "v1")
	if err != nil {
		t.Fatal(err)
	}
	alice := registry.Principal{Subject: "alice", ExpiresAt: time.Now().Add(time.Hour)}
	bob := registry.Principal{Subject: "bob", ExpiresAt: time.Now().Add(time.Hour)}
	for _, c := range []struct {
		who     registry.Principal
		project string
		perm    string
		want    registry.Verdict
	}{
		{alice, "support", "tool.call:kb.search", registry.VerdictAllow},
		{alice, "support", "kb.read", registry.VerdictAllow},
		{alice, "billing", "tool.call:kb.search", registry.VerdictDeny},
		{bob, "support", "tool.call:kb.search", registry.VerdictDeny},
		{bob, "any", "tool.call:public.search", registry.VerdictAllow},
		{alice, "support", "tool.call:kb.delete", registry.VerdictRequireApproval},
		{alice, "support", "kb.write", registry.VerdictDeny},
	} {
		d, err := p.Authorize(context.Background(), c.project, c.who, c.perm)
		if err != nil || d.Verdict != c.want {
			t.Errorf("%s in %s asks %s: %s, %v; want %s", c.who.Subject, c.project, c.perm, d.Verdict, err, c.want)
		}
		if d.Verdict != registry.VerdictDeny && d.Fence != (registry.Fence{ProjectVersion: "static", RoleBindingVersion: "v1"}) {
			t.Errorf("fence %+v", d.Fence)
		}
	}
	if _, err := gateway.NewStaticPolicy([]gateway.Grant{{Allow: []string{"Bad Perm"}}}, "v1"); err == nil {
		t.Error("a malformed pattern was accepted")
	}
}

// FuzzParseConfig: whatever the file holds, parsing never panics, and a
// refusal names the file, a line and a fix.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(goodConfig))
	f.Add([]byte(`{"upstreams":{"a":{"command":["x"]}},"tools":[{"name":"t","pin":"\ud800"}]}`))
	f.Add([]byte(`{"a":[1,2,{"b":null}],"c":"\u00e9\ud83d\ude00"}`))
	f.Add([]byte("{\"upstreams\": {}, \n\"x\": 1e400}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := gateway.ParseConfig("fuzz.json", data)
		if err == nil {
			if cfg == nil || len(cfg.Tools) == 0 || len(cfg.Policy) == 0 {
				t.Fatalf("accepted an incomplete configuration: %+v", cfg)
			}
			return
		}
		var ce *gateway.ConfigError
		if !errors.As(err, &ce) || ce.File != "fuzz.json" || ce.Fix == "" || ce.Msg == "" {
			t.Fatalf("refusal without file, message or fix: %#v", err)
		}
		if ce.Line < 1 || ce.Column < 1 {
			t.Fatalf("refusal without a place: %v", err)
		}
	})
}

// The configuration the README shows is one the gateway accepts.
func TestReadmeConfigParses(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "## Put toolcanon in front of your MCP servers")
	_, block, ok2 := strings.Cut(after, "```json\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("the README has no configuration example")
	}
	cfg, err := gateway.ParseConfig("README.md", []byte(block))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Tools) != 2 || cfg.Progress == nil || cfg.Tools[1].Projector.Kind != "querylog" {
		t.Fatalf("%+v", cfg)
	}
}
