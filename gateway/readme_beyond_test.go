package gateway_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/gateway"
)

// readmeGateway is the README's gateway section, up to the next section.
func readmeGateway(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, gw, ok := strings.Cut(string(b), "## Put toolcanon in front of your MCP servers")
	if !ok {
		t.Fatal("the README has no gateway section")
	}
	gw, _, _ = strings.Cut(gw, "\n## ")
	return gw
}

// blocks returns the fenced blocks of kind lang in s, in order.
func blocks(s, lang string) []string {
	var out []string
	for {
		_, rest, ok := strings.Cut(s, "```"+lang+"\n")
		if !ok {
			return out
		}
		block, after, _ := strings.Cut(rest, "```")
		out = append(out, block)
		s = after
	}
}

// The README's sections on prompts, resources and completions, tasks and
// multi round-trip calls work as written: their configuration, added to
// the README's (with the test upstream as the kb server), opens, and every
// exchange they show gets the answer they show — each member shown, with
// its value; "…" stands for any text in an answer, and, as a whole value
// in a request, for what the last answer held under the same member.
func TestReadmeBeyondTools(t *testing.T) {
	gw := readmeGateway(t)
	_, sec, ok := strings.Cut(gw, "### Prompts, resources and completions")
	sec, _, ok2 := strings.Cut(sec, "### Routing headers")
	if !ok || !ok2 {
		t.Fatal("the README has no sections on prompts, tasks and multi round-trip calls")
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(blocks(gw, "json")[0]), &doc); err != nil {
		t.Fatal(err)
	}
	fragments := blocks(sec, "json")
	if len(fragments) != 2 {
		t.Fatalf("%d configuration blocks in the sections, want 2", len(fragments))
	}
	for _, f := range fragments {
		if strings.HasPrefix(strings.TrimSpace(f), "{") {
			var tool any
			if err := json.Unmarshal([]byte(f), &tool); err != nil {
				t.Fatalf("a tool entry: %v", err)
			}
			doc["tools"] = append(doc["tools"].([]any), tool)
			continue
		}
		var members map[string]any
		if err := json.Unmarshal([]byte("{"+f+"}"), &members); err != nil {
			t.Fatalf("a configuration fragment: %v\n%s", err, f)
		}
		for k, v := range members {
			doc[k] = v
		}
	}
	// The kb server is the test upstream (the README's pins are its
	// digests); the logs server is left out with its tool.
	logPath := filepath.Join(t.TempDir(), "up.log")
	// Its calls take 200 ms, as a real search does: a task's first answer
	// shows it working, as the README's does, and not already done (the
	// answer shows the task as its record stands when it is sent).
	kb := stdioUpstream(t, logPath, "")
	kb["env"].(map[string]any)["UPSTREAM_CALL_MS"] = "200"
	doc["upstreams"] = map[string]any{"kb": kb}
	var tools []any
	for _, e := range doc["tools"].([]any) {
		if e.(map[string]any)["upstream"] == "kb" {
			tools = append(tools, e)
		}
	}
	doc["tools"] = tools
	lg := openLive(t, configDoc(doc), gateway.OpenOptions{})
	srv := httptest.NewServer(lg.g.Handler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)

	exchanges := blocks(sec, "text")
	if len(exchanges) != 3 {
		t.Fatalf("%d exchanges in the sections, want 3", len(exchanges))
	}
	seen := map[string]string{}
	for _, ex := range exchanges {
		c := &rpcClient{t: t, url: srv.URL, token: "tc_example_token_replace_me", version: "2025-11-25",
			caps: map[string]any{"elicitation": map[string]any{}}}
		var pending map[string]any
		for _, line := range strings.Split(strings.TrimSpace(ex), "\n") {
			switch {
			case strings.HasPrefix(line, "# MCP "):
				c.version = strings.TrimPrefix(line, "# MCP ")
			case strings.HasPrefix(line, "→ "):
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "→ ")), &pending); err != nil {
					t.Fatalf("%s: %v", line, err)
				}
			case strings.HasPrefix(line, "← "):
				var want map[string]any
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "← ")), &want); err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				params, _ := fill(pending["params"], seen).(map[string]any)
				c.n = int(pending["id"].(float64)) - 1
				got := c.call(pending["method"].(string), params)
				var gotAny any
				if got.Error != nil {
					gotAny = map[string]any{"error": map[string]any{"code": float64(got.Error.Code), "message": got.Error.Message}}
				} else {
					var r any
					_ = json.Unmarshal(got.Result, &r)
					gotAny = map[string]any{"result": r}
				}
				delete(want, "jsonrpc")
				delete(want, "id")
				if why := shows(want, gotAny, "", seen); why != "" {
					b, _ := json.Marshal(gotAny)
					t.Fatalf("%s\n%s: %s\nthe gateway answered %s", pending["method"], line, why, b)
				}
			}
		}
	}
}

// fill replaces each "…" value in v by the value seen under its member.
func fill(v any, seen map[string]string) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if x == "…" {
				v[k] = seen[k]
			} else {
				v[k] = fill(x, seen)
			}
		}
	case []any:
		for i, x := range v {
			v[i] = fill(x, seen)
		}
	}
	return v
}

// shows reports why got does not show want ("" when it does): every member
// of want is in got with a value that shows it; arrays element by element;
// a string with "…" matches any text in its place, and the text it matched
// is kept in seen under its member.
func shows(want, got any, member string, seen map[string]string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return member + ": not an object"
		}
		for k, x := range w {
			y, ok := g[k]
			if !ok {
				return member + "." + k + ": missing"
			}
			if why := shows(x, y, k, seen); why != "" {
				return member + "." + why
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return member + ": not an array of " + string(rune('0'+len(w)%10)) + " elements"
		}
		for i := range w {
			if why := shows(w[i], g[i], member, seen); why != "" {
				return why
			}
		}
		return ""
	case string:
		g, ok := got.(string)
		if !ok {
			return member + ": not a string"
		}
		if w == "…" {
			seen[member] = g
			return ""
		}
		parts := strings.Split(w, "…")
		if !strings.HasPrefix(g, parts[0]) || !strings.HasSuffix(g, parts[len(parts)-1]) {
			return member + ": " + g
		}
		rest := g[len(parts[0]):]
		for _, p := range parts[1:] {
			i := strings.Index(rest, p)
			if i < 0 {
				return member + ": " + g
			}
			rest = rest[i+len(p):]
		}
		if len(parts) > 1 {
			seen[member] = g
		}
		return ""
	}
	if want != got {
		return member + ": differs"
	}
	return ""
}

// The README's latency figures can be made again as it says: the make
// target it names runs the benchmark it names, and the table has a row per
// mode.
func TestReadmeLatency(t *testing.T) {
	gw := readmeGateway(t)
	_, sec, ok := strings.Cut(gw, "### What the gateway adds to a call")
	if !ok {
		t.Fatal("the README has no latency section")
	}
	sec, _, _ = strings.Cut(sec, "\n### ")
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, target, ok := strings.Cut(string(mk), "\nbench-latency:\n")
	if !ok || !strings.Contains(sec, "`make bench-latency`") || !strings.Contains(sec, "`gateway/latency_bench_test.go`") {
		t.Fatal("the README names no make target, or the Makefile has none")
	}
	target, _, _ = strings.Cut(target, "\n\n")
	bench, err := os.ReadFile("latency_bench_test.go")
	if err != nil || !strings.Contains(target, "BenchmarkCallLatency") || !strings.Contains(string(bench), "func BenchmarkCallLatency(") {
		t.Fatalf("bench-latency runs %q, which the benchmark file does not define", target)
	}
	for _, row := range []string{"| `--stdio` |", "| stateless HTTP |", "| `--sessions` |"} {
		if !strings.Contains(sec, row) {
			t.Errorf("the table has no row %s", row)
		}
	}
}
