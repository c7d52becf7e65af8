package gitleakseval_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/internal/strictjson"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/internal/redacteval"
	"github.com/toolcanon/toolcanon/projectors/querylog"
	"github.com/toolcanon/toolcanon/projectors/redact"
	"github.com/toolcanon/toolcanon/projectors/redact/gitleakseval"
)

// data holds the evaluation sets (see redacteval.Load).
const data = "../testdata"

var (
	detOnce sync.Once
	det     *gitleakseval.Detector
	detErr  error
)

func detector(tb testing.TB) *gitleakseval.Detector {
	detOnce.Do(func() { det, detErr = gitleakseval.New() })
	if detErr != nil {
		tb.Fatal(detErr)
	}
	return det
}

var call = projectors.Call{ToolCallID: "call_1", Input: []byte(`{"topic":"checkout","query":"timeout"}`)}

func projector(tb testing.TB, extra ...redact.Detector) *querylog.Projector {
	cfg := querylog.DefaultConfig()
	cfg.Now = func() time.Time { return time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC) }
	cfg.Detectors = extra
	p, err := querylog.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func entries(msgs ...string) []byte {
	var b strings.Builder
	b.WriteString(`{"success":true,"entries":[`)
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"timestamp":"2026-03-01T09:30:00Z","level":"ERROR","message":`)
		b.Write(strictjson.AppendQuoted(nil, m))
		b.WriteByte('}')
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// TestRedactionCorpusWithGitleaks prints the figures of each corpus
// through the redactor and the query-log projector, without and with
// gitleaks' rules as an extra detector, and what gitleaks' rules catch
// that the redactor alone leaks. It holds them to nothing: it measures.
func TestRedactionCorpusWithGitleaks(t *testing.T) {
	d := detector(t)
	run, skipped := d.Rules()
	t.Logf("gitleaks v8.30.1 default rules: %d run, keyword-gated; %d without keywords left out", run, skipped)
	sets, err := redacteval.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets {
		for _, with := range []bool{false, true} {
			var extra []redact.Detector
			name := "redactor"
			if with {
				extra, name = []redact.Detector{d}, "redactor+gitleaks"
			}
			r := redact.New(extra...)
			proj := projector(t, extra...)
			f := redacteval.Measure(s, func(l string) string { return string(r.Append(nil, []byte(l))) }, nil)
			pf := redacteval.Measure(redacteval.Set{Planted: s.Planted}, func(l string) string {
				pr, err := proj.Project(context.Background(), call, entries(l))
				if err != nil {
					t.Fatal(err)
				}
				return string(pr.Result)
			}, nil)
			t.Logf("redaction corpus: %s: %s: %s; query-log projector: %d leak", name, s.Label(), f, pf.Leaks)
		}
	}
}

// rules' keywords cost about the same per byte.
func TestDetectorLinear(t *testing.T) {
	d := detector(t)
	unit := "aws AKIA github ghp_ slack xoxb- token=abc key secret password api "
	perByte := func(n int) float64 {
		msg := []byte(strings.Repeat(unit, n/len(unit)+1))
		start := time.Now()
		for range 3 {
			d.Spans(nil, msg[:min(len(msg), 64<<10)])
		}
		return float64(time.Since(start).Nanoseconds()) / float64(3*min(len(msg), 64<<10))
	}
	small, large := perByte(8<<10), perByte(64<<10)
	if large > 4*small {
		t.Errorf("%.1f ns/B at 64 KiB is over 4x the %.1f ns/B at 8 KiB", large, small)
	}
}

// BenchmarkQueryLogProjection projects 1 MiB of log entries (the lines of
// the first, round2 and heldout sets, planted and ordinary, in turn) with and without gitleaks' rules.
// `make eval-redaction` prints the ratio.
func BenchmarkQueryLogProjection(b *testing.B) {
	sets, err := redacteval.Load(data)
	if err != nil {
		b.Fatal(err)
	}
	var msgs []string
	for _, s := range sets {
		if s.Name != "first" && s.Name != "round2" && s.Name != "heldout" {
			continue // the lines measured since the first round
		}
		for _, p := range s.Planted {
			msgs = append(msgs, p.Line)
		}
		msgs = append(msgs, s.Ordinary...)
	}
	var batch []string
	for size, k := 0, 0; size < 1<<20; k++ {
		m := msgs[k%len(msgs)]
		batch = append(batch, m)
		size += len(m) + 64
	}
	raw := entries(batch...)
	for _, v := range []struct {
		name  string
		extra []redact.Detector
	}{{"redactor", nil}, {"redactor+gitleaks", []redact.Detector{detector(b)}}} {
		proj := projector(b, v.extra...)
		b.Run(fmt.Sprintf("%s/1MiB", v.name), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := proj.Project(context.Background(), call, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
