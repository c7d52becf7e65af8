package gateway_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/gateway"
)

// withHandles is goodConfig with a "handles" object.
func withHandles(t *testing.T, handles string) string {
	t.Helper()
	return edit(t, `"progress": {"threshold": 3},`, `"progress": {"threshold": 3},
  "handles": `+handles+`,`)
}

func TestConfigHandles(t *testing.T) {
	doc := withHandles(t, `{"flows": {"kb": ["logs"]}, "sinks": ["query_logs"]}`)
	cfg, err := gateway.ParseConfig("g.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Handles.Off || !slices.Equal(cfg.Handles.Flows["kb"], []string{"logs"}) || !slices.Equal(cfg.Handles.Sinks, []string{"query_logs"}) {
		t.Fatalf("handles = %+v", cfg.Handles)
	}
	grouped := strings.Replace(withHandles(t, `{"flows": {"docs": ["logs"]}}`), `"ttl": "1h"`, `"ttl": "1h", "group": "docs"`, 1)
	if cfg, err := gateway.ParseConfig("g.json", []byte(grouped)); err != nil || cfg.Tools[0].Group != "docs" {
		t.Fatalf("a tool's own group: %+v, %v", cfg, err)
	}
	if cfg, err := gateway.ParseConfig("g.json", []byte(withHandles(t, `{"off": true}`))); err != nil || !cfg.Handles.Off {
		t.Fatalf("handles off: %v", err)
	}
}

func TestConfigHandlesRefusals(t *testing.T) {
	for _, c := range []struct{ name, doc, pointer, msg string }{
		{"unknown group", withHandles(t, `{"flows": {"vault": ["logs"]}}`), "/handles/flows/vault", `no group "vault"`},
		{"unknown target", withHandles(t, `{"flows": {"kb": ["mail"]}}`), "/handles/flows/kb/0", "not valid"},
		{"sink not a tool", withHandles(t, `{"sinks": ["send_mail"]}`), "/handles/sinks/0", "not valid"},
		{"misspelt", withHandles(t, `{"sink": ["query_logs"]}`), "/handles/sink", "unknown member"},
		{"off as a string", withHandles(t, `{"off": "yes"}`), "/handles/off", "expected a boolean"},
		{"bad group name", edit(t, `"ttl": "1h"`, `"ttl": "1h", "group": "a b"`), "/tools/0/group", "not valid"},
	} {
		_, err := gateway.ParseConfig("g.json", []byte(c.doc))
		var ce *gateway.ConfigError
		if !errors.As(err, &ce) || ce.Pointer != c.pointer || !strings.Contains(ce.Msg, c.msg) || ce.Line == 0 {
			t.Errorf("%s: %v, want at %s %q", c.name, err, c.pointer, c.msg)
		}
	}
}
