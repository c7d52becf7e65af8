package boundary_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
)

// ragRaw is a RAG service's response of about 4 KiB: hits with scores,
// traces and context packs that the projector must drop.
var ragRaw = func() []byte {
	var b strings.Builder
	b.WriteString(`{"query":"how does redis expire keys","took_ms":12,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","hits":[`)
	for i := range 5 {
		if i > 0 {
			b.WriteByte(',')
		}
		id := strconv.Itoa(i)
		b.WriteString(`{"source":"kb","document_id":"doc-` + id + `","title":"Redis expiration, part ` + id + `",` +
			`"score":0.9` + id + `,"hit_reason":"bm25+vector","domain":"ops",` +
			`"text":"` + strings.Repeat("Keys with an expire are evicted lazily on access and actively by sampling. ", 7) + `",` +
			`"context_pack":"` + strings.Repeat("ctx", 30) + `"}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}()

// ragProjector picks source, document_id, title and a bounded excerpt of the
// text of each hit, as a RAG projector does, with encoding/json.
func ragProjector(_ context.Context, call canonical.Call, raw []byte) (canonical.Projection, error) {
	var r struct {
		Hits []struct {
			Source     string `json:"source"`
			DocumentID string `json:"document_id"`
			Title      string `json:"title"`
			Text       string `json:"text"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return canonical.Projection{}, err
	}
	out := make([]byte, 0, 1024)
	out = append(out, `{"tool_call_id":`...)
	out = strconv.AppendQuote(out, call.ToolCallID)
	out = append(out, `,"evidence":[`...)
	for i, h := range r.Hits {
		if i == 3 {
			break
		}
		if i > 0 {
			out = append(out, ',')
		}
		excerpt := h.Text
		if len(excerpt) > 160 {
			excerpt = excerpt[:160] // ASCII text: a byte cut is a rune cut
		}
		out = append(out, `{"source":`...)
		out = strconv.AppendQuote(out, h.Source)
		out = append(out, `,"document_id":`...)
		out = strconv.AppendQuote(out, h.DocumentID)
		out = append(out, `,"title":`...)
		out = strconv.AppendQuote(out, h.Title)
		out = append(out, `,"excerpt":`...)
		out = strconv.AppendQuote(out, excerpt)
		out = append(out, '}')
	}
	out = append(out, `],"returned":`...)
	out = strconv.AppendInt(out, int64(min(len(r.Hits), 3)), 10)
	out = append(out, `,"truncated":true}`...)
	ev := canonical.EvidenceFound
	if len(r.Hits) == 0 {
		ev = canonical.NoEvidence
	}
	return canonical.Projection{Evidence: ev, Result: out}, nil
}

// BenchmarkInvoke measures one call end to end: preflight with the registry
// and policy, Begin, a tool returning ~4 KiB, the RAG-like projection and
// Complete. Runs rotate every 256 calls and records live 2 s, so that
// neither store grows with b.N.
func BenchmarkInvoke(b *testing.B) {
	for _, fac := range factories {
		b.Run(fac.name, func(b *testing.B) {
			fx := newFixture(b, fac)
			tool := boundary.ToolFunc(func(context.Context, []byte) ([]byte, error) { return ragRaw, nil })
			bd, err := boundary.New(fx.store, fx.reg, testPolicy(fx.marker),
				boundary.Bind("kb.search", "kb.search", "1.0.0", tool, canonical.ProjectorFunc(ragProjector)))
			if err != nil {
				b.Fatal(err)
			}
			run := fx.run
			run.TTL = 2 * time.Second
			run.Limits = canonical.Limits{MaxCallsPerTool: 1 << 20, MaxCallsPerRun: 1 << 20}
			base := run.ID
			input := []byte(okInput)
			ctx := context.Background()
			var seq atomic.Int64
			call := func() {
				n := seq.Add(1)
				r := run
				r.ID = base + "-" + strconv.FormatInt(n>>8, 10)
				res := bd.Invoke(ctx, r, boundary.Envelope{
					ToolCallID: "call_" + strconv.FormatInt(n, 10), RunID: r.ID, Tool: "kb.search", Input: input,
				})
				if res.Status() != canonical.StatusReady {
					b.Errorf("%s: %v", res.Code(), res.Err())
				}
			}
			b.Run("serial", func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(ragRaw)))
				for b.Loop() {
					call()
				}
			})
			b.Run("parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(ragRaw)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						call()
					}
				})
			})
		})
	}
}
