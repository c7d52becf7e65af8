package querylog_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/internal/projtest"
	"github.com/toolcanon/toolcanon/projectors/querylog"
	"github.com/toolcanon/toolcanon/projectors/redact"
)

var hostileCall = projectors.Call{ToolCallID: "call_1", Input: []byte(`{"topic":"checkout","query":"timeout"}`)}

func projectAll(tb testing.TB, p *querylog.Projector) func([][]byte) {
	return func(raw [][]byte) {
		if _, err := p.Project(context.Background(), hostileCall, raw[0]); err != nil {
			tb.Fatal(err)
		}
	}
}

// The query-log projector, end to end (validation, walk, redaction,
// mining, writing), costs the same per byte of response on 64 KiB and on
// 1 MiB of every hostile shape. A 256 KiB message of "pid=" repeated once
// took 6.7 s.
func TestQueryLogLinearOnHostileInput(t *testing.T) {
	cases := projtest.AsResponses(projtest.HostileCases(redact.Vocabulary()), projtest.LogResponse)
	projtest.CheckLinear(t, "querylog", cases, nil, projectAll(t, newProjector(t, nil)))
}

// A message longer than MaxMessageBytes is cut before it is redacted or
// mined, at its last separator before the bound: the result says
// truncated, and a secret that straddles the bound leaves no part behind.
func TestQueryLogMessageCap(t *testing.T) {
	p := newProjector(t, func(c *querylog.Config) { c.MaxMessageBytes = 1024 })
	head := strings.Repeat("retrying the payment call ", 39) // 1014 bytes
	secret := "AKIAIOSFODNN7EXAMPLE"
	for name, msg := range map[string]string{
		"straddling": head + secret + " and more text after it",
		"unbroken":   strings.Repeat("x", 900) + secret + strings.Repeat("y", 200),
		"escaped":    head + `\u0041KIAIOSFODNN7EXAMPLE`,
	} {
		raw := []byte(`{"success":true,"entries":[{"timestamp":"2026-03-01T09:30:00Z","level":"ERROR","message":"` + msg + `"}]}`)
		pr, err := p.Project(context.Background(), hostileCall, raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r := checkResult(t, pr.Result, 1<<20, []string{"AKIA", "EXAMPLE", "IOSFOD"})
		if !r.Truncated || r.MatchCount != 1 {
			t.Fatalf("%s: %s", name, pr.Result)
		}
	}
	// Under the bound nothing is cut.
	pr, err := p.Project(context.Background(), hostileCall,
		[]byte(`{"success":true,"entries":[{"timestamp":"2026-03-01T09:30:00Z","level":"ERROR","message":"short and whole"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := checkResult(t, pr.Result, 1<<20, nil); r.Truncated || r.Timeline[0].Message != "short and whole" {
		t.Fatalf("%s", pr.Result)
	}
	for _, bad := range []int{100, 2 << 20} {
		cfg := querylog.DefaultConfig()
		cfg.MaxMessageBytes = bad
		if _, err := querylog.New(cfg); err == nil {
			t.Errorf("MaxMessageBytes %d accepted", bad)
		}
	}
}

// BenchmarkQueryLogHostile reports the projector's MB/s on the slowest
// hostile shape at 1 MiB of response.
func BenchmarkQueryLogHostile(b *testing.B) {
	cases := projtest.AsResponses(projtest.HostileCases(redact.Vocabulary()), projtest.LogResponse)
	run := projectAll(b, newProjector(b, nil))
	worst, worstNs := projtest.Hostile{}, 0.0
	for _, c := range cases {
		in := c.Messages(projtest.LargeSize)
		if ns := projtest.PerByte(in, projtest.Bytes(in), 1, run); ns > worstNs {
			worst, worstNs = c, ns
		}
	}
	in := worst.Messages(projtest.LargeSize)
	b.Run("worst="+worst.Name, func(b *testing.B) {
		b.SetBytes(int64(projtest.Bytes(in)))
		for b.Loop() {
			run(in)
		}
	})
}
