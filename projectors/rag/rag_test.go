package rag_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/internal/projtest"
	"github.com/toolcanon/toolcanon/projectors/rag"
)

type block struct {
	Source     string  `json:"source,omitempty"`
	DocumentID string  `json:"document_id,omitempty"`
	Title      string  `json:"title,omitempty"`
	Excerpt    string  `json:"excerpt,omitempty"`
	Content    string  `json:"content,omitempty"`
	Score      float64 `json:"score"`
	HitReason  string  `json:"hit_reason"`
	Domain     string  `json:"domain"`
}

type response struct {
	Success        bool             `json:"success"`
	Message        string           `json:"message"`
	Query          string           `json:"query"`
	Domain         string           `json:"domain"`
	ContextPack    string           `json:"context_pack"`
	RetrievalTrace []map[string]any `json:"retrieval_trace"`
	RerankTrace    []map[string]any `json:"rerank_trace"`
	Blocks         []block          `json:"blocks"`
}

// Markers that must never reach a result.
const (
	secretBody    = "FULL-BODY-MARKER-7c1f"
	secretPack    = "CONTEXT-PACK-MARKER-19ab"
	secretTrace   = "TRACE-MARKER-55e0"
	secretReason  = "HIT-REASON-MARKER-0b2d"
	secretDomain  = "DOMAIN-MARKER-c3a9"
	secretMessage = "MESSAGE-MARKER-77f1"
)

var planted = []string{secretBody, secretPack, secretTrace, secretReason, secretDomain, secretMessage, "0.9137"}

// neverRead are planted in fields the projector never reads, whatever the
// rest of the response looks like: with the legacy paths that includes the
// full body, which is never an excerpt.
var neverRead = []string{secretBody, secretPack, secretTrace, secretReason, secretDomain, secretMessage, "0.9137"}

func legacy(blocks ...block) []byte {
	if blocks == nil {
		blocks = []block{}
	}
	for i := range blocks {
		blocks[i].Score = 0.9137
		blocks[i].HitReason = secretReason
		blocks[i].Domain = secretDomain
		if blocks[i].Content == "" {
			blocks[i].Content = "Body. " + secretBody
		}
	}
	b, err := json.Marshal(response{
		Success: true, Message: secretMessage, Query: "q", Domain: secretDomain,
		ContextPack:    secretPack + " all bodies",
		RetrievalTrace: []map[string]any{{"stage": "bm25", "note": secretTrace, "score": 12.5}},
		RerankTrace:    []map[string]any{{"model": "x", "note": secretTrace}},
		Blocks:         blocks,
	})
	if err != nil {
		panic(err)
	}
	return b
}

func newProjector(t testing.TB, mod func(*rag.Config)) *rag.Projector {
	t.Helper()
	cfg := rag.DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	p, err := rag.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type result struct {
	Query      string `json:"query"`
	ToolCallID string `json:"tool_call_id"`
	Evidence   []struct {
		Source     string `json:"source"`
		DocumentID string `json:"document_id"`
		Title      string `json:"title"`
		Excerpt    string `json:"excerpt"`
	} `json:"evidence"`
	Returned  int  `json:"returned"`
	Truncated bool `json:"truncated"`
}

func project(t *testing.T, p *rag.Projector, query string, raw []byte) (projectors.Projection, result) {
	t.Helper()
	in, _ := json.Marshal(map[string]string{"query": query})
	pr, err := p.Project(context.Background(), projectors.Call{ToolCallID: "call_8f2k", Input: in}, raw)
	if err != nil {
		t.Fatalf("project: %v", err)
	}
	checkResult(t, pr.Result, rag.DefaultConfig().Limits.Total)
	var r result
	if err := json.Unmarshal(pr.Result, &r); err != nil {
		t.Fatal(err)
	}
	if r.Returned != len(r.Evidence) {
		t.Fatalf("returned %d, evidence %d", r.Returned, len(r.Evidence))
	}
	return pr, r
}

func checkResult(t testing.TB, out []byte, total int) {
	t.Helper()
	checkResultWith(t, out, total, planted)
}

func checkResultWith(t testing.TB, out []byte, total int, planted []string) {
	t.Helper()
	projtest.CheckResult(t, out, total, planted, "query", "tool_call_id", "evidence", "returned", "truncated")
}

// Seed 003, scenario "RAG evidence is projected".
func TestRAGEvidenceProjected(t *testing.T) {
	p := newProjector(t, nil)
	raw := legacy(
		block{Source: "kb", DocumentID: "refunds-101", Title: "Refund approval", Excerpt: "Refunds above 500 EUR need a second approver."},
		block{Source: "wiki", DocumentID: "ops-7", Title: "On-call", Excerpt: "Page the on-call engineer."},
	)
	pr, r := project(t, p, "how are refunds approved", raw)
	if pr.Evidence != canonical.EvidenceFound {
		t.Fatalf("evidence %s", pr.Evidence)
	}
	if r.Query != "how are refunds approved" || r.ToolCallID != "call_8f2k" || r.Returned != 2 || r.Truncated {
		t.Fatalf("unexpected result %+v", r)
	}
	e := r.Evidence[0]
	if e.Source != "kb" || e.DocumentID != "refunds-101" || e.Title != "Refund approval" || e.Excerpt != "Refunds above 500 EUR need a second approver." {
		t.Fatalf("evidence 0: %+v", e)
	}
	if r.Evidence[1].DocumentID != "ops-7" || r.Evidence[1].Excerpt != "Page the on-call engineer." {
		t.Fatalf("evidence 1: %+v", r.Evidence[1])
	}
}

// Seed 003: "full document bodies SHALL NOT appear". A block's body is never
// its excerpt, however short: a block without a usable excerpt is not
// evidence, unless an operator names the body's field as an excerpt path.
func TestRAGBodyIsNeverAnExcerpt(t *testing.T) {
	p := newProjector(t, nil)
	short := "Short body " + secretBody // far under the 512-byte text budget
	raw := legacy(
		block{Source: "kb", DocumentID: "no-excerpt", Title: "T", Content: short},
		block{Source: "kb", DocumentID: "blank-excerpt", Excerpt: " \n", Content: short},
	)
	pr, r := project(t, p, "q", raw)
	if pr.Evidence != canonical.NoEvidence || len(r.Evidence) != 0 || r.Returned != 0 {
		t.Fatalf("a body became evidence: %s %s", pr.Evidence, pr.Result)
	}
	if bytes.Contains(pr.Result, []byte(secretBody)) || bytes.Contains(pr.Result, []byte("Short body")) {
		t.Fatalf("body reached the result: %s", pr.Result)
	}
	// Beside a block with an excerpt, only that block is evidence.
	raw = legacy(
		block{Source: "kb", DocumentID: "body-only", Content: short},
		block{Source: "kb", DocumentID: "with-excerpt", Excerpt: "the excerpt", Content: short},
	)
	pr, r = project(t, p, "q", raw)
	if pr.Evidence != canonical.EvidenceFound || r.Returned != 1 || r.Evidence[0].DocumentID != "with-excerpt" || r.Evidence[0].Excerpt != "the excerpt" {
		t.Fatalf("got %s", pr.Result)
	}
	if bytes.Contains(pr.Result, []byte(secretBody)) {
		t.Fatalf("body reached the result: %s", pr.Result)
	}
	if slices.Contains(rag.LegacyPaths().Excerpt, "content") {
		t.Fatalf("legacy excerpt paths name the body: %v", rag.LegacyPaths().Excerpt)
	}

	// An operator who knows a backend's field holds excerpts says so.
	p = newProjector(t, func(c *rag.Config) { c.Paths.Excerpt = []string{"excerpt", "content"} })
	pr, r = project2(t, p, "q", legacy(block{Source: "kb", DocumentID: "d", Content: "operator-chosen text"}))
	if pr.Evidence != canonical.EvidenceFound || r.Returned != 1 || r.Evidence[0].Excerpt != "operator-chosen text" {
		t.Fatalf("explicit excerpt path ignored: %s", pr.Result)
	}
}

// project2 is project without the planted-marker check, for a configuration
// that deliberately reads a field the legacy paths never read.
func project2(t *testing.T, p *rag.Projector, query string, raw []byte) (projectors.Projection, result) {
	t.Helper()
	in, _ := json.Marshal(map[string]string{"query": query})
	pr, err := p.Project(context.Background(), projectors.Call{ToolCallID: "call_8f2k", Input: in}, raw)
	if err != nil {
		t.Fatalf("project: %v", err)
	}
	var r result
	if err := json.Unmarshal(pr.Result, &r); err != nil {
		t.Fatal(err)
	}
	return pr, r
}

// Seed 003, scenario "RAG result has no usable excerpt".
func TestRAGNoUsableExcerpt(t *testing.T) {
	p := newProjector(t, nil)
	raw := []byte(`{"success":true,"message":"` + secretMessage + `","blocks":[
		{"source":"kb","document_id":"a","title":"t","excerpt":"   \n\t"},
		{"source":"kb","title":"no id","excerpt":"text"},
		{"source":"kb","document_id":"b","excerpt":42},
		"not an object", null]}`)
	pr, r := project(t, p, "anything about x", raw)
	if pr.Evidence != canonical.NoEvidence || r.Query != "anything about x" || r.Evidence == nil || len(r.Evidence) != 0 || r.Returned != 0 || r.Truncated {
		t.Fatalf("got %s %s", pr.Evidence, pr.Result)
	}
	if !bytes.Contains(pr.Result, []byte(`"evidence":[]`)) {
		t.Fatalf("evidence is not an empty list: %s", pr.Result)
	}
	// An empty blocks array is also no evidence.
	pr, _ = project(t, p, "q", legacy())
	if pr.Evidence != canonical.NoEvidence {
		t.Fatalf("empty blocks: %s", pr.Evidence)
	}
}

// Seed 003, scenario "RAG duplicate documents".
func TestRAGDuplicateDocuments(t *testing.T) {
	p := newProjector(t, nil)
	raw := legacy(
		block{Source: "kb", DocumentID: "d1", Excerpt: "first copy"},
		block{Source: "kb", DocumentID: "d2", Excerpt: "other document"},
		block{Source: "kb", DocumentID: "d1", Excerpt: "second copy"},
		block{Source: "wiki", DocumentID: "d1", Excerpt: "same id, other source"},
	)
	var first []byte
	for i := 0; i < 20; i++ {
		pr, r := project(t, p, "q", raw)
		if i == 0 {
			first = pr.Result
			if r.Returned != 3 || r.Evidence[0].Excerpt != "first copy" || r.Evidence[2].Source != "wiki" {
				t.Fatalf("dedup: %s", pr.Result)
			}
			for _, e := range r.Evidence {
				if e.Excerpt == "second copy" {
					t.Fatalf("duplicate kept: %s", pr.Result)
				}
			}
		} else if !bytes.Equal(first, pr.Result) {
			t.Fatalf("not deterministic:\n%s\n%s", first, pr.Result)
		}
	}
	// Escaped and plain spellings of one id are one document.
	raw = []byte(`{"success":true,"blocks":[{"source":"kb","document_id":"d\u0031","excerpt":"a"},{"source":"kb","document_id":"d1","excerpt":"b"}]}`)
	_, r := project(t, p, "q", raw)
	if r.Returned != 1 || r.Evidence[0].Excerpt != "a" {
		t.Fatalf("escaped duplicate: %+v", r)
	}
}

// Seed 003, scenario "Projection exceeds collection budget" (RAG side).
func TestRAGCollectionBudgetExceeded(t *testing.T) {
	lim := projectors.Limits{Total: 2048, Collection: 900, Item: 300, Items: 5, Text: 120}
	p := newProjector(t, func(c *rag.Config) { c.Limits = lim; c.MaxQueryBytes = 100 })
	var blocks []block
	body := strings.Repeat("Refund policy text é✓ ", 40)
	for i := 0; i < 40; i++ {
		blocks = append(blocks, block{Source: "kb", DocumentID: fmt.Sprintf("doc-%d", i), Title: "T", Excerpt: body})
	}
	in, _ := json.Marshal(map[string]string{"query": "refunds"})
	pr, err := p.Project(context.Background(), projectors.Call{ToolCallID: "call_1", Input: in}, legacy(blocks...))
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, pr.Result, lim.Total)
	var r result
	if err := json.Unmarshal(pr.Result, &r); err != nil {
		t.Fatal(err)
	}
	if !r.Truncated || r.Returned == 0 || r.Returned > lim.Items {
		t.Fatalf("returned=%d truncated=%v", r.Returned, r.Truncated)
	}
	arr := pr.Result[bytes.IndexByte(pr.Result, '[') : bytes.LastIndexByte(pr.Result, ']')+1]
	if len(arr) > lim.Collection {
		t.Fatalf("evidence took %d bytes, budget %d", len(arr), lim.Collection)
	}
	for _, e := range r.Evidence {
		if !strings.HasPrefix(body, e.Excerpt) || len(e.Excerpt) > lim.Text || !utf8.ValidString(e.Excerpt) {
			t.Fatalf("excerpt is not a bounded prefix: %q", e.Excerpt)
		}
	}
	// Items bound alone also truncates.
	p = newProjector(t, func(c *rag.Config) { c.Limits.Items = 2 })
	_, r2 := project(t, p, "q", legacy(blocks[:3]...))
	if r2.Returned != 2 || !r2.Truncated {
		t.Fatalf("items bound: %+v", r2)
	}
}

func TestRAGErrors(t *testing.T) {
	p := newProjector(t, nil)
	call := projectors.Call{ToolCallID: "c", Input: []byte(`{"query":"q"}`)}
	for name, raw := range map[string]string{
		"malformed":  `{"success":true,"blocks":[`,
		"failure":    `{"success":false,"blocks":[]}`,
		"no blocks":  `{"success":true}`,
		"not object": `[1,2]`,
		"blocks obj": `{"blocks":{}}`,
		"dup key":    `{"success":true,"blocks":[{"document_id":"d","document_id":"e","source":"s","excerpt":"x"}]}`,
		"surrogate":  `{"success":true,"blocks":[{"document_id":"d","source":"s","excerpt":"x\udc00"}]}`,
		"bad UTF-8":  "{\"success\":true,\"blocks\":[{\"document_id\":\"d\",\"source\":\"s\",\"excerpt\":\"x\xc3\"}]}",
	} {
		_, err := p.Project(context.Background(), call, []byte(raw))
		if canonical.CodeOf(err) != canonical.CodeProjectionFailed {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, in := range map[string]string{
		"no query":  `{}`,
		"extra":     `{"query":"q","x":1}`,
		"repeated":  `{"query":"q","query":"r"}`,
		"not text":  `{"query":1}`,
		"blank":     `{"query":"  "}`,
		"too long":  `{"query":"` + strings.Repeat("a", 1025) + `"}`,
		"malformed": `{"query":`,
		"control":   `{"query":"a\u0000b"}`,
	} {
		_, err := p.Project(context.Background(), projectors.Call{ToolCallID: "c", Input: []byte(in)}, legacy())
		if !errors.Is(err, canonical.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Project(ctx, call, legacy()); err == nil {
		t.Error("cancelled context accepted")
	}
}

func TestRAGConfiguredPaths(t *testing.T) {
	cfg := rag.DefaultConfig()
	cfg.Paths = rag.Paths{Blocks: "data.hits", Source: "meta.index", DocumentID: "meta.id", Title: "meta.name", Excerpt: []string{"highlight", "text"}}
	cfg.DefaultSource = "search"
	p, err := rag.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte(`{"data":{"hits":[{"meta":{"id":"x1","name":"X"},"text":"plain text","score":3},{"meta":{"index":"docs","id":"x2"},"highlight":"hl"}]}}`)
	pr, r := project(t, p, "q", raw)
	if pr.Evidence != canonical.EvidenceFound || r.Returned != 2 || r.Evidence[0].Source != "search" || r.Evidence[0].Excerpt != "plain text" || r.Evidence[1].Source != "docs" || r.Evidence[1].Excerpt != "hl" {
		t.Fatalf("%s", pr.Result)
	}
}

// A success flag is read at a nested plain path by the checking pass, and
// at a path only gjson resolves (an array index) by gjson: both refuse a
// false flag and accept a true or absent one.
func TestRAGSuccessPaths(t *testing.T) {
	blocks := `"blocks":[{"source":"kb","document_id":"d","excerpt":"e"}]`
	for _, c := range []struct {
		path, doc string
		failed    bool
	}{
		{"meta.ok", `{"meta":{"ok":false},` + blocks + `}`, true},
		{"meta.ok", `{"meta":{"ok":true},` + blocks + `}`, false},
		{"meta.ok", `{` + blocks + `}`, false},
		{"flags.1", `{"flags":[true,false],` + blocks + `}`, true},
		{"flags.0", `{"flags":[true,false],` + blocks + `}`, false},
		{"flags.5", `{"flags":[true],` + blocks + `}`, false},
	} {
		cfg := rag.DefaultConfig()
		cfg.Paths.Success = c.path
		p, err := rag.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Project(context.Background(), projectors.Call{ToolCallID: "c", Input: []byte(`{"query":"q"}`)}, []byte(c.doc))
		if failed := err != nil && strings.Contains(err.Error(), "reported failure"); failed != c.failed || !failed && err != nil {
			t.Errorf("%s on %s: %v, want failure %v", c.path, c.doc, err, c.failed)
		}
	}
}

// Property: for any raw bytes the projector returns an error or a valid,
// bounded result that carries none of the planted markers.
func FuzzRAG(f *testing.F) {
	f.Add(legacy(block{Source: "kb", DocumentID: "d", Title: "t", Excerpt: "e"}), uint16(0))
	f.Add([]byte(`{"success":true,"blocks":[{"source":"kb","document_id":"\ud800","excerpt":"\u00e9\"x"}]}`), uint16(300))
	f.Add([]byte(`{"blocks":[{"source":"s","document_id":"d","content":"`+strings.Repeat("é", 300)+`"}]}`), uint16(1))
	f.Fuzz(func(t *testing.T, raw []byte, total uint16) {
		// 320 is the smallest total that holds the 16-byte query bound.
		lim := projectors.Limits{Total: 320 + int(total)%4096, Items: 1 + int(total)%7, Text: 1 + int(total)%200}
		lim.Collection = lim.Total / 2
		lim.Item = max(64, lim.Collection/3)
		lim.Text = min(lim.Text, lim.Item)
		p, err := rag.New(rag.Config{Limits: lim, Paths: rag.LegacyPaths(), MaxQueryBytes: 16})
		if err != nil {
			t.Fatalf("limits %+v: %v", lim, err)
		}
		pr, err := p.Project(context.Background(), projectors.Call{ToolCallID: "call_1", Input: []byte(`{"query":"q"}`)}, raw)
		if err != nil {
			if canonical.CodeOf(err) == canonical.CodeStoreUnavailable {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		checkResultWith(t, pr.Result, lim.Total, notReadable(raw, neverRead))
		if !pr.Evidence.Ready() {
			t.Fatalf("evidence %s", pr.Evidence)
		}
	})
}

// notReadable returns the markers of planted that raw does not also carry
// in a field the projector may show: the fuzzer moves text between fields,
// and a marker it copied into "excerpt" is no longer a never-read field.
func notReadable(raw []byte, planted []string) []string {
	readable := map[string]bool{"source": true, "document_id": true, "title": true, "excerpt": true, "query": true}
	var shown []string
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	prevKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if prevKey {
			shown = append(shown, fmt.Sprint(tok))
		}
		str, ok := tok.(string)
		prevKey = ok && readable[str]
	}
	var out []string
	for _, m := range planted {
		keep := true
		for _, v := range shown {
			if strings.Contains(v, m) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, m)
		}
	}
	return out
}

func Example() {
	p, _ := rag.New(rag.DefaultConfig())
	raw := []byte(`{"success":true,"context_pack":"…","blocks":[
	  {"source":"kb","document_id":"refunds-101","title":"Refund approval","score":0.91,
	   "excerpt":"Refunds above 500 EUR need a second approver.","content":"…full body…"},
	  {"source":"kb","document_id":"refunds-101","excerpt":"duplicate"}]}`)
	pr, err := p.Project(context.Background(), projectors.Call{ToolCallID: "call_8f2k", Input: []byte(`{"query":"refund approval"}`)}, raw)
	fmt.Println(pr.Evidence, err)
	fmt.Println(string(pr.Result))
	// Output:
	// EVIDENCE_FOUND <nil>
	// {"query":"refund approval","tool_call_id":"call_8f2k","evidence":[{"source":"kb","document_id":"refunds-101","title":"Refund approval","excerpt":"Refunds above 500 EUR need a second approver."}],"returned":1,"truncated":false}
}

// Property: for mutated responses and random budgets, the projector returns
// an error or a valid result within budget that never carries a field it
// must not read.
func TestRAGProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	base := legacy(
		block{Source: "kb", DocumentID: "d1", Title: "Tïtle", Excerpt: strings.Repeat("exact é excerpt ", 30)},
		block{Source: "kb", DocumentID: "d2", Content: strings.Repeat("body ✓ ", 80)},
		block{Source: "wiki", DocumentID: "d1", Excerpt: "x"},
	)
	errs, oks := 0, 0
	for i := 0; i < 3000; i++ {
		lim := projectors.Limits{Total: 256 + r.IntN(3000), Items: 1 + r.IntN(5)}
		lim.Collection = max(64, r.IntN(lim.Total))
		lim.Item = max(64, r.IntN(lim.Collection+1))
		lim.Text = 1 + r.IntN(lim.Item)
		p, err := rag.New(rag.Config{Limits: lim, Paths: rag.LegacyPaths(), MaxQueryBytes: 8})
		if err != nil {
			t.Fatal(err)
		}
		pr, err := p.Project(context.Background(), projectors.Call{ToolCallID: "c", Input: []byte(`{"query":"q"}`)}, projtest.Mutate(r, base, true))
		if err != nil {
			errs++
			continue
		}
		oks++
		checkResultWith(t, pr.Result, lim.Total, neverRead)
	}
	t.Logf("%d errors, %d results", errs, oks)
	if oks == 0 || errs == 0 {
		t.Fatal("the property saw only one outcome")
	}
}

func TestRAGConcurrentUse(t *testing.T) {
	p := newProjector(t, nil)
	raw := legacy(block{Source: "kb", DocumentID: "d1", Excerpt: "one"}, block{Source: "kb", DocumentID: "d2", Excerpt: "two"})
	call := projectors.Call{ToolCallID: "c", Input: []byte(`{"query":"q"}`)}
	want, err := p.Project(context.Background(), call, raw)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []byte)
	for g := 0; g < 8; g++ {
		go func() {
			var last []byte
			for i := 0; i < 50; i++ {
				pr, err := p.Project(context.Background(), call, raw)
				if err != nil || !bytes.Equal(pr.Result, want.Result) {
					last = pr.Result
					break
				}
			}
			done <- last
		}()
	}
	for g := 0; g < 8; g++ {
		if bad := <-done; bad != nil {
			t.Fatalf("concurrent result differs: %s", bad)
		}
	}
}

// An excerpt keeps its words and has its values masked through the call's
// Masker; the document's id and source stay as they are, to cite it.
func TestExcerptsAreRedacted(t *testing.T) {
	p := newProjector(t, nil)
	raw := legacy(block{Source: "runbooks", DocumentID: "db-access", Title: "Database access for alice@example.org",
		Excerpt: "Connect with password=Tr0ub4dor&3 and the token ghp_0123456789abcdefghijABCDEFGHIJ012345 from 10.2.3.4, then run the migration."})
	in, _ := json.Marshal(map[string]string{"query": "db"})
	h := projtest.Handles{}
	pr, err := p.Project(context.Background(), projectors.Call{ToolCallID: "call_1", Input: in, Mask: h}, raw)
	if err != nil {
		t.Fatal(err)
	}
	var r result
	if err := json.Unmarshal(pr.Result, &r); err != nil || len(r.Evidence) != 1 {
		t.Fatalf("%v: %s", err, pr.Result)
	}
	e := r.Evidence[0]
	for _, v := range []string{"Tr0ub4dor&3", "ghp_0123456789", "10.2.3.4", "alice@example.org"} {
		if strings.Contains(string(pr.Result), v) {
			t.Errorf("%q survives: %s", v, pr.Result)
		}
	}
	if len(h) != 4 || e.Source != "runbooks" || e.DocumentID != "db-access" {
		t.Errorf("%d values masked; evidence %+v", len(h), e)
	}
	for _, w := range []string{"Connect with password=", " and the token ", " from ", ", then run the migration.", "Database access for "} {
		if !strings.Contains(e.Excerpt+e.Title, w) {
			t.Errorf("the words %q are lost: %+v", w, e)
		}
	}
}
