package otelcanon_test

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

var otelAudit = canonical.AuditOptions{Key: []byte("a key of thirty-two bytes or more!"), KeyID: "o"}

// With an audited store and replay on: no attribute under gen_ai.* holds
// an idempotency digest (the request's SHA-256, a completion's, or an
// audit event's HMAC), a replay is never reported as an execution (its
// span says replayed, not executed, and has no tool span), and the audit
// events name the call's span.
func TestAuditAndSpans(t *testing.T) {
	kinds := []storeKind{
		{"memstore", "memory", func(testing.TB) canonical.Store { return memstore.New(memstore.WithAudit(otelAudit)) }},
		{"redisstore", "redis", func(t testing.TB) canonical.Store {
			s, err := redisstore.New(redisstore.Options{Addrs: []string{redistest.Addr(t)}, Audit: &otelAudit})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
	}
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			w := newWorld(t, kind)
			b := w.boundary(nil, boundary.WithReplay())
			run := w.newRun()
			input := []byte(`{"query":"refunds"}`)
			env := boundary.Envelope{ToolCallID: "call_r1", RunID: run.ID, Tool: "search_docs", Input: input}
			first := b.Invoke(context.Background(), run, env)
			again := b.Invoke(context.Background(), run, env)
			if !first.Executed() || first.Replayed() || again.Executed() || !again.Replayed() {
				t.Fatalf("first executed %v replayed %v; again executed %v replayed %v",
					first.Executed(), first.Replayed(), again.Executed(), again.Replayed())
			}
			p, err := w.store.(canonical.AuditSource).AuditRead(context.Background(), []string{run.ID}, 10)
			if err != nil {
				t.Fatal(err)
			}
			evs := p[0].Events
			if len(evs) != 3 || evs[2].Type != canonical.AuditReplay {
				t.Fatalf("events %+v", evs)
			}
			digests := map[string]bool{}
			for _, e := range evs {
				for _, d := range []string{e.RequestDigest, e.RawDigest, e.ResultDigest} {
					if d != "" {
						digests[d] = true
					}
				}
			}
			rec, err := w.store.Get(context.Background(), run.ID, "call_r1")
			if err != nil {
				t.Fatal(err)
			}
			digests[rec.RequestDigest] = true

			var calls []sdktrace.ReadOnlySpan
			spans := w.spans.GetSpans().Snapshots()
			for _, s := range spans {
				for _, a := range s.Attributes() {
					checkAttr(t, s.Name(), a, digests)
				}
				if strings.HasPrefix(s.Name(), "execute_tool") {
					calls = append(calls, s)
				}
			}
			if len(calls) != 2 {
				t.Fatalf("%d execute_tool spans", len(calls))
			}
			for i, c := range calls {
				exec, rep := boolAttr(c, "toolcanon.executed"), boolAttr(c, "toolcanon.replayed")
				tools := 0
				for _, s := range spans {
					if s.Parent().SpanID() == c.SpanContext().SpanID() && s.Name() == "tool" {
						tools++
					}
				}
				if i == 1 && (exec || !rep || tools != 0) {
					t.Fatalf("the replay's span: executed %v replayed %v, %d tool spans", exec, rep, tools)
				}
				if i == 0 && (!exec || rep || tools != 1) {
					t.Fatalf("the execution's span: executed %v replayed %v, %d tool spans", exec, rep, tools)
				}
				// The events of each call name its span.
				want := []int{0, 1}
				if i == 1 {
					want = []int{2}
				}
				for _, k := range want {
					if evs[k].TraceID != c.SpanContext().TraceID().String() || evs[k].SpanID != c.SpanContext().SpanID().String() {
						t.Fatalf("event %d names span %s/%s, the call's is %s", k, evs[k].TraceID, evs[k].SpanID, c.SpanContext().SpanID())
					}
				}
			}
		})
	}
}

// checkAttr fails on an attribute that holds one of digests, or, under
// gen_ai.*, anything that looks like one (64 hex digits).
func checkAttr(t *testing.T, span string, a attribute.KeyValue, digests map[string]bool) {
	t.Helper()
	v := a.Value.Emit()
	for d := range digests {
		if strings.Contains(v, d) {
			t.Fatalf("span %s: attribute %s holds a digest", span, a.Key)
		}
	}
	if strings.HasPrefix(string(a.Key), "gen_ai.") {
		for _, w := range strings.FieldsFunc(v, func(r rune) bool { return !strings.ContainsRune("0123456789abcdef", r) }) {
			if len(w) >= 32 {
				if _, err := hex.DecodeString(w); err == nil {
					t.Fatalf("span %s: %s holds what looks like a digest: %q", span, a.Key, v)
				}
			}
		}
	}
}

func boolAttr(s sdktrace.ReadOnlySpan, key string) bool {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.AsBool()
		}
	}
	return false
}
