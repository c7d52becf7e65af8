package strictjson

import (
	"unicode/utf8"
	"unsafe"
)

// The canonical string form is RFC 8785's (section 3.2.2.2): '"' and '\\'
// escaped, the five short escapes \b \f \n \r \t, \u00xx for the other
// control characters, and every other character as raw UTF-8. For valid
// UTF-8 it is the form JCS signs; invalid UTF-8 cannot be in a JSON string,
// so each invalid byte is written as U+FFFD and the output is always
// strict JSON.

// AppendQuoted appends s as a JSON string, quotes included, in the
// canonical form.
func AppendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = AppendEscaped(dst, s)
	return append(dst, '"')
}

// AppendEscaped appends the contents of the canonical JSON string of s,
// without the quotes.
func AppendEscaped(dst []byte, s string) []byte {
	b := stringBytes(s)
	last := 0
	for i := plainPrefix(b, 0); i < len(b); i = plainPrefix(b, i) {
		c := b[i]
		if c < utf8.RuneSelf {
			dst = append(dst, s[last:i]...)
			dst = AppendRune(dst, rune(c))
			i++
			last = i
			continue
		}
		// Non-ASCII text runs to the next byte to escape: validate the run
		// at once; only a run with invalid bytes is read rune by rune.
		j, bad := textRun(b, i)
		if bad < 0 {
			i = j
			continue
		}
		for i < j {
			r, size := utf8.DecodeRuneInString(s[i:j])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[last:i]...)
				dst = append(dst, "\uFFFD"...)
				last = i + 1
			}
			i += size
		}
	}
	return append(dst, s[last:]...)
}

// EscapedLen returns len(AppendEscaped(nil, s)).
func EscapedLen(s string) int {
	b := stringBytes(s)
	n := 0
	i := 0
	for {
		j := plainPrefix(b, i)
		n += j - i
		if j >= len(b) {
			return n
		}
		c := b[j]
		if c < utf8.RuneSelf {
			n += RuneLen(rune(c))
			i = j + 1
			continue
		}
		r, size := utf8.DecodeRuneInString(s[j:])
		if r == utf8.RuneError && size == 1 {
			n += 3
		} else {
			n += size
		}
		i = j + size
	}
}

// stringBytes views s as bytes, to be read only.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// AppendRune appends the canonical escaped form of r. A rune that UTF-8
// cannot encode (a surrogate, or beyond U+10FFFF) is written as U+FFFD.
func AppendRune(dst []byte, r rune) []byte {
	switch r {
	case '"':
		return append(dst, '\\', '"')
	case '\\':
		return append(dst, '\\', '\\')
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	if r >= 0 && r < 0x20 {
		return append(dst, '\\', 'u', '0', '0', HexDigits[r>>4], HexDigits[r&0xF])
	}
	return utf8.AppendRune(dst, r)
}

// RuneLen returns len(AppendRune(nil, r)).
func RuneLen(r rune) int {
	switch {
	case r == '"' || r == '\\' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r >= 0 && r < 0x20:
		return 6
	}
	if n := utf8.RuneLen(r); n > 0 {
		return n
	}
	return 3 // U+FFFD
}
