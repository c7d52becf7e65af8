package rag_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/internal/projtest"
	"github.com/toolcanon/toolcanon/projectors/rag"
	"github.com/toolcanon/toolcanon/projectors/redact"
)

func projectAll(tb testing.TB, p *rag.Projector) func([][]byte) {
	call := projectors.Call{ToolCallID: "call_1", Input: []byte(`{"query":"q"}`)}
	return func(raw [][]byte) {
		if _, err := p.Project(context.Background(), call, raw[0]); err != nil {
			tb.Fatal(err)
		}
	}
}

// The RAG projector, end to end, costs the same per byte of response on
// 64 KiB and on 1 MiB of every hostile shape, as excerpts.
func TestRAGLinearOnHostileInput(t *testing.T) {
	cases := projtest.AsResponses(projtest.HostileCases(redact.Vocabulary()), projtest.RAGResponse)
	projtest.CheckLinear(t, "rag", cases, nil, projectAll(t, newProjector(t, nil)))
}

// BenchmarkRAGHostile reports the projector's MB/s on the slowest hostile
// shape at 1 MiB of response.
func BenchmarkRAGHostile(b *testing.B) {
	cases := projtest.AsResponses(projtest.HostileCases(redact.Vocabulary()), projtest.RAGResponse)
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

// With a budget of many items, repeated documents are still found (by a
// set, once a scan would compare too many): the first block of each wins.
func TestRAGDuplicatesUnderALargeBudget(t *testing.T) {
	p := newProjector(t, func(c *rag.Config) {
		c.Limits = projectors.Limits{Total: 1 << 20, Collection: 1 << 19, Item: 1024, Items: 200, Text: 64}
	})
	var blocks []block
	for round := range 3 {
		for i := range 80 {
			blocks = append(blocks, block{Source: "kb", DocumentID: fmt.Sprintf("doc-%d", i), Excerpt: fmt.Sprintf("round %d text %d", round, i)})
		}
	}
	_, r := project(t, p, "q", legacy(blocks...))
	if r.Returned != 80 || len(r.Evidence) != 80 {
		t.Fatalf("returned %d of 80 distinct documents", r.Returned)
	}
	for i, e := range r.Evidence {
		if e.DocumentID != fmt.Sprintf("doc-%d", i) || e.Excerpt != fmt.Sprintf("round 0 text %d", i) {
			t.Fatalf("item %d: %+v", i, e)
		}
	}
}
