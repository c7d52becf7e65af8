package projectors_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/drain"
	"github.com/toolcanon/toolcanon/projectors/internal/projtest"
	"github.com/toolcanon/toolcanon/projectors/querylog"
	"github.com/toolcanon/toolcanon/projectors/rag"
	"github.com/toolcanon/toolcanon/projectors/redact"
)

// The encoding/json baselines: the same projections written the plain way,
// unmarshalling the response into structs and then using the same
// redactor and miner, so that a comparison measures how the response is
// read and the result written, not what is computed from it.

var levelNames = [...]string{"FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "UNKNOWN"}

func levelOf(s string) int {
	switch strings.ToUpper(s) {
	case "FATAL", "CRITICAL", "CRIT", "EMERG", "ALERT", "PANIC":
		return 0
	case "ERROR", "ERR", "SEVERE":
		return 1
	case "WARN", "WARNING":
		return 2
	case "INFO", "NOTICE", "INFORMATION":
		return 3
	case "DEBUG", "FINE":
		return 4
	case "TRACE", "FINER", "FINEST":
		return 5
	}
	return 6
}

type logEntry struct {
	Timestamp *string `json:"timestamp"`
	Level     string  `json:"level"`
	Message   *string `json:"message"`
}

type logResponse struct {
	Success bool `json:"success"`
	Window  *struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"window"`
	Entries *[]logEntry `json:"entries"`
}

const tsLayout = "2006-01-02T15:04:05.000Z07:00"

func failed(format string, args ...any) error {
	return canonical.Errorf(canonical.CodeProjectionFailed, format, args...)
}

// queryLogBaseline is querylog.Projector written with encoding/json, for
// the legacy paths and the configuration's limits.
func queryLogBaseline(cfg querylog.Config, call projectors.Call, raw []byte) (projectors.Projection, error) {
	req, err := querylog.ParseRequest(call.Input)
	if err != nil {
		return projectors.Projection{}, err
	}
	var resp logResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return projectors.Projection{}, failed("malformed")
	}
	if !resp.Success {
		return projectors.Projection{}, failed("failure")
	}
	if resp.Entries == nil {
		return projectors.Projection{}, failed("no entries")
	}
	entries := *resp.Entries
	var from, to time.Time
	if w := resp.Window; w != nil {
		from, err = time.Parse(time.RFC3339Nano, w.From)
		if err == nil {
			to, err = time.Parse(time.RFC3339Nano, w.To)
		}
		if err != nil {
			return projectors.Projection{}, failed("window")
		}
	} else {
		to = cfg.Now()
		from = to.Add(-time.Duration(req.LookbackMinutes) * time.Minute)
	}
	type stat struct {
		count       int
		first, last time.Time
	}
	type pattern struct {
		Pattern   string `json:"pattern"`
		Count     int    `json:"count"`
		Level     string `json:"level"`
		FirstSeen string `json:"first_seen"`
		LastSeen  string `json:"last_seen"`
	}
	type event struct {
		TS      string `json:"ts"`
		Level   string `json:"level"`
		Message string `json:"message"`
	}
	lim := cfg.Limits
	mcfg := cfg.Miner
	mcfg.MaxClusters, mcfg.MaxTokens = 512, 64
	var miners [len(levelNames)]*drain.Miner
	var stats [len(levelNames)][]stat
	timeline := []event{}
	truncated := false
	for i, e := range entries {
		if e.Timestamp == nil || e.Message == nil {
			return projectors.Projection{}, failed("entry %d", i)
		}
		ts, err := time.Parse(time.RFC3339Nano, *e.Timestamp)
		if err != nil {
			return projectors.Projection{}, failed("entry %d", i)
		}
		lvl := levelOf(e.Level)
		red := redact.String(*e.Message)
		mined := red
		if len(mined) > 2048 {
			mined, _ = projtest.CutRunes(mined, 2048)
			truncated = true
		}
		if miners[lvl] == nil {
			miners[lvl] = drain.New(mcfg)
		}
		id, ok := miners[lvl].AddString(mined)
		if ok {
			if id == len(stats[lvl]) {
				stats[lvl] = append(stats[lvl], stat{first: ts, last: ts})
			}
			s := &stats[lvl][id]
			if ts.Before(s.first) {
				s.first = ts
			}
			if ts.After(s.last) {
				s.last = ts
			}
			s.count++
		} else {
			truncated = true
		}
		if len(timeline) < lim.Items {
			text, c := projtest.CutRunes(red, lim.Text)
			truncated = truncated || c
			timeline = append(timeline, event{ts.UTC().Format(tsLayout), levelNames[lvl], text})
		} else {
			truncated = true
		}
	}
	type ref struct {
		lvl, id int
		stat
	}
	var refs []ref
	for l := range stats {
		for id, s := range stats[l] {
			refs = append(refs, ref{l, id, s})
		}
	}
	slices.SortFunc(refs, func(a, b ref) int {
		if c := cmp.Compare(b.count, a.count); c != 0 {
			return c
		}
		if c := a.first.Compare(b.first); c != 0 {
			return c
		}
		if c := cmp.Compare(a.lvl, b.lvl); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	patterns := []pattern{}
	for i, r := range refs {
		if i == lim.Items {
			truncated = true
			break
		}
		text, c := projtest.CutRunes(miners[r.lvl].TemplateString(r.id), lim.Text)
		truncated = truncated || c
		patterns = append(patterns, pattern{text, r.count, levelNames[r.lvl], r.first.UTC().Format(tsLayout), r.last.UTC().Format(tsLayout)})
	}
	type scope struct {
		Topic           string `json:"topic"`
		Query           string `json:"query"`
		LookbackMinutes int    `json:"lookback_minutes"`
		From            string `json:"from"`
		To              string `json:"to"`
	}
	result := struct {
		SourceKind string    `json:"source_kind"`
		ToolCallID string    `json:"tool_call_id"`
		Scope      scope     `json:"scope"`
		MatchCount int       `json:"match_count"`
		Patterns   []pattern `json:"patterns"`
		Timeline   []event   `json:"timeline"`
		Returned   int       `json:"returned"`
		Truncated  bool      `json:"truncated"`
	}{cfg.SourceKind, call.ToolCallID, scope{req.Topic, req.Query, req.LookbackMinutes, from.UTC().Format(tsLayout), to.UTC().Format(tsLayout)},
		len(entries), patterns, timeline, len(timeline), truncated}
	for {
		out := projtest.Marshal(result)
		if len(out) <= lim.Total && len(projtest.Marshal(result.Patterns)) <= lim.Collection && len(projtest.Marshal(result.Timeline)) <= lim.Collection {
			ev := canonical.NoEvidence
			if len(entries) > 0 {
				ev = canonical.EvidenceFound
			}
			return projectors.Projection{Evidence: ev, Result: out}, nil
		}
		switch {
		case len(result.Timeline) > 0:
			result.Timeline = result.Timeline[:len(result.Timeline)-1]
			result.Returned--
		case len(result.Patterns) > 0:
			result.Patterns = result.Patterns[:len(result.Patterns)-1]
		default:
			return projectors.Projection{}, canonical.Errorf(canonical.CodeResultTooLarge, "too large")
		}
		result.Truncated = true
	}
}

type ragBlock struct {
	Source     string  `json:"source"`
	DocumentID string  `json:"document_id"`
	Title      string  `json:"title"`
	Excerpt    *string `json:"excerpt"`
}

type ragResponse struct {
	Success *bool       `json:"success"`
	Blocks  *[]ragBlock `json:"blocks"`
}

// ragBaseline is rag.Projector written with encoding/json, for the legacy
// paths and the configuration's limits.
func ragBaseline(cfg rag.Config, call projectors.Call, raw []byte) (projectors.Projection, error) {
	var in struct {
		Query *string `json:"query"`
	}
	dec := json.NewDecoder(bytes.NewReader(call.Input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || in.Query == nil {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeInvalidInput, "input")
	}
	q := *in.Query
	if strings.TrimSpace(q) == "" || len(q) > cfg.MaxQueryBytes {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeInvalidInput, "query")
	}
	var resp ragResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return projectors.Projection{}, failed("malformed")
	}
	if resp.Success != nil && !*resp.Success {
		return projectors.Projection{}, failed("failure")
	}
	if resp.Blocks == nil {
		return projectors.Projection{}, failed("no blocks")
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
	for _, b := range *resp.Blocks {
		if strings.TrimSpace(b.DocumentID) == "" || b.Source == "" || b.Excerpt == nil || strings.TrimSpace(*b.Excerpt) == "" {
			continue
		}
		key := b.Source + "\x00" + b.DocumentID
		if seen[key] {
			continue
		}
		seen[key] = true
		if len(items) == lim.Items {
			truncated = true
			break
		}
		title, c0 := projtest.CutAtSeparator(b.Title, rag.TextWindow(min(lim.Text, 256)))
		excerpt, c3 := projtest.CutAtSeparator(*b.Excerpt, rag.TextWindow(lim.Text))
		red := func(s string, cut bool) string {
			if cut && s == "" {
				return redact.ID
			}
			return redact.String(s)
		}
		t, c1 := projtest.CutRunes(red(title, c0), min(lim.Text, 256))
		e, c2 := projtest.CutRunes(red(excerpt, c3), lim.Text)
		truncated = truncated || c0 || c1 || c2 || c3
		items = append(items, item{b.Source, b.DocumentID, t, e})
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
		if len(out) <= lim.Total && len(projtest.Marshal(result.Evidence)) <= lim.Collection {
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

// makeLogs builds a legacy log response of about size bytes from service
// log templates with random values, with fields the projection ignores
// (service, instance, metrics) as a real backend sends them.
func makeLogs(seed uint64, size int) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	tmpls := []func() (string, string){
		func() (string, string) {
			return "ERROR", fmt.Sprintf("payment timeout after %dms for order %d", 3000+r.IntN(900), 80000+r.IntN(9999))
		},
		func() (string, string) {
			return "INFO", fmt.Sprintf("GET /api/v1/orders/%d took %dms status=%d", r.IntN(99999), r.IntN(900), 200)
		},
		func() (string, string) {
			return "WARN", fmt.Sprintf("login failed password=%s for user=%s from 10.%d.%d.%d", fmt.Sprintf("pw%dX!", r.IntN(1e6)), "alice", r.IntN(255), r.IntN(255), r.IntN(255))
		},
		func() (string, string) {
			return "ERROR", fmt.Sprintf("connection to 10.%d.%d.%d:5432 refused after %d retries", r.IntN(255), r.IntN(255), r.IntN(255), r.IntN(9))
		},
		func() (string, string) {
			return "DEBUG", fmt.Sprintf("cache miss for session %x on shard %d", r.Uint64(), r.IntN(64))
		},
		func() (string, string) {
			return "INFO", fmt.Sprintf("Receiving block blk_%d src: /10.250.%d.%d:%d dest: /10.250.%d.%d:50010", r.Int64(), r.IntN(255), r.IntN(255), 40000+r.IntN(9999), r.IntN(255), r.IntN(255))
		},
		func() (string, string) {
			return "ERROR", fmt.Sprintf("slow query SELECT * FROM orders WHERE customer_id = %d took %dms", r.IntN(1e6), r.IntN(9000))
		},
		func() (string, string) {
			return "warning", fmt.Sprintf("user \"bob\" <bob@example.com> retried \u00e9tape %d\ttwice", r.IntN(50))
		},
	}
	type entry struct {
		Timestamp string             `json:"timestamp"`
		Level     string             `json:"level"`
		Service   string             `json:"service"`
		Message   string             `json:"message"`
		Instance  string             `json:"instance"`
		Metrics   map[string]float64 `json:"metrics"`
	}
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var es []entry
	for n := 0; ; {
		raw, _ := json.Marshal(map[string]any{"success": true, "source": "mock", "topic": "checkout", "query": "*",
			"window": map[string]string{"from": "2026-03-01T09:00:00Z", "to": "2026-03-01T10:00:00Z"}, "total": len(es), "entries": es})
		if len(raw) >= size {
			return raw
		}
		for k := max(1, (size-len(raw))/260); k > 0; k-- {
			lvl, msg := tmpls[r.IntN(len(tmpls))]()
			es = append(es, entry{base.Add(time.Duration(n) * 100 * time.Millisecond).Format(time.RFC3339Nano), lvl, "checkout-api", msg,
				fmt.Sprintf("checkout-api-7d9f8b6c5d-x%dk4p", r.IntN(9)), map[string]float64{"latency_ms": r.Float64() * 900, "cpu": r.Float64()}})
			n++
		}
	}
}

// makeBlocks builds a legacy RAG response of about size bytes: blocks with
// full bodies, a context pack and traces, every fifth block a duplicate.
func makeBlocks(seed uint64, size int) []byte {
	r := rand.New(rand.NewPCG(seed, 3))
	type block struct {
		Source     string `json:"source"`
		DocumentID string `json:"document_id"`
		Title      string `json:"title"`
		Excerpt    string `json:"excerpt"`
		Content    string `json:"content"`
	}
	body := strings.Repeat("Refunds above 500 EUR need a second approver; the approver must not be the requester. ", 30)
	var blocks []block
	var pack strings.Builder
	for i := 0; ; i++ {
		id := fmt.Sprintf("doc-%d", i)
		if i%5 == 4 {
			id = fmt.Sprintf("doc-%d", i-2)
		}
		ex := body[r.IntN(40) : 300+r.IntN(40)]
		blocks = append(blocks, block{Source: "kb", DocumentID: id, Title: fmt.Sprintf("Policy \u00a7%d", i),
			Excerpt: ex, Content: body[:min(len(body), size/4+100)]})
		if pack.Len() < size/4 {
			pack.WriteString(body[:min(len(body), size/8+50)])
		}
		raw, _ := json.Marshal(map[string]any{"success": true, "context_pack": pack.String(), "blocks": blocks,
			"retrieval_trace": []map[string]any{{"stage": "bm25", "n": i}}, "rerank_trace": []map[string]any{{"model": "ce"}}})
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

var benchSizes = []struct {
	name string
	n    int
}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}, {"8MiB", 8 << 20}}

var fixedNow = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

type projectFunc func(call projectors.Call, raw []byte) (projectors.Projection, error)

// projection is one projector under comparison: its request, its input
// generator and the two implementations.
type projection struct {
	name        string
	call        projectors.Call
	gen         func(seed uint64, size int) []byte
	ours, plain projectFunc
}

// projections returns the projections compared.
func projections(tb testing.TB) []projection {
	qcfg := querylog.DefaultConfig()
	qcfg.Now = func() time.Time { return fixedNow }
	qp, err := querylog.New(qcfg)
	if err != nil {
		tb.Fatal(err)
	}
	rcfg := rag.DefaultConfig()
	rp, err := rag.New(rcfg)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	return []projection{
		{"querylog", projectors.Call{ToolCallID: "call_1", Input: []byte(`{"topic":"checkout","query":"*","lookback_minutes":60}`)}, makeLogs,
			func(c projectors.Call, raw []byte) (projectors.Projection, error) { return qp.Project(ctx, c, raw) },
			func(c projectors.Call, raw []byte) (projectors.Projection, error) {
				return queryLogBaseline(qcfg, c, raw)
			}},
		{"rag", projectors.Call{ToolCallID: "call_1", Input: []byte(`{"query":"refund approval"}`)}, makeBlocks,
			func(c projectors.Call, raw []byte) (projectors.Projection, error) { return rp.Project(ctx, c, raw) },
			func(c projectors.Call, raw []byte) (projectors.Projection, error) { return ragBaseline(rcfg, c, raw) }},
	}
}

// TestProjectionMatchesBaseline checks that each projector writes the same
// bytes as its encoding/json baseline on generated responses of many
// sizes and contents, so that the benchmark compares equal work.
func TestProjectionMatchesBaseline(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, p := range projections(t) {
		for i := 0; i < 60; i++ {
			size := 200 + r.IntN(1<<(8+i%10))
			raw := p.gen(uint64(i), size)
			a, err1 := p.ours(p.call, raw)
			b, err2 := p.plain(p.call, raw)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s, %d bytes: %v / %v", p.name, len(raw), err1, err2)
			}
			if a.Evidence != b.Evidence || !bytes.Equal(a.Result, b.Result) {
				t.Fatalf("%s, %d bytes: results differ\nours:     %s\nbaseline: %s", p.name, len(raw), a.Result, b.Result)
			}
		}
	}
}

// BenchmarkProjectionSizes compares each projector with its encoding/json
// baseline at four response sizes. `make bench-projection` prints the
// ratios of one run.
func BenchmarkProjectionSizes(b *testing.B) {
	for _, p := range projections(b) {
		for _, s := range benchSizes {
			// Generated when first run, so that a filtered run does not
			// build inputs it will not use.
			var raw []byte
			input := func() []byte {
				if raw == nil {
					raw = p.gen(1, s.n)
				}
				return raw
			}
			for _, impl := range []struct {
				name string
				f    projectFunc
			}{{"toolcanon", p.ours}, {"encoding_json", p.plain}} {
				b.Run(p.name+"/"+impl.name+"/"+s.name, func(b *testing.B) {
					raw := input()
					b.SetBytes(int64(len(raw)))
					b.ReportAllocs()
					for b.Loop() {
						if _, err := impl.f(p.call, raw); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
