package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/internal/cputime"
	"github.com/toolcanon/toolcanon/internal/strictjson"
)

func TestCheck(t *testing.T) {
	good := []string{`{}`, `[]`, `"x"`, `0`, `-0.5e+10`, `true`, `null`, ` {"a":[1,true,false,null,"\u00e9\n\"",{"b":{}}]} `,
		`"` + strings.Repeat("abcdefgh", 9) + `é"`, `[1e5,2E-3,-1]`, `"\ud83d\ude00"`, `{"a":1,"A":2,"a\u0000":3}`,
		`{"a":{"a":1},"b":{"a":1}}`, `[{"k":1},{"k":2}]`, `"\u2028\ufffd"`, `{"é":1,"e\u0301":2}`}
	bad := map[string]string{
		``: "unexpected end", `{`: "expected a string key", `{"a"}`: "expected ':'", `{"a":}`: "unexpected character",
		`[1,]`: "unexpected character", `01`: "trailing data", `1.`: "digits expected after", `-`: "invalid number",
		`"\x"`: "invalid escape", `"\u12g4"`: "invalid \\u escape", "\"\x01\"": "control character", "\"\xff\"": "invalid UTF-8",
		"\"\xed\xa0\x80\"": "invalid UTF-8", `{"a":1,}`: "expected a string key", `tru`: "invalid literal", `[1] 2`: "trailing data",
		`"abc`: "unterminated string", `{"a" 1}`: "expected ':'", `+1`: "unexpected character", `.5`: "unexpected character",
		`"\ud800"`: "lone high surrogate", `"\ud800x"`: "lone high surrogate", `"\udc00"`: "lone low surrogate",
		`"\ud800\u0041"`: "lone high surrogate", `"\ud800\ud800"`: "lone high surrogate", `{"a":1,"a":2}`: "duplicate object key",
		`{"a":1,"\u0061":2}`: "duplicate object key", `{"x":{"k":1,"k":2}}`: "duplicate object key", `1e`: "digits expected in the exponent",
		`{"\ud800":1}`: "lone high surrogate", `"\`: "unterminated escape",
		strings.Repeat("[", 600) + strings.Repeat("]", 600): "nesting deeper than 512",
	}
	for _, s := range good {
		if err := strictjson.Check([]byte(s), strictjson.MaxDepth); err != nil {
			t.Errorf("refused %q: %v", s, err)
		}
	}
	for s, reason := range bad {
		err := strictjson.Check([]byte(s), strictjson.MaxDepth)
		var se *strictjson.SyntaxError
		if !errors.As(err, &se) || !strings.Contains(se.Reason, reason) || se.Offset < 0 || se.Offset > len(s) {
			t.Errorf("%q: got %v, want %q", s, err, reason)
		}
		if strictjson.Valid([]byte(s)) {
			t.Errorf("Valid(%q)", s)
		}
	}
	// Strict marks what the RFC 8259 grammar allows and strict JSON refuses.
	for s, strict := range map[string]bool{"\"\xff\"": true, `"\ud800"`: true, `{"a":1,"a":2}`: true, `[[1]]`: true,
		`{"a":`: false, `"\x"`: false, `01`: false, "\"\x01\"": false} {
		var se *strictjson.SyntaxError
		if err := strictjson.Check([]byte(s), 1); !errors.As(err, &se) || se.Strict != strict {
			t.Errorf("%q: %v, want Strict=%v", s, err, strict)
		}
	}
	if err := strictjson.Check([]byte(`[[[]]]`), 2); err == nil {
		t.Error("depth 3 accepted under a bound of 2")
	}
	if err := strictjson.Check([]byte(`[[{}]]`), 3); err != nil {
		t.Errorf("depth 3 refused under a bound of 3: %v", err)
	}
}

func TestValidObject(t *testing.T) {
	for s, want := range map[string]bool{` {"a":1} `: true, `[]`: false, `"x"`: false, `{"a":1,"a":1}`: false, "{\"q\":\"\xff\"}": false, ``: false} {
		if got := strictjson.ValidObject([]byte(s)); got != want {
			t.Errorf("ValidObject(%q) = %v", s, got)
		}
	}
}

// Large objects are indexed: a duplicate far from its twin, or one that
// differs only by an escape, is still found.
func TestDuplicateInLargeObject(t *testing.T) {
	for _, n := range []int{15, 16, 17, 40, 5000} {
		var b strings.Builder
		b.WriteString(`{"inner":{"a":1,"a\u0062":2}`)
		for i := range n {
			fmt.Fprintf(&b, `,"k%d":{"k%d":1}`, i, i)
		}
		ok := b.String() + "}"
		if err := strictjson.Check([]byte(ok), 8); err != nil {
			t.Fatalf("%d members: %v", n, err)
		}
		for _, dup := range []string{`,"k0":1}`, `,"k\u0030":1}`, fmt.Sprintf(`,"k%d":1}`, n-1), `,"inner":1}`} {
			if err := strictjson.Check([]byte(b.String()+dup), 8); err == nil || !strings.Contains(err.Error(), "duplicate") {
				t.Fatalf("%d members + %s: %v", n, dup, err)
			}
		}
	}
}

// reference is an independent oracle: encoding/json's grammar, UTF-8
// validity, paired surrogate escapes, unique names per object and the depth.
func reference(b []byte, maxDepth int) bool {
	if !json.Valid(b) || !utf8.Valid(b) || !pairedSurrogates(b) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // strict JSON bounds no number's size
	type frame struct {
		names   map[string]bool // nil for an array
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.names != nil && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].names != nil {
					stack[len(stack)-1].wantKey = true
				}
				continue
			}
			k := tok.(string)
			if top.names[k] {
				return false
			}
			top.names[k] = true
			top.wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			f := &frame{}
			if tok == json.Delim('{') {
				f.names, f.wantKey = map[string]bool{}, true
			}
			stack = append(stack, f)
			if len(stack) > maxDepth {
				return false
			}
			continue
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].names != nil {
			stack[len(stack)-1].wantKey = true
		}
	}
}

// pairedSurrogates reports whether every \u escape of a surrogate is a high
// one followed by a low one, reading escapes with strconv.
func pairedSurrogates(b []byte) bool {
	s := string(b)
	in := false
	for i := 0; i < len(s); i++ {
		switch {
		case !in:
			in = s[i] == '"'
		case s[i] == '"':
			in = false
		case s[i] == '\\' && i+1 < len(s) && s[i+1] != 'u':
			i++
		case s[i] == '\\' && i+6 <= len(s):
			u, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
			if err != nil {
				return true // not JSON: the grammar check refuses it
			}
			i += 5
			if u >= 0xDC00 && u <= 0xDFFF {
				return false
			}
			if u >= 0xD800 && u <= 0xDBFF {
				if i+7 > len(s) || s[i+1:i+3] != `\u` {
					return false
				}
				lo, err := strconv.ParseUint(s[i+3:i+7], 16, 32)
				if err != nil || lo < 0xDC00 || lo > 0xDFFF {
					return false
				}
				i += 6
			}
		}
	}
	return true
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x\u00e9"]}`, `[1,2`, "\"\xff\"", `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`,
		`"\ud83d\ude00"`, `"\ud800"`, `{"k":"` + strings.Repeat("z", 40) + `\"q"}`, `[[[[]]]]`, `{"":{"":[]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		const depth = 6
		ours := strictjson.Check(b, depth) == nil
		if want := reference(b, depth); ours != want {
			t.Fatalf("Check(%q) ok=%v, the reference says %v", b, ours, want)
		}
		if ours != strictjson.Valid(b) && bytes.Count(b, []byte("[")) < depth && bytes.Count(b, []byte("{")) < depth {
			t.Fatalf("Valid(%q) disagrees with Check", b)
		}
	})
}

// FuzzAppendQuoted: the canonical form is strict JSON that decodes to the
// input with each invalid byte read as U+FFFD, and it escapes exactly what
// RFC 8785 escapes.
func FuzzAppendQuoted(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\s/", "\x00\x1f\x7f\n\t\b\f\r", "é€😂", "\xff\xfe", "\xed\xa0\x80", "\u2028<>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := strictjson.AppendQuoted([]byte("x"), s)[1:]
		if !strictjson.Valid(out) {
			t.Fatalf("%q -> %q is not strict JSON", s, out)
		}
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		for _, r := range s {
			want.WriteRune(r)
		}
		if back != want.String() {
			t.Fatalf("%q -> %q -> %q", s, out, back)
		}
		if n := strictjson.EscapedLen(s); n != len(out)-2 {
			t.Fatalf("EscapedLen(%q) = %d, wrote %d", s, n, len(out)-2)
		}
		for i := 1; i < len(out)-1; i++ {
			if c := out[i]; c < 0x20 || (c == '\\' && !strings.ContainsRune(`"\bfnrtu`, rune(out[i+1]))) {
				t.Fatalf("%q -> %q: byte %d", s, out, i)
			}
			if out[i] == '\\' {
				i++
			}
		}
		// What a decoder reads back, the escaper writes the same way.
		var rt []byte
		if utf8.ValidString(s) {
			rt = strictjson.AppendQuoted(nil, back)
			if !bytes.Equal(rt, out) {
				t.Fatalf("not canonical: %q vs %q", rt, out)
			}
		}
	})
}

func TestAppendUnescaped(t *testing.T) {
	for raw, want := range map[string]string{
		`plain`: "plain", `a\"b\\c\/d`: `a"b\c/d`, `\b\f\n\r\t`: "\b\f\n\r\t", `\u00e9\ud83d\ude02`: "é😂",
		`\ud800x`: "\uFFFDx", `\udc00`: "\uFFFD", `\q`: "\uFFFD", `\u12`: "\uFFFD12", `\`: "\uFFFD",
	} {
		if got := string(strictjson.AppendUnescaped(nil, []byte(raw))); got != want {
			t.Errorf("%q: got %q, want %q", raw, got, want)
		}
	}
}

func TestHex4(t *testing.T) {
	for s, want := range map[string]rune{"0000": 0, "00e9": 0xe9, "ABCD": 0xabcd, "fFfF": 0xffff} {
		if r, ok := strictjson.Hex4([]byte(s)); !ok || r != want {
			t.Errorf("%s: %x %v", s, r, ok)
		}
	}
	for _, s := range []string{"", "123", "12g4", "-123"} {
		if _, ok := strictjson.Hex4([]byte(s)); ok {
			t.Errorf("%q accepted", s)
		}
	}
}

// hostileDocs are inputs shaped to make a validator slow: many names in one
// object, many tiny objects, long strings of escapes and deep nesting.
func hostileDocs(size int) map[string][]byte {
	docs := map[string][]byte{}
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%x":0`, i)
	}
	b.WriteByte('}')
	docs["wide object"] = bytes.Clone(b.Bytes())
	b.Reset()
	b.WriteByte('{')
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"\u00%02x%x":0`, 0x20+i%90, i)
	}
	b.WriteByte('}')
	docs["escaped names"] = bytes.Clone(b.Bytes())
	b.Reset()
	b.WriteByte('[')
	for b.Len() < size {
		b.WriteString(`{"a":1,"b":"x"},`)
	}
	b.WriteString("{}]")
	docs["tiny objects"] = bytes.Clone(b.Bytes())
	docs["escapes"] = []byte(`"` + strings.Repeat(`\ud83d\ude00\n`, size/14) + `"`)
	deep := strings.Repeat(`{"a":[`, 80) + strings.Repeat(`]}`, 80)
	docs["nesting"] = []byte("[" + strings.Repeat(deep+",", size/len(deep)) + "0]")
	return docs
}

// Check costs the same per byte on 64 KiB and on 1 MiB of any hostile
// shape: the best of several runs, in thread processor time, measured in
// one process, so that a loaded machine does not tell.
func TestCheckLinearTime(t *testing.T) {
	small, large := hostileDocs(64<<10), hostileDocs(1<<20)
	for name := range small {
		perByte := func(doc []byte) float64 {
			best := time.Duration(1 << 62)
			for range 5 {
				var err error
				best = min(best, cputime.Measure(func() { err = strictjson.Check(doc, strictjson.MaxDepth) }))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			return float64(best.Nanoseconds()) / float64(len(doc))
		}
		s, l := perByte(small[name]), perByte(large[name])
		t.Logf("%-14s %6.2f ns/B at 64 KiB, %6.2f ns/B at 1 MiB, ratio %.2f", name, s, l, l/s)
		if l > 3*s {
			t.Errorf("%s: %.2f ns/B at 1 MiB is over 3x the %.2f ns/B at 64 KiB", name, l, s)
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	var logs bytes.Buffer
	logs.WriteString(`{"success":true,"entries":[`)
	for i := 0; logs.Len() < 1<<20; i++ {
		fmt.Fprintf(&logs, `{"timestamp":"2026-03-01T09:%02d:03.125Z","level":"ERROR","service":"checkout-api","message":"payment timeout after %dms for order %d","instance":"checkout-api-7d9f8b6c5d-x2k4p","metrics":{"latency_ms":3004,"cpu":0.82}},`, i%60, i, i)
	}
	logs.WriteString(`{}]}`)
	docs := hostileDocs(1 << 20)
	docs["log response"] = logs.Bytes()
	for _, name := range []string{"log response", "wide object", "tiny objects", "escapes"} {
		doc := docs[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if err := strictjson.Check(doc, strictjson.MaxDepth); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if !json.Valid(doc) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

func ExampleCheck() {
	fmt.Println(strictjson.Check([]byte(`{"q":"ok"}`), strictjson.MaxDepth))
	fmt.Println(strictjson.Check([]byte(`{"q":1,"\u0071":2}`), strictjson.MaxDepth))
	fmt.Println(strictjson.Check([]byte(`{"q":"\ud800"}`), strictjson.MaxDepth))
	// Output:
	// <nil>
	// invalid JSON at byte 7: duplicate object key
	// invalid JSON at byte 6: lone high surrogate
}

func ExampleAppendQuoted() {
	fmt.Println(string(strictjson.AppendQuoted(nil, "tab\there \"é\" \x01")))
	// Output: "tab\there \"é\" \u0001"
}

// FuzzDecodeString: DecodeString accepts exactly what ScanString accepts,
// ends at the same byte and decodes as AppendUnescaped does, which is what
// encoding/json reads.
func FuzzDecodeString(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\nb\u00e9\ud83d\ude02"`, `"\ud800"`, "\"\xff\"", `"x\"y" tail`, `"é\\"`, `"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		end, escaped, err := strictjson.ScanString(b, 0)
		out, end2, escaped2, err2 := strictjson.DecodeString([]byte("pre"), b, 0)
		if (err == nil) != (err2 == nil) || end != end2 || escaped != escaped2 {
			t.Fatalf("%q: ScanString %d %v %v, DecodeString %d %v %v", b, end, escaped, err, end2, escaped2, err2)
		}
		if err != nil {
			if err.Offset != err2.Offset || err.Reason != err2.Reason {
				t.Fatalf("%q: %v vs %v", b, err, err2)
			}
			return
		}
		want := b[1 : end-1]
		if escaped {
			want = strictjson.AppendUnescaped(nil, want)
		}
		got := out[3:]
		if !escaped {
			got = b[1 : end-1]
			if len(out) != 3 {
				t.Fatalf("%q: appended %q without an escape", b, out)
			}
		}
		var dec string
		if e := json.Unmarshal(b[:end], &dec); e != nil || dec != string(want) || string(got) != dec {
			t.Fatalf("%q: got %q, want %q, encoding/json %q (%v)", b, got, want, dec, e)
		}
	})
}

// The escaper costs the same per byte on 64 KiB and 1 MiB of invalid bytes,
// runes to keep, and bytes to escape.
func TestEscapeLinearTime(t *testing.T) {
	for _, unit := range []string{"\xff", "é", `"`, "\x01", "a\xffé\\"} {
		perByte := func(n int) float64 {
			s := strings.Repeat(unit, n/len(unit))
			best := time.Duration(1 << 62)
			var buf []byte
			for range 5 {
				best = min(best, cputime.Measure(func() {
					buf = strictjson.AppendQuoted(buf[:0], s)
					_ = strictjson.EscapedLen(s)
				}))
			}
			return float64(best.Nanoseconds()) / float64(len(s))
		}
		s, l := perByte(64<<10), perByte(1<<20)
		t.Logf("escape %-12q %6.2f ns/B at 64 KiB, %6.2f ns/B at 1 MiB, ratio %.2f", unit, s, l, l/s)
		if l > 3*s {
			t.Errorf("escape %q: %.2f ns/B at 1 MiB is over 3x the %.2f ns/B at 64 KiB", unit, l, s)
		}
	}
}

// FuzzSkipString: on a string Check accepts, SkipString ends where
// ScanString does.
func FuzzSkipString(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\"b\\"`, `"\u0022x"`, `"` + strings.Repeat(`\\`, 9) + `" tail`, `"é\n😀"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		end, _, err := strictjson.ScanString(b, 0)
		if err != nil {
			return
		}
		if got := strictjson.SkipString(b, 0); got != end {
			t.Fatalf("%q: SkipString %d, ScanString %d", b, got, end)
		}
	})
}
