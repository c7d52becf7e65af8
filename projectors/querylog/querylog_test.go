package querylog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/internal/projtest"
	"github.com/toolcanon/toolcanon/projectors/querylog"
)

var now = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func at(min int) time.Time { return now.Add(-time.Duration(min) * time.Minute) }

type result struct {
	SourceKind string `json:"source_kind"`
	Scope      struct {
		Topic           string `json:"topic"`
		Query           string `json:"query"`
		LookbackMinutes int    `json:"lookback_minutes"`
		From            string `json:"from"`
		To              string `json:"to"`
	} `json:"scope"`
	MatchCount int `json:"match_count"`
	Returned   int `json:"returned"`
	Patterns   []struct {
		Pattern   string `json:"pattern"`
		Count     int    `json:"count"`
		Level     string `json:"level"`
		FirstSeen string `json:"first_seen"`
		LastSeen  string `json:"last_seen"`
	} `json:"patterns"`
	Timeline []struct {
		TS      string `json:"ts"`
		Level   string `json:"level"`
		Message string `json:"message"`
	} `json:"timeline"`
	Truncated bool `json:"truncated"`
}

var allowedKeys = []string{"source_kind", "tool_call_id", "scope", "match_count", "returned", "patterns", "timeline", "truncated"}

func checkResult(t testing.TB, out []byte, total int, secrets []string) result {
	t.Helper()
	projtest.CheckResult(t, out, total, secrets, allowedKeys...)
	var r result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.Returned != len(r.Timeline) {
		t.Fatalf("returned %d, timeline %d", r.Returned, len(r.Timeline))
	}
	return r
}

func newProjector(t testing.TB, mod func(*querylog.Config)) *querylog.Projector {
	t.Helper()
	cfg := querylog.DefaultConfig()
	cfg.Now = func() time.Time { return now }
	if mod != nil {
		mod(&cfg)
	}
	p, err := querylog.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, p *querylog.Projector, src querylog.Source, input string) (projectors.Projection, []byte, error) {
	t.Helper()
	req, err := querylog.ParseRequest([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := src.Search(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := p.Project(context.Background(), projectors.Call{ToolCallID: "call_1", Input: []byte(input)}, raw)
	return pr, raw, err
}

func mockEntries() []querylog.MockEntry {
	var es []querylog.MockEntry
	for i := 0; i < 6; i++ {
		es = append(es, querylog.MockEntry{
			Topic: "checkout", Timestamp: at(50 - i*5), Level: "ERROR", Service: "checkout-api",
			Message:  fmt.Sprintf("payment timeout after %dms for order %d", 3000+i, 81720+i),
			Instance: "checkout-api-7d9f8b6c5d-x2k4p", Metrics: map[string]float64{"latency_ms": 3004.5},
		})
	}
	es = append(es,
		querylog.MockEntry{Topic: "checkout", Timestamp: at(20), Level: "warning", Service: "checkout-api",
			Message: "retrying payment timeout for order 81730 attempt 2", Instance: "i-0abc"},
		querylog.MockEntry{Topic: "checkout", Timestamp: at(90), Level: "ERROR", Message: "payment timeout outside the window"},
		querylog.MockEntry{Topic: "search", Timestamp: at(10), Level: "ERROR", Message: "payment timeout in another topic"},
	)
	return es
}

// Seed 003, scenario "Mock logs are projected".
func TestQueryLogMockLogsProjected(t *testing.T) {
	p := newProjector(t, nil)
	mock := &querylog.Mock{Entries: mockEntries(), Now: func() time.Time { return now }}
	pr, raw, err := run(t, p, mock, `{"topic":"checkout","query":"payment timeout","lookback_minutes":60}`)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte("latency_ms")) || !bytes.Contains(raw, []byte("checkout-api-7d9f8b6c5d-x2k4p")) {
		t.Fatal("fixture lost its instance and metrics fields")
	}
	r := checkResult(t, pr.Result, querylog.DefaultConfig().Limits.Total, []string{"checkout-api-7d9f8b6c5d-x2k4p", "latency_ms", "3004.5", "i-0abc", "instance", "metrics"})
	if pr.Evidence != canonical.EvidenceFound || r.SourceKind != "MOCK" {
		t.Fatalf("evidence %s kind %s", pr.Evidence, r.SourceKind)
	}
	if r.Scope.Topic != "checkout" || r.Scope.Query != "payment timeout" || r.Scope.LookbackMinutes != 60 ||
		r.Scope.From != "2026-03-01T09:00:00.000Z" || r.Scope.To != "2026-03-01T10:00:00.000Z" {
		t.Fatalf("scope %+v", r.Scope)
	}
	if r.MatchCount != 7 || r.Returned != 7 || r.Truncated {
		t.Fatalf("match_count %d returned %d truncated %v", r.MatchCount, r.Returned, r.Truncated)
	}
	if len(r.Patterns) != 2 || r.Patterns[0].Count != 6 || r.Patterns[0].Level != "ERROR" ||
		r.Patterns[0].Pattern != "payment timeout after <*> for order <*>" ||
		r.Patterns[0].FirstSeen != "2026-03-01T09:10:00.000Z" || r.Patterns[0].LastSeen != "2026-03-01T09:35:00.000Z" {
		t.Fatalf("patterns %+v", r.Patterns)
	}
	if r.Patterns[1].Level != "WARN" || r.Patterns[1].Count != 1 {
		t.Fatalf("pattern 1 %+v", r.Patterns[1])
	}
	if r.Timeline[0].TS != "2026-03-01T09:10:00.000Z" || r.Timeline[0].Message != "payment timeout after 3000ms for order 81720" {
		t.Fatalf("timeline %+v", r.Timeline[0])
	}
}

// Seed 003, scenario "Empty Mock result".
func TestQueryLogEmptyMockResult(t *testing.T) {
	p := newProjector(t, nil)
	mock := &querylog.Mock{Entries: mockEntries(), Now: func() time.Time { return now }}
	pr, _, err := run(t, p, mock, `{"topic":"checkout","query":"no such text","lookback_minutes":15}`)
	if err != nil {
		t.Fatal(err)
	}
	r := checkResult(t, pr.Result, 1<<20, nil)
	if pr.Evidence != canonical.NoEvidence || r.MatchCount != 0 || r.Returned != 0 || r.Truncated {
		t.Fatalf("%s %s", pr.Evidence, pr.Result)
	}
	if r.Scope.Topic != "checkout" || r.Scope.Query != "no such text" || r.Scope.LookbackMinutes != 15 ||
		r.Scope.From != "2026-03-01T09:45:00.000Z" || r.Scope.To != "2026-03-01T10:00:00.000Z" {
		t.Fatalf("scope not preserved: %+v", r.Scope)
	}
	if !bytes.Contains(pr.Result, []byte(`"patterns":[]`)) || !bytes.Contains(pr.Result, []byte(`"timeline":[]`)) {
		t.Fatalf("collections are not empty lists: %s", pr.Result)
	}
	// Default lookback and a response without a window: the scope comes
	// from the projector's clock.
	pr, err = p.Project(context.Background(), projectors.Call{ToolCallID: "c", Input: []byte(`{"topic":"t","query":"q"}`)}, []byte(`{"success":true,"entries":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	r = checkResult(t, pr.Result, 1<<20, nil)
	if pr.Evidence != canonical.NoEvidence || r.Scope.LookbackMinutes != 60 || r.Scope.From != "2026-03-01T09:00:00.000Z" {
		t.Fatalf("%s", pr.Result)
	}
}

// Seed 003, scenario "Legacy log error".
func TestQueryLogLegacyLogError(t *testing.T) {
	p := newProjector(t, nil)
	mock := &querylog.Mock{Fail: "upstream timeout talking to es-01.internal", Now: func() time.Time { return now }}
	pr, _, err := run(t, p, mock, `{"topic":"checkout","query":"x"}`)
	if canonical.CodeOf(err) != canonical.CodeProjectionFailed || pr.Result != nil {
		t.Fatalf("failure: %v %q", err, pr.Result)
	}
	call := projectors.Call{ToolCallID: "c", Input: []byte(`{"topic":"t","query":"q"}`)}
	for name, raw := range map[string]string{
		"malformed JSON":    `{"success":true,"entries":[{"timestamp":`,
		"not an object":     `[]`,
		"success missing":   `{"entries":[]}`,
		"success string":    `{"success":"true","entries":[]}`,
		"entries missing":   `{"success":true}`,
		"entries object":    `{"success":true,"entries":{}}`,
		"entry not object":  `{"success":true,"entries":[1]}`,
		"no timestamp":      `{"success":true,"entries":[{"level":"INFO","message":"m"}]}`,
		"bad timestamp":     `{"success":true,"entries":[{"timestamp":"yesterday","message":"m"}]}`,
		"no message":        `{"success":true,"entries":[{"timestamp":"2026-03-01T09:00:00Z"}]}`,
		"message not text":  `{"success":true,"entries":[{"timestamp":"2026-03-01T09:00:00Z","message":{}}]}`,
		"bad window":        `{"success":true,"window":{"from":"x","to":"y"},"entries":[]}`,
		"inverted window":   `{"success":true,"window":{"from":"2026-03-01T10:00:00Z","to":"2026-03-01T09:00:00Z"},"entries":[]}`,
		"trailing garbage":  `{"success":true,"entries":[]} x`,
		"empty":             ``,
		"truncated payload": `{"success":true,"entries":[{"timestamp":"2026-03-01T09:00:00Z","message":"m"}`,
		// Not strict JSON: what the rest of the module refuses, the
		// projector refuses too.
		"duplicate key":     `{"success":true,"entries":[{"timestamp":"2026-03-01T09:00:00Z","message":"m","message":"n"}]}`,
		"escaped duplicate": `{"success":true,"entries":[],"entrie\u0073":[]}`,
		"lone surrogate":    `{"success":true,"entries":[{"timestamp":"2026-03-01T09:00:00Z","message":"m\ud800"}]}`,
		"invalid UTF-8":     "{\"success\":true,\"entries\":[{\"timestamp\":\"2026-03-01T09:00:00Z\",\"message\":\"m\xff\"}]}",
	} {
		pr, err := p.Project(context.Background(), call, []byte(raw))
		if canonical.CodeOf(err) != canonical.CodeProjectionFailed || pr.Result != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Seed 003, scenario "Sensitive fields are present".
func TestQueryLogSensitiveFieldsPresent(t *testing.T) {
	secrets := []string{
		"checkout-api-7d9f8b6c5d-x2k4p", "i-0f1e2d3c4b5a69788", "cpu_seconds", "0.8731",
		"hunter2", "s3cr3t-Tok3n", "alice@example.com", "4811", "10.0.4.17", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln",
		"orders-db.prod.svc.cluster.local", "S3cretPw", "Svc.java", "sk_live_51HqExampleKey0000", "24511",
	}
	msgs := []string{
		"login failed password=hunter2 for user=alice@example.com from 10.0.4.17",
		`calling payments with {"api_token": "s3cr3t-Tok3n"} on pod checkout-api-7d9f8b6c5d-x2k4p`,
		"slow query SELECT * FROM orders WHERE customer_id = 4811 AND status = 'open' took 3s",
		"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln rejected",
		"connect postgres://app:S3cretPw@orders-db.prod.svc.cluster.local:5432/orders failed",
		"NullPointerException: boom\n\tat com.example.Svc.place(Svc.java:42)\n\tat com.example.Main.main(Main.java:7)",
		"stripe key sk_live_51HqExampleKey0000 used by worker[24511]: charge ok",
	}
	var es []querylog.MockEntry
	for i, m := range msgs {
		es = append(es, querylog.MockEntry{Topic: "checkout", Timestamp: at(30 - i), Level: "ERROR", Message: m,
			Instance: "i-0f1e2d3c4b5a69788", Metrics: map[string]float64{"cpu_seconds": 0.8731}})
	}
	p := newProjector(t, nil)
	mock := &querylog.Mock{Entries: es, Now: func() time.Time { return now }}
	pr, _, err := run(t, p, mock, `{"topic":"checkout","query":"*"}`)
	if err != nil {
		t.Fatal(err)
	}
	r := checkResult(t, pr.Result, querylog.DefaultConfig().Limits.Total, secrets)
	if r.MatchCount != len(msgs) || r.Returned != len(msgs) {
		t.Fatalf("%s", pr.Result)
	}
	for _, want := range []string{"<SECRET>", "<USER>", "<IP>", "<POD>", "<NUM>", "<STR>", "<HOST>", "<STACK>", "<PID>"} {
		if !bytes.Contains(pr.Result, []byte(want)) {
			t.Errorf("no %s in %s", want, pr.Result)
		}
	}
}

// Seed 003, scenario "Projection exceeds collection budget" (log side).
func TestQueryLogCollectionBudgetExceeded(t *testing.T) {
	var es []querylog.MockEntry
	for i := 0; i < 300; i++ {
		es = append(es, querylog.MockEntry{Topic: "t", Timestamp: at(59).Add(time.Duration(i) * time.Second), Level: "INFO",
			Message: fmt.Sprintf("event%d kind%d happened with a long tail %s", i%40, i, strings.Repeat("é✓x", 60))})
	}
	lim := projectors.Limits{Total: 9000, Collection: 3000, Item: 400, Items: 25, Text: 200}
	p := newProjector(t, func(c *querylog.Config) { c.Limits = lim })
	mock := &querylog.Mock{Entries: es, Now: func() time.Time { return now }}
	pr, _, err := run(t, p, mock, `{"topic":"t","query":"happened"}`)
	if err != nil {
		t.Fatal(err)
	}
	r := checkResult(t, pr.Result, lim.Total, nil)
	if !r.Truncated || r.MatchCount != 300 || r.Returned == 0 || r.Returned > lim.Items || len(r.Patterns) == 0 || len(r.Patterns) > lim.Items {
		t.Fatalf("truncated=%v match=%d returned=%d patterns=%d", r.Truncated, r.MatchCount, r.Returned, len(r.Patterns))
	}
	for _, name := range []string{`"patterns":[`, `"timeline":[`} {
		i := bytes.Index(pr.Result, []byte(name)) + len(name) - 1
		depth, j := 0, i
		for ; j < len(pr.Result); j++ {
			if pr.Result[j] == '[' {
				depth++
			} else if pr.Result[j] == ']' {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		if j-i+1 > lim.Collection {
			t.Fatalf("%s took %d bytes, budget %d", name, j-i+1, lim.Collection)
		}
	}
	for _, e := range r.Timeline {
		if len(e.Message) > lim.Text {
			t.Fatalf("message of %d bytes", len(e.Message))
		}
	}
}

// A request parsed from a buffer keeps its values when the buffer is
// reused: they used to be views of it.
func TestParseRequestOwnsItsBytes(t *testing.T) {
	buf := []byte(`{"topic":"checkout","query":"payment timeout"}`)
	r, err := querylog.ParseRequest(buf)
	if err != nil {
		t.Fatal(err)
	}
	copy(buf, `{"topic":"XXXXXXXX","query":"YYYYYYYYYYYYYYY"}`)
	if r.Topic != "checkout" || r.Query != "payment timeout" {
		t.Fatalf("reusing the buffer changed the request: %+v", r)
	}
}

func TestParseRequest(t *testing.T) {
	good := map[string]querylog.Request{
		`{"topic":"checkout","query":"timeout"}`:                       {Topic: "checkout", Query: "timeout", LookbackMinutes: 60},
		`{"topic":"a/b-c.d_e","query":"x y","lookback_minutes":10080}`: {Topic: "a/b-c.d_e", Query: "x y", LookbackMinutes: 10080},
		`{"lookback_minutes":1,"query":"\u00e9","topic":"T"}`:          {Topic: "T", Query: "é", LookbackMinutes: 1},
	}
	for in, want := range good {
		got, err := querylog.ParseRequest([]byte(in))
		if err != nil || got != want {
			t.Errorf("%s: %+v %v", in, got, err)
		}
	}
	for _, in := range []string{
		`{"topic":"t"}`, `{"query":"q"}`, `{"topic":"t","query":"q","extra":1}`, `{"topic":"t","query":"q","topic":"u"}`,
		`{"topic":"","query":"q"}`, `{"topic":"a b","query":"q"}`, `{"topic":"t","query":" "}`,
		`{"topic":"t","query":"q","lookback_minutes":0}`, `{"topic":"t","query":"q","lookback_minutes":10081}`,
		`{"topic":"t","query":"q","lookback_minutes":1.5}`, `{"topic":"t","query":"q","lookback_minutes":"5"}`,
		`{"topic":"t","query":"q","lookback_minutes":1e2}`, `{"topic":"` + strings.Repeat("a", 129) + `","query":"q"}`,
		`{"topic":"t","query":"` + strings.Repeat("a", 513) + `"}`, `[]`, `{`, `{"topic":1,"query":"q"}`,
	} {
		if _, err := querylog.ParseRequest([]byte(in)); !errors.Is(err, canonical.ErrInvalidInput) {
			t.Errorf("%s accepted: %v", in, err)
		}
	}
}

func Example() {
	mock := &querylog.Mock{
		Now: func() time.Time { return time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC) },
		Entries: []querylog.MockEntry{
			{Topic: "checkout", Timestamp: time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC), Level: "ERROR",
				Message: "db login failed password=hunter2 from 10.0.4.17", Instance: "checkout-7d9f8b6c5d-x2k4p"},
			{Topic: "checkout", Timestamp: time.Date(2026, 3, 1, 9, 40, 0, 0, time.UTC), Level: "ERROR",
				Message: "db login failed password=letmein from 10.0.4.18"},
		},
	}
	input := []byte(`{"topic":"checkout","query":"login failed","lookback_minutes":60}`)
	req, _ := querylog.ParseRequest(input)
	raw, _ := mock.Search(context.Background(), req)

	p, _ := querylog.New(querylog.DefaultConfig())
	pr, err := p.Project(context.Background(), projectors.Call{ToolCallID: "call_1", Input: input}, raw)
	fmt.Println(pr.Evidence, err)
	fmt.Println(string(pr.Result))
	// Output:
	// EVIDENCE_FOUND <nil>
	// {"source_kind":"MOCK","tool_call_id":"call_1","scope":{"topic":"checkout","query":"login failed","lookback_minutes":60,"from":"2026-03-01T09:00:00.000Z","to":"2026-03-01T10:00:00.000Z"},"match_count":2,"patterns":[{"pattern":"db login failed password=<SECRET> from <IP>","count":2,"level":"ERROR","first_seen":"2026-03-01T09:30:00.000Z","last_seen":"2026-03-01T09:40:00.000Z"}],"timeline":[{"ts":"2026-03-01T09:30:00.000Z","level":"ERROR","message":"db login failed password=<SECRET> from <IP>"},{"ts":"2026-03-01T09:40:00.000Z","level":"ERROR","message":"db login failed password=<SECRET> from <IP>"}],"returned":2,"truncated":false}
}

func TestQueryLogConcurrentUse(t *testing.T) {
	p := newProjector(t, nil)
	mock := &querylog.Mock{Entries: mockEntries(), Now: func() time.Time { return now }}
	raw, _ := mock.Search(context.Background(), querylog.Request{Topic: "checkout", Query: "*", LookbackMinutes: 60})
	call := projectors.Call{ToolCallID: "c", Input: []byte(`{"topic":"checkout","query":"*"}`)}
	want, err := p.Project(context.Background(), call, raw)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []byte)
	for g := 0; g < 8; g++ {
		go func() {
			var last []byte
			for i := 0; i < 30; i++ {
				pr, err := p.Project(context.Background(), call, raw)
				if err != nil || !bytes.Equal(pr.Result, want.Result) {
					last = append([]byte("x"), pr.Result...)
					break
				}
			}
			done <- last
		}()
	}
	for g := 0; g < 8; g++ {
		if bad := <-done; bad != nil {
			t.Fatalf("concurrent result differs: %s", bad)
		}
	}
}

// The entries are read during the walk that finds the other members, and
// may come before them: a failure of the response as a whole must still
// win over one of its entries, as when the entries are read after.
func TestQueryLogResponseChecksPrecedeEntryChecks(t *testing.T) {
	p := newProjector(t, nil)
	call := projectors.Call{ToolCallID: "c", Input: []byte(`{"topic":"t","query":"q"}`)}
	good := `{"timestamp":"2026-03-01T09:00:00Z","level":"INFO","message":"m"}`
	bad := `{"level":"INFO","message":"no timestamp"}`
	for _, c := range []struct{ raw, want string }{
		{`{"entries":[` + good + `,` + bad + `],"success":false}`, "source reported failure"},
		{`{"entries":[` + bad + `],"window":{"from":"x","to":"y"},"success":true}`, "malformed window"},
		{`{"entries":[` + good + `,` + bad + `],"success":true}`, "entry 2 has no timestamp"},
		{`{"success":true,"entries":[` + bad + `]}`, "entry 1 has no timestamp"},
		{`{"entries":{"a":[` + bad + `]},"success":true}`, "no entries array"},
	} {
		_, err := p.Project(context.Background(), call, []byte(c.raw))
		if canonical.CodeOf(err) != canonical.CodeProjectionFailed || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.raw, err, c.want)
		}
	}
	// Entries before the window and the success flag are projected as when
	// they come after.
	a := `{"entries":[` + good + `],"window":{"from":"2026-03-01T08:00:00Z","to":"2026-03-01T10:00:00Z"},"success":true}`
	b := `{"success":true,"window":{"from":"2026-03-01T08:00:00Z","to":"2026-03-01T10:00:00Z"},"entries":[` + good + `]}`
	pa, err1 := p.Project(context.Background(), call, []byte(a))
	pb, err2 := p.Project(context.Background(), call, []byte(b))
	if err1 != nil || err2 != nil || !bytes.Equal(pa.Result, pb.Result) || !strings.Contains(string(pa.Result), `"match_count":1`) {
		t.Fatalf("%v %v\n%s\n%s", err1, err2, pa.Result, pb.Result)
	}
}

// With the call's Masker, the timeline shows each masked value as its
// handle and the patterns group the messages that differ only in one,
// showing its kind.
func TestQueryLogMasksWithTheCallsMasker(t *testing.T) {
	p := newProjector(t, nil)
	var entries []string
	for i, pw := range []string{"hunter2", "s3cr3t!x", "Tr0ub4dor&3"} {
		entries = append(entries, fmt.Sprintf(`{"timestamp":"2026-03-01T09:3%d:00Z","level":"ERROR","message":"login failed password=%s for job 9f8e7d6c5b4a39281706f5e4d3c2b1a%d"}`, i, pw, i))
	}
	raw := []byte(`{"success":true,"entries":[` + strings.Join(entries, ",") + `]}`)
	h := projtest.Handles{}
	c := hostileCall
	c.Mask = h
	pr, err := p.Project(context.Background(), c, raw)
	if err != nil {
		t.Fatal(err)
	}
	res := checkResult(t, pr.Result, querylog.DefaultConfig().Limits.Total, []string{"hunter2", "s3cr3t!x", "Tr0ub4dor&3", "9f8e7d6c5b4a"})
	if len(res.Patterns) != 1 || res.Patterns[0].Count != 3 || res.Patterns[0].Pattern != "login failed password=<SECRET> for job <ID>" {
		t.Fatalf("patterns %+v", res.Patterns)
	}
	if len(res.Timeline) != 3 || len(h) != 6 {
		t.Fatalf("timeline %+v, %d values masked", res.Timeline, len(h))
	}
	for _, e := range res.Timeline {
		for k := 0; k < 2; k++ {
			i, _ := canonical.IndexHandle([]byte(e.Message))
			if i < 0 {
				t.Fatalf("no handle in %q", e.Message)
			}
			e.Message = e.Message[i+1:]
		}
	}
}

// An entry's keys written with escapes name the same fields as plain ones,
// and a key that differs from a path only once unescaped names no field.
func TestQueryLogEscapedKeys(t *testing.T) {
	p := newProjector(t, nil)
	call := projectors.Call{ToolCallID: "c", Input: []byte(`{"topic":"t","query":"q"}`)}
	window := `"window":{"from":"2026-03-01T08:00:00Z","to":"2026-03-01T10:00:00Z"},"success":true}`
	plain := `{"entries":[{"timestamp":"2026-03-01T09:00:00Z","level":"WARN","message":"disk full"}],` + window
	escaped := `{"entries":[{"time\u0073tamp":"2026-03-01T09:00:00Z","\u006cevel":"WARN","m\u0065ssage":"disk full"}],` + window
	pp, err1 := p.Project(context.Background(), call, []byte(plain))
	pe, err2 := p.Project(context.Background(), call, []byte(escaped))
	if err1 != nil || err2 != nil || !bytes.Equal(pp.Result, pe.Result) || !strings.Contains(string(pe.Result), `"level":"WARN"`) {
		t.Fatalf("%v %v\n%s\n%s", err1, err2, pp.Result, pe.Result)
	}
	other := `{"entries":[{"timestamp":"2026-03-01T09:00:00Z","message":"disk full","\u006cevels":"WARN"}],` + window
	po, err := p.Project(context.Background(), call, []byte(other))
	if err != nil || strings.Contains(string(po.Result), `"WARN"`) {
		t.Fatalf("%v\n%s", err, po.Result)
	}
}
