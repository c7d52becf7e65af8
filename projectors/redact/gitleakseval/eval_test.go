package gitleakseval_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/internal/strictjson"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/querylog"
	"github.com/toolcanon/toolcanon/projectors/redact"
	"github.com/toolcanon/toolcanon/projectors/redact/gitleakseval"
)

// The corpora of package redact (see its corpus tests).
const data = "../testdata/"

var corpora = []struct {
	name              string
	planted, ordinary []string
}{
	{"whole corpus", []string{"planted.txt", "round2/planted.txt", "heldout/planted.txt"}, []string{"ordinary.txt", "round2/ordinary.txt", "heldout/ordinary.txt"}},
	{"held-out part", []string{"heldout/planted.txt"}, []string{"heldout/ordinary.txt"}},
	{"external (gitleaks examples)", []string{"gitleaks/true-positives.txt"}, []string{"gitleaks/false-positives.txt"}},
}

type planted struct {
	line    string
	secrets []string
}

func lines(tb testing.TB, path string) []string {
	tb.Helper()
	f, err := os.Open(data + path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func readPlanted(tb testing.TB, path string) []planted {
	var out []planted
	for _, l := range lines(tb, path) {
		parts := strings.Split(l, " ‖ ")
		out = append(out, planted{parts[0], parts[1:]})
	}
	return out
}

// leaked is package redact's leak test: the secret whole (a number standing
// alone), or of a secret of 10 bytes or more any run of half its length
// (at least 8 bytes), as it is or JSON-escaped.
func leaked(out, s string) bool {
	enc, _ := json.Marshal(s)
	for _, v := range []string{s, strings.Trim(string(enc), `"`)} {
		if strings.Trim(v, "0123456789") == "" {
			for off := 0; ; {
				i := strings.Index(out[off:], v)
				if i < 0 {
					break
				}
				i += off
				if (i == 0 || out[i-1] < '0' || out[i-1] > '9') && (i+len(v) == len(out) || out[i+len(v)] < '0' || out[i+len(v)] > '9') {
					return true
				}
				off = i + 1
			}
			continue
		}
		if strings.Contains(out, v) {
			return true
		}
		if len(v) >= 10 {
			w := max(8, len(v)/2)
			for k := 0; k+w <= len(v); k++ {
				if strings.Contains(out, v[k:k+w]) {
					return true
				}
			}
		}
	}
	return false
}

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
	for _, c := range corpora {
		for _, with := range []bool{false, true} {
			var extra []redact.Detector
			name := "redactor"
			if with {
				extra, name = []redact.Detector{d}, "redactor+gitleaks"
			}
			r := redact.New(extra...)
			proj := projector(t, extra...)
			secrets, leaks, projLeaks, nOrd, changed := 0, 0, 0, 0, 0
			nLines := 0
			for _, f := range c.planted {
				for _, p := range readPlanted(t, f) {
					nLines++
					out := string(r.Append(nil, []byte(p.line)))
					pr, err := proj.Project(context.Background(), call, entries(p.line))
					if err != nil {
						t.Fatal(err)
					}
					for _, s := range p.secrets {
						secrets++
						if leaked(out, s) {
							leaks++
						}
						if leaked(string(pr.Result), s) {
							projLeaks++
						}
					}
				}
			}
			for _, f := range c.ordinary {
				for _, l := range lines(t, f) {
					nOrd++
					if string(r.Append(nil, []byte(l))) != l {
						changed++
					}
				}
			}
			t.Logf("redaction corpus: %s: %s: planted %d lines, %d secrets, %d leaks (query-log projector: %d); ordinary %d lines, %d changed (%.2f%%)",
				name, c.name, nLines, secrets, leaks, projLeaks, nOrd, changed, 100*float64(changed)/float64(max(nOrd, 1)))
		}
	}
}

// The detector stays linear: 64 KiB and 1 MiB of a line that holds many
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

// BenchmarkQueryLogProjection projects 1 MiB of log entries (the corpora's
// lines, planted and ordinary, in turn) with and without gitleaks' rules.
// `make eval-redaction` prints the ratio.
func BenchmarkQueryLogProjection(b *testing.B) {
	var msgs []string
	for _, c := range corpora[:1] {
		for _, f := range c.planted {
			for _, p := range readPlanted(b, f) {
				msgs = append(msgs, p.line)
			}
		}
		for _, f := range c.ordinary {
			msgs = append(msgs, lines(b, f)...)
		}
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
