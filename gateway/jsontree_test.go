package gateway

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestTreeRefusesWhatStrictJSONRefuses(t *testing.T) {
	for doc, off := range map[string]int{
		`{"a":1,"a":2}`:        7,
		`{"a":"\ud800"}`:       6,
		`{"a":"\udc00\ud800"}`: 6,
		"{\"a\":\"x\ty\"}":     7,
		`[1,]`:                 3,
		`{"a":1}x`:             7,
		"\"\xff\"":             1,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`: 33,
	} {
		_, err := parseTree([]byte(doc))
		te, ok := err.(*treeError)
		if !ok || te.off != off {
			t.Errorf("%q: %v (offset %v), want a refusal at %d", doc, err, te, off)
		}
	}
	n, err := parseTree([]byte(` {"a":["x\u00e9\ud83d\ude00",-1.5e3,true,null]} `))
	if err != nil || n.member("a").elems[0].str != "xé😀" || n.member("a").elems[1].str != "-1.5e3" {
		t.Fatalf("%+v %v", n, err)
	}
	if line, col := position([]byte("ab\ncd\nef"), 4); line != 2 || col != 2 {
		t.Fatalf("position = %d:%d", line, col)
	}
}

// FuzzTree: the tree parser accepts only valid JSON, and each value's raw
// bytes are themselves valid JSON.
func FuzzTree(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"\u00e9"}],"c":null}`))
	f.Add([]byte(`"\ud83d\ude00"`))
	f.Add([]byte(`[1e400, -0, 0.5]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := parseTree(data)
		if err != nil {
			if te, ok := err.(*treeError); !ok || te.off < 0 || te.off > len(data) {
				t.Fatalf("refusal without a place: %v", err)
			}
			return
		}
		if !json.Valid(data) || !bytes.Equal(n.raw, bytes.TrimSpace(data)) {
			t.Fatalf("accepted %q", data)
		}
		var walk func(*jnode)
		walk = func(n *jnode) {
			if !json.Valid(n.raw) {
				t.Fatalf("value %q is not JSON", n.raw)
			}
			for _, v := range append(n.vals, n.elems...) {
				walk(v)
			}
		}
		walk(n)
	})
}
