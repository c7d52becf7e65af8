package projectors

import (
	"strings"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/internal/strictjson"
	"github.com/toolcanon/toolcanon/projectors/internal/view"
)

// AppendDecodedCut appends the decoded value of the undecoded string
// contents raw to dst, up to max bytes, and reports whether it cut. A cut
// text ends at its last separator before the bound (white space or
// punctuation that ends a value), so that no part of a token cut in two
// reaches the redactor, which could no longer recognise it. Only the bytes
// kept are read.
func AppendDecodedCut(dst []byte, raw string, max int) ([]byte, bool) {
	if len(raw) <= max && strings.IndexByte(raw, '\\') < 0 {
		return append(dst, raw...), false // the common case: short, no escape
	}
	start := len(dst)
	i := 0
	for i < len(raw) && len(dst)-start < max {
		j := i
		for j < len(raw) && raw[j] != '\\' && j-i < max-(len(dst)-start) {
			j++
		}
		dst = append(dst, raw[i:j]...)
		i = j
		if i < len(raw) && raw[i] == '\\' && len(dst)-start < max {
			r, n := strictjson.DecodeEscape(view.Bytes(raw[i:]))
			dst = utf8.AppendRune(dst, r)
			i += n
		}
	}
	if i >= len(raw) && len(dst)-start <= max {
		return dst, false
	}
	msg := dst[start:]
	k := min(len(msg), max)
	for k > 0 && !IsSeparator(msg[k-1]) {
		k--
	}
	return dst[:start+k], true
}

// IsSeparator reports whether c ends a token for AppendDecodedCut.
func IsSeparator(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ';', '|', '"', '\'', '(', ')', '[', ']', '{', '}', '<', '>':
		return true
	}
	return false
}
