package mcpresult_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/internal/projtest"
	"github.com/toolcanon/toolcanon/projectors/mcpresult"
	"github.com/toolcanon/toolcanon/projectors/querylog"
	"github.com/toolcanon/toolcanon/projectors/rag"
)

// secrets are planted in results; none may reach a projection. Each is one
// class of REDACTION.md, carried the way tools carry them.
var secrets = []string{
	"AKIAIOSFODNN7EXAMPLE",
	"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJl",
	"abc123.def456-EXAMPLE",
	"hunter2",
	"S3cret",
	"ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
	"10.251.73.220",
	"alice.smith+ops@example.com",
	"MIIEowIBAAKCAQEA7nNqKb3pK0xZ8vXq1oQ9mN5c2YtL7uW3sE4rT6yH8jF0gD2aB1cV",
	"k-12345EXAMPLE",
	"4111 1111 1111 1111",
}

// secretText carries every secret in a log-like text.
const secretText = "login ok for alice.smith+ops@example.com from 10.251.73.220 key=AKIAIOSFODNN7EXAMPLE\n" +
	"aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY Authorization: Bearer abc123.def456-EXAMPLE\n" +
	"token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJl password=hunter2 dsn postgres://app:S3cret@db:5432/orders\n" +
	"push with ghp_0123456789abcdefghijklmnopqrstuvwxyzAB card 4111 1111 1111 1111\n" +
	"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7nNqKb3pK0xZ8vXq1oQ9mN5c2YtL7uW3sE4rT6yH8jF0gD2aB1cV\n-----END RSA PRIVATE KEY-----\n\"api_key\": \"k-12345EXAMPLE\""

var call = projectors.Call{RunID: "run-1", ToolCallID: "call_1", Tool: "search", Input: []byte(`{"q":"refunds"}`)}

func newProjector(t testing.TB, lim projectors.Limits) *mcpresult.Projector {
	t.Helper()
	cfg := mcpresult.DefaultConfig()
	cfg.Limits = lim
	p, err := mcpresult.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func textResult(texts ...string) []byte {
	type block struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	r := struct {
		Content []block `json:"content"`
	}{Content: []block{}}
	for _, t := range texts {
		r.Content = append(r.Content, block{"text", t})
	}
	return projtest.Marshal(r)
}

func structuredResult(v any) []byte {
	return projtest.Marshal(map[string]any{
		"content":           []any{map[string]any{"type": "text", "text": "see structured content"}},
		"structuredContent": v,
	})
}

type projected struct {
	ToolCallID string          `json:"tool_call_id"`
	Content    json.RawMessage `json:"content"`
	Truncated  bool            `json:"truncated"`
}

// project runs p and checks what every projection must be.
func project(t *testing.T, p projectors.Projector, total int, raw []byte) (projected, canonical.Evidence) {
	t.Helper()
	out, err := p.Project(context.Background(), call, raw)
	if err != nil {
		t.Fatalf("project: %v", err)
	}
	projtest.CheckResult(t, out.Result, total, secrets, "tool_call_id", "content", "truncated")
	if !utf8.Valid(out.Result) {
		t.Fatalf("result is not UTF-8: %q", out.Result)
	}
	var got projected
	if err := json.Unmarshal(out.Result, &got); err != nil {
		t.Fatal(err)
	}
	if got.ToolCallID != call.ToolCallID {
		t.Fatalf("tool_call_id = %q", got.ToolCallID)
	}
	return got, out.Evidence
}

func TestStructuredContentStaysJSON(t *testing.T) {
	p := newProjector(t, projectors.DefaultLimits())
	raw := structuredResult(map[string]any{
		"hits":  []any{map[string]any{"id": "doc-7", "title": "Refunds", "score": 0.91}},
		"total": 1, "exact": true, "next": nil,
	})
	got, ev := project(t, p, projectors.DefaultLimits().Total, raw)
	if ev != canonical.EvidenceFound || got.Truncated {
		t.Fatalf("evidence %s truncated %v", ev, got.Truncated)
	}
	want := `{"exact":true,"hits":[{"id":"doc-7","score":0.91,"title":"Refunds"}],"next":null,"total":1}`
	if string(got.Content) != want {
		t.Fatalf("content = %s, want %s", got.Content, want)
	}
}

func TestSecretsNeverReachTheProjection(t *testing.T) {
	p := newProjector(t, projectors.DefaultLimits())
	total := projectors.DefaultLimits().Total
	for name, raw := range map[string][]byte{
		"text": textResult(secretText),
		"structured": structuredResult(map[string]any{
			"log": secretText, "password": "hunter2", "db": map[string]any{"dsn": "postgres://app:S3cret@db:5432/orders"},
			"credentials": map[string]any{"id": "AKIAIOSFODNN7EXAMPLE"}, "api_keys": []any{"k-12345EXAMPLE"},
			"alice.smith+ops@example.com": "owner", "pin": 4111,
			"lines": strings.Split(secretText, "\n"),
		}),
		"json text": textResult(string(projtest.Marshal(map[string]any{"Authorization": "Bearer abc123.def456-EXAMPLE", "note": secretText}))),
	} {
		t.Run(name, func(t *testing.T) {
			got, _ := project(t, p, total, raw)
			if name == "structured" && !bytes.Contains(got.Content, []byte(`"password":"<SECRET>"`)) {
				t.Errorf("a secret member keeps no placeholder: %s", got.Content)
			}
			if !bytes.Contains(got.Content, []byte("<")) {
				t.Errorf("nothing was redacted: %s", got.Content)
			}
		})
	}
}

func TestTextIsCutAtARuneBoundary(t *testing.T) {
	lim := projectors.Limits{Total: 300, Collection: 128, Item: 64, Items: 4, Text: 32}
	p := newProjector(t, lim)
	text := strings.Repeat("日本語のテキスト", 100)
	got, ev := project(t, p, lim.Total, textResult(text))
	var s string
	if err := json.Unmarshal(got.Content, &s); err != nil {
		t.Fatal(err)
	}
	if ev != canonical.EvidenceFound || !got.Truncated || s == "" || !strings.HasPrefix(text, s) {
		t.Fatalf("evidence %s truncated %v content %q", ev, got.Truncated, s)
	}
}

func TestBudgetsBoundEveryLevel(t *testing.T) {
	lim := projectors.Limits{Total: 1024, Collection: 400, Item: 100, Items: 3, Text: 16}
	cfg := mcpresult.Config{Limits: lim, MaxDepth: 3, MaxMembers: 4}
	p, err := mcpresult.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deep := map[string]any{"a": map[string]any{"b": map[string]any{"c": map[string]any{"d": 1}}}}
	raw := structuredResult(map[string]any{
		"0list":   []any{"x", "y", "z", "w", "v"},
		"1long":   strings.Repeat("abcdefgh", 10),
		"2deep":   deep,
		"3first":  1,
		"4fifth":  2, // over MaxMembers
		"5sixth":  3,
		"6items":  []any{strings.Repeat("q", 300)},
		"7object": map[string]any{"k": "v"},
	})
	got, _ := project(t, p, lim.Total, raw)
	var m map[string]any
	if err := json.Unmarshal(got.Content, &m); err != nil {
		t.Fatal(err)
	}
	if !got.Truncated || len(m) != 4 {
		t.Fatalf("truncated %v, %d members: %s", got.Truncated, len(m), got.Content)
	}
	if l := m["0list"].([]any); len(l) != 3 {
		t.Errorf("list kept %d items, want 3", len(l))
	}
	if s := m["1long"].(string); s != "abcdefghabcdefgh" {
		t.Errorf("long text = %q", s)
	}
	if d := m["2deep"].(map[string]any)["a"].(map[string]any)["b"]; d != nil {
		t.Errorf("depth 3 kept %v", d)
	}
}

func TestTinyTotalBudgetIsResultTooLarge(t *testing.T) {
	p := newProjector(t, projectors.Limits{Total: projectors.MinTotal, Collection: 128, Item: 64, Items: 2, Text: 8})
	id := strings.Repeat("x", 250)
	_, err := p.Project(context.Background(), projectors.Call{ToolCallID: id}, textResult("hello"))
	if canonical.CodeOf(err) != canonical.CodeResultTooLarge {
		t.Fatalf("err = %v, want RESULT_TOO_LARGE", err)
	}
}

func TestOneJSONTextBlockIsJSON(t *testing.T) {
	p := newProjector(t, projectors.DefaultLimits())
	got, _ := project(t, p, projectors.DefaultLimits().Total, textResult(` {"rows":[1,2],"user":"bob"}`))
	if string(got.Content) != `{"rows":[1,2],"user":"<USER>"}` {
		t.Fatalf("content = %s", got.Content)
	}
	// Two blocks are text, joined.
	got, _ = project(t, p, projectors.DefaultLimits().Total, textResult(`{"a":1}`, "second"))
	if string(got.Content) != `"{\"a\":1}\nsecond"` {
		t.Fatalf("content = %s", got.Content)
	}
}

func TestEmptyResultIsNoEvidence(t *testing.T) {
	p := newProjector(t, projectors.DefaultLimits())
	for name, raw := range map[string][]byte{
		"no content":      []byte(`{"content":[]}`),
		"blank text":      textResult(" \n\t"),
		"empty object":    structuredResult(map[string]any{}),
		"empty array":     structuredResult([]any{}),
		"blank string":    structuredResult("   "),
		"json text empty": textResult(" [ ] "),
	} {
		got, ev := project(t, p, projectors.DefaultLimits().Total, raw)
		if ev != canonical.NoEvidence || string(got.Content) != "null" || got.Truncated {
			t.Errorf("%s: evidence %s content %s truncated %v", name, ev, got.Content, got.Truncated)
		}
	}
}

func TestMalformedResultsFail(t *testing.T) {
	p := newProjector(t, projectors.DefaultLimits())
	for raw, code := range map[string]canonical.Code{
		`{"content":[{"type":"text","text":"x"}],"isError":true}`: canonical.CodeExecutionFailed,
		`not json`:                               canonical.CodeProjectionFailed,
		`[1,2]`:                                  canonical.CodeProjectionFailed,
		`{"structured":1}`:                       canonical.CodeProjectionFailed,
		`{"content":{"type":"text"}}`:            canonical.CodeProjectionFailed,
		`{"content":[{"type":"text","text":1}]}`: canonical.CodeProjectionFailed,
		`{"content":["text"]}`:                   canonical.CodeProjectionFailed,
	} {
		if _, err := p.Project(context.Background(), call, []byte(raw)); canonical.CodeOf(err) != code {
			t.Errorf("%s: err = %v, want %s", raw, err, code)
		}
	}
}

// A repeated member name makes a result ambiguous (readers disagree on which
// value wins): it is not strict JSON, so the projection fails.
func TestRepeatedNamesFail(t *testing.T) {
	p := newProjector(t, projectors.DefaultLimits())
	raw := []byte(`{"content":[],"structuredContent":{"a":1,"a":2}}`)
	if _, err := p.Project(context.Background(), call, raw); canonical.CodeOf(err) != canonical.CodeProjectionFailed {
		t.Fatalf("repeated name: %v, want PROJECTION_FAILED", err)
	}
}

// Names that redaction makes alike keep the first.
func TestAlikeNamesKeepTheFirst(t *testing.T) {
	p := newProjector(t, projectors.DefaultLimits())
	raw := []byte(`{"content":[],"structuredContent":{"a":1,"x alice@example.com":3,"x bob@example.com":4}}`)
	got, _ := project(t, p, projectors.DefaultLimits().Total, raw)
	if string(got.Content) != `{"a":1,"x <EMAIL>":3}` || !got.Truncated {
		t.Fatalf("content %s truncated %v", got.Content, got.Truncated)
	}
}

// A result of megabytes costs time in proportion to its size, and its
// projection stays within the budget.
func TestLargeResultIsLinearAndBounded(t *testing.T) {
	p := newProjector(t, projectors.DefaultLimits())
	line := "GET /api/orders?id=42 from 10.0.0.7 took 12ms password=hunter2 ok\n"
	small := textResult(strings.Repeat(line, 1<<12)) // ~256 KiB
	large := textResult(strings.Repeat(line, 1<<14)) // ~1 MiB
	structured := structuredResult(map[string]any{"rows": strings.Split(strings.Repeat(line, 1<<14), "\n"),
		"one": strings.Repeat(line, 1<<14)})
	for _, raw := range [][]byte{large, structured} {
		got, _ := project(t, p, projectors.DefaultLimits().Total, raw)
		if !got.Truncated {
			t.Fatal("a 1 MiB result was not marked truncated")
		}
	}
	best := func(raw []byte) time.Duration {
		d := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			if _, err := p.Project(context.Background(), call, raw); err != nil {
				t.Fatal(err)
			}
			d = min(d, time.Since(start))
		}
		return d
	}
	ds, dl := best(small), best(large)
	if ratio := float64(dl) / float64(ds); ratio > 12 {
		t.Fatalf("4x the input took %.1fx the time (%v vs %v)", ratio, dl, ds)
	}
}

// Only a window of a long text is redacted; a secret the window edge would
// cut in two is left out whole, even when redaction shrinks the text before
// it so much that the edge falls inside what is shown.
func TestWindowEdgeNeverSplitsASecret(t *testing.T) {
	lim := projectors.Limits{Total: 1024, Collection: 512, Item: 256, Items: 4, Text: 64}
	p := newProjector(t, lim)
	jwt := "eyJhbGciOiJIUzI1NiJ9." + strings.Repeat("eyJzdWIiOiJ0ZXN0In0", 10) + ".c2lnbmF0dXJl"
	var b strings.Builder
	for b.Len()+len(jwt)+1 < 4096-8 {
		b.WriteString(jwt + " ")
	}
	b.WriteString(strings.Repeat("x", 4096-9-b.Len())) // the edge falls after "10.251.7"
	b.WriteString(" 10.251.73.220 " + strings.Repeat("tail ", 2000))
	for _, raw := range [][]byte{textResult(b.String()), structuredResult(map[string]any{"log": b.String()})} {
		got, _ := project(t, p, lim.Total, raw)
		if bytes.Contains(got.Content, []byte("10.251")) || bytes.Contains(got.Content, []byte("eyJzdWIiOiJ0ZXN0In0")) || !got.Truncated {
			t.Fatalf("truncated %v: %s", got.Truncated, got.Content)
		}
	}
}

func TestWrapFeedsRAG(t *testing.T) {
	inner, err := rag.New(rag.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	p, err := mcpresult.Wrap(inner, map[string]string{"query": "question"})
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"success": true, "blocks": []any{
		map[string]any{"source": "kb", "document_id": "refunds-101", "title": "Refunds", "excerpt": "Refunds above 500 EUR need a second approver.", "score": 0.9},
	}}
	c := call
	c.Input = []byte(`{"limit":3,"question":"refund approval"}`)
	for name, raw := range map[string][]byte{
		"structured": structuredResult(body),
		"json text":  textResult(string(projtest.Marshal(body))),
	} {
		out, err := p.Project(context.Background(), c, raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := `{"query":"refund approval","tool_call_id":"call_1","evidence":[{"source":"kb","document_id":"refunds-101","title":"Refunds","excerpt":"Refunds above 500 EUR need a second approver."}],"returned":1,"truncated":false}`
		if out.Evidence != canonical.EvidenceFound || string(out.Result) != want {
			t.Fatalf("%s: %s %s", name, out.Evidence, out.Result)
		}
	}
	if _, err := p.Project(context.Background(), c, textResult("plain words")); canonical.CodeOf(err) != canonical.CodeProjectionFailed {
		t.Fatalf("text without JSON: err = %v", err)
	}
	c.Input = []byte(`{"limit":3}`)
	if _, err := p.Project(context.Background(), c, structuredResult(body)); canonical.CodeOf(err) != canonical.CodeInvalidInput {
		t.Fatalf("input without the mapped argument: err = %v", err)
	}
}

func TestWrapFeedsQueryLog(t *testing.T) {
	cfg := querylog.DefaultConfig()
	cfg.Now = func() time.Time { return time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC) }
	inner, err := querylog.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := mcpresult.Wrap(inner, map[string]string{"topic": "service", "query": "q"})
	if err != nil {
		t.Fatal(err)
	}
	c := call
	c.Input = []byte(`{"q":"timeout","service":"checkout"}`)
	body := map[string]any{"success": true, "entries": []any{
		map[string]any{"timestamp": "2026-03-01T09:12:03.125Z", "level": "ERROR", "message": "payment timeout calling 10.251.73.220 password=hunter2"},
	}}
	out, err := p.Project(context.Background(), c, structuredResult(body))
	if err != nil {
		t.Fatal(err)
	}
	projtest.CheckResult(t, out.Result, cfg.Limits.Total, secrets,
		"source_kind", "tool_call_id", "scope", "match_count", "returned", "patterns", "timeline", "truncated")
	if out.Evidence != canonical.EvidenceFound || !bytes.Contains(out.Result, []byte(`"topic":"checkout"`)) ||
		!bytes.Contains(out.Result, []byte(`"tool_call_id":"`+c.ToolCallID+`"`)) {
		t.Fatalf("%s %s", out.Evidence, out.Result)
	}
}

func TestConfigIsValidated(t *testing.T) {
	for _, cfg := range []mcpresult.Config{
		{Limits: projectors.Limits{}},
		{Limits: projectors.DefaultLimits(), MaxDepth: 99},
		{Limits: projectors.DefaultLimits(), MaxMembers: -1},
	} {
		if _, err := mcpresult.New(cfg); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
			t.Errorf("New(%+v) err = %v", cfg, err)
		}
	}
	if _, err := mcpresult.Wrap(nil, nil); err == nil {
		t.Error("Wrap(nil) accepted")
	}
	inner, _ := rag.New(rag.DefaultConfig())
	if _, err := mcpresult.Wrap(inner, map[string]string{"query": "a\"b"}); err == nil {
		t.Error("an argument name that needs escaping was accepted")
	}
}

// Random edits of valid results never panic and never break the bounds.
func TestMutatedResults(t *testing.T) {
	lim := projectors.Limits{Total: 600, Collection: 300, Item: 120, Items: 5, Text: 40}
	p := newProjector(t, lim)
	seeds := [][]byte{
		textResult(secretText), structuredResult(map[string]any{"a": []any{1, "two", map[string]any{"password": "hunter2"}}}),
		textResult(`{"rows":[{"x":"10.251.73.220"}]}`),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		raw := projtest.Mutate(r, seeds[i%len(seeds)], true)
		out, err := p.Project(context.Background(), call, raw)
		if err != nil {
			if !canonical.CodeOf(err).Valid() {
				t.Fatalf("%q: error without a code: %v", raw, err)
			}
			continue
		}
		if len(out.Result) > lim.Total || !projectors.Valid(out.Result) || !out.Evidence.Ready() {
			t.Fatalf("%q: %s %q", raw, out.Evidence, out.Result)
		}
	}
}

func ExampleProjector() {
	p, _ := mcpresult.New(mcpresult.DefaultConfig())
	raw := []byte(`{"content":[{"type":"text","text":"..."}],
		"structuredContent":{"orders":[{"id":"o-81723","status":"refunded"}],"db_password":"hunter2"}}`)
	out, _ := p.Project(context.Background(), projectors.Call{ToolCallID: "call_8f2k"}, raw)
	fmt.Println(out.Evidence)
	fmt.Println(string(out.Result))
	// Output:
	// EVIDENCE_FOUND
	// {"tool_call_id":"call_8f2k","content":{"orders":[{"id":"o-81723","status":"refunded"}],"db_password":"<SECRET>"},"truncated":false}
}

// The call's Masker writes every masked value: in text, in structured
// content (a secret member's whole value, decoded) and in an embedded
// resource's text, and a handle already in the result passes unchanged.
func TestCallMaskerWritesEveryMaskedValue(t *testing.T) {
	p, err := mcpresult.New(mcpresult.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	const prior = "<SECRET:AbCd_-12>"
	for name, c := range map[string]struct {
		raw    []byte
		values []string
	}{
		"text": {textResult("login password=hunter2 token " + prior + " from 10.1.2.3"), []string{"hunter2", "10.1.2.3"}},
		"structured": {structuredResult(map[string]any{"password": "hunter2", "note": "id 9f8e7d6c5b4a39281706f5e4d3c2b1a0 " + prior}),
			[]string{"hunter2", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"}},
		"resource": {[]byte(`{"content":[{"type":"resource","resource":{"uri":"file:///n.txt","text":"password=hunter2 ` + prior + `"}}]}`),
			[]string{"hunter2"}},
	} {
		t.Run(name, func(t *testing.T) {
			h := projtest.Handles{}
			c2 := call
			c2.Mask = h
			out, err := p.Project(context.Background(), c2, c.raw)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range c.values {
				if bytes.Contains(out.Result, []byte(v)) {
					t.Errorf("%q survives: %s", v, out.Result)
				}
				found := false
				for handle, got := range h {
					found = found || got == v && bytes.Contains(out.Result, []byte(handle))
				}
				if !found {
					t.Errorf("no handle stands for %q: %s (%v)", v, out.Result, h)
				}
			}
			if !bytes.Contains(out.Result, []byte(prior)) {
				t.Errorf("the handle in the result did not pass unchanged: %s", out.Result)
			}
		})
	}
}
