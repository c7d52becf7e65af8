package rag_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/internal/projtest"
	"github.com/toolcanon/toolcanon/projectors/rag"
)

// baseline is the straightforward projection: unmarshal the whole response
// into maps, build the result, marshal it, and drop items until the
// budgets hold. It implements the same contract as rag.Projector for the
// legacy paths.
func baseline(cfg rag.Config, call projectors.Call, raw []byte) (projectors.Projection, error) {
	var in map[string]any
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeInvalidInput, "input")
	}
	q, ok := in["query"].(string)
	if !ok || len(in) != 1 || strings.TrimSpace(q) == "" || len(q) > cfg.MaxQueryBytes {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeInvalidInput, "query")
	}
	var resp map[string]any
	if err := json.Unmarshal(raw, &resp); err != nil {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeProjectionFailed, "malformed")
	}
	if s, ok := resp["success"]; ok && s != true {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeProjectionFailed, "failure")
	}
	blocks, ok := resp["blocks"].([]any)
	if !ok {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeProjectionFailed, "no blocks")
	}
	type item struct {
		Source     string `json:"source"`
		DocumentID string `json:"document_id"`
		Title      string `json:"title"`
		Excerpt    string `json:"excerpt"`
	}
	lim := cfg.Limits
	items := []item{}
	seen := map[string]bool{}
	truncated := false
	for _, b := range blocks {
		m, ok := b.(map[string]any)
		if !ok {
			continue
		}
		id, _ := m["document_id"].(string)
		src, _ := m["source"].(string)
		if strings.TrimSpace(id) == "" || src == "" {
			continue
		}
		text := ""
		for _, k := range cfg.Paths.Excerpt {
			if t, ok := m[k].(string); ok && strings.TrimSpace(t) != "" {
				text = t
				break
			}
		}
		if text == "" || seen[src+"\x00"+id] {
			continue
		}
		seen[src+"\x00"+id] = true
		if len(items) == lim.Items {
			truncated = true
			break
		}
		title, _ := m["title"].(string)
		t, c1 := projtest.CutRunes(title, min(lim.Text, 256))
		e, c2 := projtest.CutRunes(text, lim.Text)
		truncated = truncated || c1 || c2
		items = append(items, item{src, id, t, e})
	}
	result := struct {
		Query      string `json:"query"`
		ToolCallID string `json:"tool_call_id"`
		Evidence   []item `json:"evidence"`
		Returned   int    `json:"returned"`
		Truncated  bool   `json:"truncated"`
	}{q, call.ToolCallID, items, len(items), truncated}
	for {
		out := projtest.Marshal(result)
		arr := projtest.Marshal(result.Evidence)
		if len(out) <= lim.Total && len(arr) <= lim.Collection {
			ev := canonical.NoEvidence
			if len(items) > 0 {
				ev = canonical.EvidenceFound
			}
			return projectors.Projection{Evidence: ev, Result: out}, nil
		}
		if len(result.Evidence) == 0 {
			return projectors.Projection{}, canonical.Errorf(canonical.CodeResultTooLarge, "too large")
		}
		result.Evidence = result.Evidence[:len(result.Evidence)-1]
		result.Returned--
		result.Truncated = true
	}
}

// makeResponse builds a legacy response of about size bytes: blocks with
// full bodies, a context pack and traces, every fifth block a duplicate.
func makeResponse(size int) []byte {
	var blocks []block
	var pack strings.Builder
	body := strings.Repeat("Refunds above 500 EUR need a second approver; the approver must not be the requester. ", 30)
	for i := 0; ; i++ {
		id := fmt.Sprintf("doc-%d", i)
		if i%5 == 4 {
			id = fmt.Sprintf("doc-%d", i-2)
		}
		b := block{Source: "kb", DocumentID: id, Title: fmt.Sprintf("Policy %d", i),
			Excerpt: body[:300], Content: body[:min(len(body), size/4+100)]}
		blocks = append(blocks, b)
		if pack.Len() < size/4 {
			pack.WriteString(body[:min(len(body), size/8+50)])
		}
		raw, _ := json.Marshal(response{Success: true, ContextPack: pack.String(), Blocks: blocks,
			RetrievalTrace: []map[string]any{{"stage": "bm25", "n": i}}, RerankTrace: []map[string]any{{"model": "ce"}}})
		if len(raw) >= size || i > 100000 {
			return raw
		}
		// Grow geometrically to reach large sizes quickly.
		if len(raw) < size/2 && len(blocks) > 4 {
			blocks = append(blocks, blocks...)
			for k := len(blocks) / 2; k < len(blocks); k++ {
				blocks[k].DocumentID = fmt.Sprintf("doc-%d", i+k)
			}
			i += len(blocks) / 2
		}
	}
}

var sizes = []struct {
	name string
	n    int
}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}}

func TestBaselineAgrees(t *testing.T) {
	cfg := rag.DefaultConfig()
	p, _ := rag.New(cfg)
	call := projectors.Call{ToolCallID: "call_1", Input: []byte(`{"query":"refund approval"}`)}
	for _, s := range sizes {
		raw := makeResponse(s.n)
		a, err1 := p.Project(context.Background(), call, raw)
		b, err2 := baseline(cfg, call, raw)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", s.name, err1, err2)
		}
		var x, y any
		_ = json.Unmarshal(a.Result, &x)
		_ = json.Unmarshal(b.Result, &y)
		if a.Evidence != b.Evidence || !reflect.DeepEqual(x, y) {
			t.Fatalf("%s: results differ\nours:     %s\nbaseline: %s", s.name, a.Result, b.Result)
		}
	}
}

func BenchmarkRAG(b *testing.B) {
	cfg := rag.DefaultConfig()
	p, _ := rag.New(cfg)
	call := projectors.Call{ToolCallID: "call_1", Input: []byte(`{"query":"refund approval"}`)}
	for _, s := range sizes {
		raw := makeResponse(s.n)
		b.Run("ours/"+s.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Project(context.Background(), call, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("encodingjson/"+s.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := baseline(cfg, call, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
