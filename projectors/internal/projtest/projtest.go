// Package projtest holds the checks and inputs that the projectors' tests
// and benchmarks share: the properties every projection must have, random
// mutations of raw responses, and the helpers of the encoding/json
// baselines.
package projtest

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// CheckResult fails tb unless out is strict JSON of at most total bytes
// that carries none of secrets and no top-level key outside allowed.
func CheckResult(tb testing.TB, out []byte, total int, secrets []string, allowed ...string) {
	tb.Helper()
	if err := strictjson.Check(out, strictjson.MaxDepth); len(out) > total || err != nil {
		tb.Fatalf("result of %d bytes (budget %d): %v: %q", len(out), total, err, out)
	}
	for _, s := range secrets {
		if bytes.Contains(out, []byte(s)) {
			tb.Fatalf("result leaks %q: %s", s, out)
		}
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(out, &keys); err != nil {
		tb.Fatal(err)
	}
	for k := range keys {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			tb.Fatalf("unexpected field %q", k)
		}
	}
}

// Mutate returns a copy of raw with a few random byte edits and cuts, and
// with splice also copies of one part of raw into another.
func Mutate(r *rand.Rand, raw []byte, splice bool) []byte {
	ops := 4
	if splice {
		ops = 5
	}
	b := append([]byte(nil), raw...)
	for n := r.IntN(4); n >= 0 && len(b) > 0; n-- {
		i := r.IntN(len(b))
		switch op := r.IntN(ops); {
		case op == 0:
			b[i] = byte(r.IntN(256))
		case op == 1:
			b = b[:i]
		case op == 2:
			b = append(b[:i], b[min(len(b), i+r.IntN(16)):]...)
		case op == 3 && splice:
			j := r.IntN(len(b))
			b = append(b[:i:i], append(append([]byte(nil), b[j:min(len(b), j+r.IntN(32))]...), b[i:]...)...)
		default:
			b[i] = `"{}[],:\\`[r.IntN(9)]
		}
	}
	return b
}

// Marshal encodes v with encoding/json, without HTML escaping and without
// the trailing newline.
func Marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// CutRunes returns the longest prefix of s of at most max bytes that ends on
// a rune boundary, and whether it cut anything.
func CutRunes(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// CutAtSeparator is projectors.AppendDecodedCut for a decoded string: s
// whole when it has at most max bytes, else its prefix of at most max
// bytes that ends at its last separator.
func CutAtSeparator(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	k := max
	for k > 0 && !strings.ContainsRune(" \t\n\r,;|\"'()[]{}<>", rune(s[k-1])) {
		k--
	}
	return s[:k], true
}
