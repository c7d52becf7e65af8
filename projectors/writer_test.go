package projectors_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/projectors"
)

// build writes {"a":[text, text, ...],"n":k,"truncated":b} into a writer
// with the given budgets, the way projectors do, and returns the output.
func build(total, collection, item, textMax int, texts [][]byte, raw bool) ([]byte, bool, int) {
	w := projectors.NewWriter(nil, total)
	tail := len(`,"n":`) + 3 + len(`,"truncated":false`)
	if !w.BeginObject() || !w.Reserve(tail) || !w.Key("a") {
		return nil, false, 0
	}
	w.PushLimit(collection)
	if !w.BeginArray() {
		return nil, false, 0
	}
	n := 0
	for _, t := range texts {
		if n == 999 {
			break
		}
		m := w.Mark()
		w.PushLimit(item)
		ok := w.BeginObject() && w.Key("t")
		if ok {
			if raw {
				_, ok = w.RawText(t, textMax)
			} else {
				_, ok = w.Text(t, textMax)
			}
		}
		if !ok {
			w.Rollback(m)
			w.SetTruncated()
			break
		}
		w.EndObject()
		w.PopLimit()
		n++
	}
	w.EndArray()
	w.PopLimit()
	w.Release(tail)
	w.Key("n")
	w.Int(int64(n))
	w.Key("truncated")
	w.Bool(w.Truncated())
	w.EndObject()
	return w.Bytes(), w.Truncated(), n
}

type doc struct {
	A []struct {
		T string `json:"t"`
	} `json:"a"`
	N         int  `json:"n"`
	Truncated bool `json:"truncated"`
}

func checkBuilt(t *testing.T, out []byte, total, textMax int, texts []string, truncated bool) {
	t.Helper()
	if len(out) > total {
		t.Fatalf("output %d bytes over total budget %d", len(out), total)
	}
	if !json.Valid(out) {
		t.Fatalf("invalid JSON: %q", out)
	}
	var d doc
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatal(err)
	}
	if d.N != len(d.A) || d.Truncated != truncated {
		t.Fatalf("n=%d items=%d truncated=%v/%v", d.N, len(d.A), d.Truncated, truncated)
	}
	cut := len(d.A) < len(texts)
	for i, it := range d.A {
		if !strings.HasPrefix(texts[i], it.T) {
			t.Fatalf("item %d %q is not a prefix of %q", i, it.T, texts[i])
		}
		if len(it.T) > textMax {
			t.Fatalf("item %d has %d bytes over text budget %d", i, len(it.T), textMax)
		}
		cut = cut || it.T != texts[i]
	}
	if cut && !d.Truncated {
		t.Fatalf("data was cut but truncated=false: %s", out)
	}
}

func TestWriterCutsAtRuneBoundaries(t *testing.T) {
	texts := []string{"héllo wörld ✓ 日本語テキスト", "emoji 😀😀😀😀 end", `quotes " and \ backslash ` + "\n\t\x01 ctl"}
	for total := projectors.MinTotal; total < 420; total += 7 {
		for textMax := 1; textMax < 40; textMax += 3 {
			bs := make([][]byte, len(texts))
			for i, s := range texts {
				bs[i] = []byte(s)
			}
			out, tr, _ := build(total, total, total, textMax, bs, false)
			checkBuilt(t, out, total, textMax, texts, tr)
		}
	}
}

func TestWriterTextNeverSplitsEscape(t *testing.T) {
	s := strings.Repeat("\"\x01\\é", 40)
	for room := 0; room < 60; room++ {
		w := projectors.NewWriter(nil, room+2)
		w.Text([]byte(s), len(s))
		out := w.Bytes()
		if len(out) > room+2 {
			t.Fatalf("room %d: %d bytes", room, len(out))
		}
		if len(out) > 0 {
			var got string
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("room %d: %q: %v", room, out, err)
			}
			if !strings.HasPrefix(s, got) || !utf8.ValidString(got) {
				t.Fatalf("room %d: %q is not a prefix", room, got)
			}
		}
	}
}

func TestWriterRawTextDecodes(t *testing.T) {
	raw := `a\"b\\c\u00e9\ud83d\ude00\n\u0001 \/ end`
	var want string
	if err := json.Unmarshal([]byte(`"`+raw+`"`), &want); err != nil {
		t.Fatal(err)
	}
	w := projectors.NewWriter(nil, 200)
	whole, ok := w.RawText([]byte(raw), 100)
	var got string
	if err := json.Unmarshal(w.Bytes(), &got); err != nil || !ok || !whole || got != want {
		t.Fatalf("got %q (%v %v %v), want %q", got, whole, ok, err, want)
	}
	// Bounded: every prefix budget gives a prefix of the decoded text.
	for max := 0; max <= len(want); max++ {
		w.Reset(nil, 200)
		whole, _ := w.RawText([]byte(raw), max)
		if err := json.Unmarshal(w.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(want, got) || len(got) > max || (whole != (got == want)) || w.Truncated() == whole {
			t.Fatalf("max %d: got %q whole=%v", max, got, whole)
		}
	}
}

func TestWriterCollectionBudget(t *testing.T) {
	texts := make([]string, 50)
	bs := make([][]byte, 50)
	for i := range texts {
		texts[i] = strings.Repeat("x", 40)
		bs[i] = []byte(texts[i])
	}
	out, tr, n := build(4096, 300, 100, 64, bs, false)
	checkBuilt(t, out, 4096, 64, texts, tr)
	if !tr || n == 0 || n >= 50 {
		t.Fatalf("n=%d truncated=%v", n, tr)
	}
	start := strings.Index(string(out), "[")
	end := strings.LastIndex(string(out), "]")
	if end-start+1 > 300 {
		t.Fatalf("collection took %d bytes, budget 300", end-start+1)
	}
}

func TestWriterRollbackRestoresSeparators(t *testing.T) {
	w := projectors.NewWriter(nil, 100)
	w.BeginArray()
	w.Int(1)
	m := w.Mark()
	w.Int(2)
	w.BeginObject()
	w.Key("k")
	w.Rollback(m)
	w.Int(3)
	w.EndArray()
	if got := string(w.Bytes()); got != "[1,3]" {
		t.Fatalf("got %s", got)
	}
}

func TestWriterInvalidUTF8(t *testing.T) {
	w := projectors.NewWriter(nil, 100)
	w.Text([]byte("ok\xff\xfe!"), 50)
	if !json.Valid(w.Bytes()) || !utf8.Valid(w.Bytes()) {
		t.Fatalf("invalid output %q", w.Bytes())
	}
}

func FuzzWriter(f *testing.F) {
	f.Add([]byte("héllo \"wörld\"\n"), []byte(`a\u00e9\"b`), uint16(300), uint8(20))
	f.Add([]byte("\xff\xfe\x00"), []byte(`\ud800\u`), uint16(256), uint8(1))
	f.Fuzz(func(t *testing.T, text, raw []byte, total uint16, textMax uint8) {
		tot := int(total)%2048 + projectors.MinTotal
		tm := int(textMax) + 1
		texts := [][]byte{text, text, raw, text}
		for _, useRaw := range []bool{false, true} {
			out, tr, _ := build(tot, tot/2+32, tot/4+16, tm, texts, useRaw)
			if len(out) > tot || !json.Valid(out) {
				t.Fatalf("raw=%v: %d bytes (budget %d), valid=%v: %q", useRaw, len(out), tot, json.Valid(out), out)
			}
			var d doc
			if err := json.Unmarshal(out, &d); err != nil || d.Truncated != tr || d.N != len(d.A) {
				t.Fatalf("decode: %v %s", err, out)
			}
			if !useRaw && utf8.Valid(text) {
				for _, it := range d.A[:min(len(d.A), 2)] {
					if !strings.HasPrefix(string(text), it.T) || len(it.T) > tm {
						t.Fatalf("%q is not a bounded prefix of %q", it.T, text)
					}
				}
			}
		}
	})
}

func ExampleWriter() {
	w := projectors.NewWriter(nil, 64)
	w.BeginObject()
	w.Key("excerpt")
	w.Text([]byte("Refunds above 500 EUR need a second approver."), 20)
	w.Key("truncated")
	w.Bool(w.Truncated())
	w.EndObject()
	fmt.Println(string(w.Bytes()))
	// Output: {"excerpt":"Refunds above 500 EU","truncated":true}
}

// An element that does not fit its region leaves nothing behind, not even
// the comma before it.
func TestWriterItemIsWholeOrAbsent(t *testing.T) {
	w := projectors.NewWriter(nil, 256)
	w.BeginArray()
	m, ok := w.BeginItem(64)
	if !w.EndItem(m, ok && w.Key("a") && w.Int(1)) {
		t.Fatal("small item refused")
	}
	m, ok = w.BeginItem(16)
	if w.EndItem(m, ok && w.Key("long") && w.String("far more than sixteen bytes")) {
		t.Fatal("item over its region accepted")
	}
	w.EndArray()
	if got := string(w.Bytes()); got != `[{"a":1}]` {
		t.Fatalf("got %s", got)
	}
}

// A key taken from data is escaped, and written whole or not at all.
func TestWriterKeyText(t *testing.T) {
	w := projectors.NewWriter(nil, 64)
	w.BeginObject()
	if !w.KeyText([]byte("a\"b\n\xff")) || !w.Int(1) {
		t.Fatal("small key refused")
	}
	if w.KeyText([]byte(strings.Repeat("k", 80))) {
		t.Fatal("key over the budget accepted")
	}
	if !w.KeyText([]byte("c")) || !w.Null() {
		t.Fatal("second key refused")
	}
	w.EndObject()
	got := w.Bytes()
	var m map[string]any
	if err := json.Unmarshal(got, &m); err != nil || len(m) != 2 || m["a\"b\n\uFFFD"] != 1.0 {
		t.Fatalf("got %s (%v)", got, err)
	}
	if w.KeyText([]byte("x")) {
		t.Fatal("a key outside an object was accepted")
	}
}

func TestWriterNumber(t *testing.T) {
	w := projectors.NewWriter(nil, 16)
	w.BeginArray()
	if !w.Number([]byte("-1.5e+3")) || w.Number([]byte("1,2")) || w.Number([]byte("")) || w.Number([]byte("123456789012")) {
		t.Fatal("Number accepted or refused the wrong values")
	}
	w.EndArray()
	if got := string(w.Bytes()); got != "[-1.5e+3]" {
		t.Fatalf("got %s", got)
	}
}
