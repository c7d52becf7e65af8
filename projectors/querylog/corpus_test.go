package querylog_test

import (
	"context"
	"testing"

	"github.com/toolcanon/toolcanon/internal/strictjson"
	"github.com/toolcanon/toolcanon/projectors/internal/redacteval"
	"github.com/toolcanon/toolcanon/projectors/querylog"
)

// The planted-secret corpus of package redact, through the projector: each
// line is one entry of a response, under both ways of reading entries —
// plain keys (one pass over each entry's members) and configured gjson
// paths — and no secret may appear in the result, patterns or timeline,
// whole, in part, or JSON-escaped.
func TestRedactionCorpusThroughTheProjector(t *testing.T) {
	sets, err := redacteval.Load("../redact/testdata")
	if err != nil {
		t.Fatal(err)
	}
	plain := newProjector(t, nil)
	nested := newProjector(t, func(c *querylog.Config) {
		c.Paths = querylog.Paths{Success: "ok", Entries: "data.hits", Timestamp: "fields.ts", Level: "fields.severity", Message: "fields.text"}
	})
	for _, s := range sets {
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
			project := func(msg string) string {
				pr, err := p.proj.Project(context.Background(), hostileCall, p.render(msg))
				if err != nil {
					t.Fatalf("%s: %v", msg, err)
				}
				return string(pr.Result)
			}
			var log func(string, ...any)
			if s.Training {
				log = t.Errorf
			}
			f := redacteval.Measure(redacteval.Set{Name: s.Name, Planted: s.Planted}, project, log)
			t.Logf("redaction corpus: query-log projector (%s): %s: planted %d lines, %d secrets, %d leak", p.name, s.Label(), f.Lines, f.Secrets, f.Leaks)
		}
	}
}
