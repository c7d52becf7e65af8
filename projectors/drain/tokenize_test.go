package drain_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode"

	"github.com/toolcanon/toolcanon/projectors/drain"
)

// fields is the tokenizer's definition, written the slow way: the runs of
// runes that are neither white space nor information separators, invalid
// bytes counting as runes of their own.
func fields(msg []byte) [][]byte {
	return bytes.FieldsFunc(msg, func(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) })
}

func checkTokenize(t *testing.T, msg []byte, max int) {
	t.Helper()
	want := fields(msg)
	if max > 0 && len(want) > max {
		want = want[:max]
	}
	got := drain.TokenizeN(nil, msg, max)
	if len(got) != len(want) {
		t.Fatalf("%q (max %d): %q, want %q", msg, max, got, want)
	}
	for i := range want {
		// The same bytes at the same place: tokens are sub-slices of msg.
		if !bytes.Equal(got[i], want[i]) || &got[i][0] != &want[i][0] {
			t.Fatalf("%q (max %d): %q, want %q", msg, max, got, want)
		}
	}
}

// Separators of every kind at every offset of a word, multi-byte ones
// split across words, invalid and truncated UTF-8, bytes below 0x21 that
// do not separate.
func TestTokenizeEdges(t *testing.T) {
	seps := []string{" ", "\t", "\n", "\v", "\f", "\r", "\x1c", "\x1f", "\u0085", "\u00a0", "\u1680", "\u2000", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"}
	tokens := []string{"a", "é", "\x00", "\x08", "\x1b", "\x7f", "\xc2", "\xe2\x80", "\xe3\x80", "\xff", "\xc2\xa1", "\u2013", "<*>", "abcdefghijklmnopq"}
	for _, sep := range seps {
		for _, tok := range tokens {
			for pad := range 17 {
				msg := strings.Repeat("x", pad) + sep + tok + sep + sep + tok + strings.Repeat("y", pad) + sep
				for _, max := range []int{0, 1, 2, 3} {
					checkTokenize(t, []byte(msg), max)
					checkTokenize(t, []byte(msg[:len(msg)-len(sep)]), max)
					checkTokenize(t, []byte(msg[:len(msg)-1]), max)
				}
			}
		}
	}
}

// FuzzTokenize checks TokenizeN against its definition on any bytes.
func FuzzTokenize(f *testing.F) {
	f.Add([]byte("a b\tc\u00a0d\u3000e\xe2\x80 f\x1cg"), uint8(0))
	f.Add([]byte("0123456\u20007 0123456789abcdef\u2028x"), uint8(2))
	f.Fuzz(func(t *testing.T, msg []byte, max uint8) {
		checkTokenize(t, msg, int(max%8))
	})
}
