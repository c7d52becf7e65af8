package boundary

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/strictjson"
)

func TestHandleRefsBoundsTheDistinctHandles(t *testing.T) {
	var b strings.Builder
	for i := range MaxHandlesPerInput + 1 {
		fmt.Fprintf(&b, "<ID:%08d> <ID:%08d> ", i, i) // each twice: counted once
	}
	ids, _, over := handleRefs([]byte(b.String()), MaxHandlesPerInput)
	if !over || len(ids) != MaxHandlesPerInput {
		t.Fatalf("handleRefs found %d ids, over %v; want %d and over", len(ids), over, MaxHandlesPerInput)
	}
	ids, kinds, over := handleRefs([]byte(`{"q":"<SECRET:AAAAAAAA> <SECRET> <IP:BBBBBBBB> <SECRET:AAAAAAAA>"}`), MaxHandlesPerInput)
	if over || !slices.Equal(ids, []string{"AAAAAAAA", "BBBBBBBB"}) || !slices.Equal(kinds, []canonical.Kind{"SECRET", "IP"}) {
		t.Fatalf("handleRefs = %q, %q, %v", ids, kinds, over)
	}
}

func TestMinterIsKeyedAndStable(t *testing.T) {
	a, b := newMinter([]byte("secret-a"), false), newMinter([]byte("secret-b"), true)
	h1 := string(a.AppendMask(nil, canonical.KindSecret, []byte("hunter2")))
	h2 := string(a.AppendMask(nil, canonical.KindIP, []byte("hunter2")))
	h3 := string(b.AppendMask(nil, canonical.KindSecret, []byte("hunter2")))
	if h1[len("<SECRET:"):] != h2[len("<IP:"):] {
		t.Fatalf("one value, two kinds: %s, %s — the id must be the value's", h1, h2)
	}
	if h1 == h3 {
		t.Fatalf("two secrets minted the same handle %s", h1)
	}
	if _, id, _, ok := canonical.ParseHandle([]byte(h3)); !ok || !canonical.ValidHandleID(id) {
		t.Fatalf("minted %q, not a handle", h3)
	}
	if v, ok := b.value(h3[len("<SECRET:") : len(h3)-1]); !ok || string(v) != "hunter2" {
		t.Fatalf("a collecting minter kept %q, %v", v, ok)
	}
	if got := a.minted(); len(got) != 1 {
		t.Fatalf("minted ids %q, want one", got)
	}
	if got := string(a.AppendMask(nil, "bad kind", []byte("x"))); !strings.HasPrefix(got, "<SECRET:") {
		t.Fatalf("an invalid kind minted %q", got)
	}
}

// Substituting values into a valid JSON input keeps it valid JSON, whatever
// the values hold.
func FuzzSubstitute(f *testing.F) {
	f.Add(`use <SECRET:AAAAAAAA> now`, "p\"a\\ss\n\x00w\u2028rd")
	f.Add(`<ID:BBBBBBBB><ID:BBBBBBBB>`, "")
	f.Fuzz(func(t *testing.T, text, value string) {
		input := strictjson.AppendQuoted([]byte(`{"q":`), text)
		input = append(input, '}')
		if !strictjson.Valid(input) {
			return
		}
		ids, _, over := handleRefs(input, MaxHandlesPerInput)
		if over {
			return
		}
		r := resolved{ids: ids, values: make([][]byte, len(ids))}
		for i := range ids {
			r.values[i] = []byte(value)
		}
		out := substitute(input, r)
		if utf8.ValidString(value) && !strictjson.Valid(out) {
			t.Fatalf("substitute(%q) = %q: not JSON", input, out)
		}
		if !strings.Contains(value, "<") {
			if off, _ := canonical.IndexHandle(out); off >= 0 && len(ids) > 0 {
				t.Fatalf("substitute left a handle in %q", out)
			}
		}
	})
}
