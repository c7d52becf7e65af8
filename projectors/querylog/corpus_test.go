package querylog_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/internal/strictjson"
	"github.com/toolcanon/toolcanon/projectors/querylog"
)

// The planted-secret corpus of package redact, through the projector: each
// line is one entry of a response, under both ways of reading entries —
// plain keys (one pass over each entry's members) and configured gjson
// paths — and no secret may appear in the result, patterns or timeline,
// whole, in part, or JSON-escaped.
func TestRedactionCorpusThroughTheProjector(t *testing.T) {
	type planted struct {
		class, line string
		secrets     []string
	}
	read := func(path string) []planted {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var corpus []planted
		class := ""
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			l := sc.Text()
			switch {
			case strings.HasPrefix(l, "## "):
				class = l[3:]
			case l == "" || strings.HasPrefix(l, "# "):
			default:
				parts := strings.Split(l, " ‖ ")
				corpus = append(corpus, planted{class, parts[0], parts[1:]})
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		return corpus
	}
	plain := newProjector(t, nil)
	nested := newProjector(t, func(c *querylog.Config) {
		c.Paths = querylog.Paths{Success: "ok", Entries: "data.hits", Timestamp: "fields.ts", Level: "fields.severity", Message: "fields.text"}
	})
	// Leaks fail the test on the corpora the rules were written from;
	// the held-out part and gitleaks' examples are measured only.
	for _, c := range []struct {
		name  string
		files []string
		held  bool
	}{
		{"first corpus", []string{"../redact/testdata/planted.txt"}, true},
		{"training part", []string{"../redact/testdata/round2/planted.txt"}, true},
		{"whole corpus", []string{"../redact/testdata/planted.txt", "../redact/testdata/round2/planted.txt", "../redact/testdata/heldout/planted.txt"}, false},
		{"held-out part", []string{"../redact/testdata/heldout/planted.txt"}, false},
		{"external (gitleaks examples)", []string{"../redact/testdata/gitleaks/true-positives.txt"}, false},
	} {
		var corpus []planted
		for _, f := range c.files {
			corpus = append(corpus, read(f)...)
		}
		for _, p := range []struct {
			name   string
			proj   *querylog.Projector
			render func(msg string) []byte
		}{
			{"plain keys", plain, func(msg string) []byte {
				return []byte(`{"success":true,"entries":[{"timestamp":"2026-03-01T09:30:00Z","level":"ERROR","message":` +
					string(strictjson.AppendQuoted(nil, msg)) + `}]}`)
			}},
			{"gjson paths", nested, func(msg string) []byte {
				return []byte(`{"ok":true,"data":{"hits":[{"fields":{"ts":"2026-03-01T09:30:00Z","severity":"error","text":` +
					string(strictjson.AppendQuoted(nil, msg)) + `}}]}}`)
			}},
		} {
			secrets, leakCount := 0, 0
			for _, pl := range corpus {
				pr, err := p.proj.Project(context.Background(), hostileCall, p.render(pl.line))
				if err != nil {
					t.Fatalf("%s: %v", pl.line, err)
				}
				out := string(pr.Result)
				for _, s := range pl.secrets {
					secrets++
					enc, _ := json.Marshal(s)
					if partlyLeaked(out, s) || partlyLeaked(out, strings.Trim(string(enc), `"`)) {
						leakCount++
						if c.held {
							t.Errorf("%s, %s: %q leaks\n  in:  %s\n  out: %s", p.name, pl.class, s, pl.line, out)
						}
					}
				}
			}
			t.Logf("redaction corpus: query-log projector (%s): %s: planted %d lines, %d secrets, %d leaks", p.name, c.name, len(corpus), secrets, leakCount)
		}
	}
}

// partlyLeaked is the leak test of package redact's corpus: the secret
// whole (numbers standing alone), or, of a secret of 10 bytes or more, any
// run of half its length (at least 8 bytes).
func partlyLeaked(out, s string) bool {
	if strings.Trim(s, "0123456789") == "" {
		for off := 0; ; {
			i := strings.Index(out[off:], s)
			if i < 0 {
				return false
			}
			i += off
			before := i == 0 || out[i-1] < '0' || out[i-1] > '9'
			after := i+len(s) == len(out) || out[i+len(s)] < '0' || out[i+len(s)] > '9'
			if before && after {
				return true
			}
			off = i + 1
		}
	}
	if strings.Contains(out, s) {
		return true
	}
	if len(s) < 10 {
		return false
	}
	w := max(8, len(s)/2)
	for k := 0; k+w <= len(s); k++ {
		if strings.Contains(out, s[k:k+w]) {
			return true
		}
	}
	return false
}
