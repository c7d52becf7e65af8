// Package strictjson is the module's one definition of strict JSON: the
// validator, the string and number scanners, the string decoder, the
// canonical string escaper and the hexadecimal helpers. The registry, the
// projectors, the progress report parser, the boundary and the canonical
// record all use it, so that no two parts disagree about what JSON is.
//
// Strict JSON is RFC 8259 JSON with valid UTF-8 everywhere, \u escapes of
// surrogates only as high-low pairs, no object with two members of the same
// name (compared after decoding escapes) and a bounded nesting depth.
// Nothing is coerced: what is not strict is refused.
//
// Every function runs in time linear in its input, whatever the input; the
// validator recurses at most as deep as its depth bound. The package uses
// the standard library only.
package strictjson

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// SyntaxError says where a document stops being strict JSON and why. Its
// text is fixed and never quotes the document.
type SyntaxError struct {
	Offset int    // byte offset where the problem was found
	Reason string // what is wrong
	// Strict is true when the document follows the RFC 8259 grammar and
	// breaks only a rule of strictness: invalid UTF-8, an unpaired
	// surrogate escape, a repeated member name, nesting beyond the bound.
	Strict bool
}

// Error implements error.
func (e *SyntaxError) Error() string {
	return "invalid JSON at byte " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

func errAt(off int, reason string) *SyntaxError { return &SyntaxError{Offset: off, Reason: reason} }

func errStrict(off int, reason string) *SyntaxError {
	return &SyntaxError{Offset: off, Reason: reason, Strict: true}
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

// plainPrefix returns the index of the first byte at or after i that is a
// quote, a backslash, a control byte or not ASCII. It reads eight bytes at
// a time: most JSON text is plain.
func plainPrefix(b []byte, i int) int {
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ (lo8 * '"')
		s := x ^ (lo8 * '\\')
		special := ((q - lo8) &^ q) | ((s - lo8) &^ s) | ((x - lo8*0x20) &^ x) | x
		special &= hi8
		if special != 0 {
			return i + bits.TrailingZeros64(special)>>3
		}
		i += 8
	}
	for i < len(b) {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return i
		}
		i++
	}
	return i
}

// ScanString scans the string whose opening quote is at b[i] and returns
// the index just after its closing quote, and whether its contents hold an
// escape (contents without one are their own decoded value). It refuses
// control bytes, invalid UTF-8, malformed escapes and surrogate escapes
// that are not a high-low pair.
func ScanString(b []byte, i int) (end int, escaped bool, err *SyntaxError) {
	if i >= len(b) || b[i] != '"' {
		return i, false, errAt(i, "expected a string")
	}
	i++
	for {
		i = plainPrefix(b, i)
		if i >= len(b) {
			return i, escaped, errAt(i, "unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			n, err := escapeLen(b, i)
			if err != nil {
				return i, escaped, err
			}
			i += n
		case c < 0x20:
			return i, escaped, errAt(i, "control character in a string")
		default:
			j, bad := textRun(b, i)
			if bad >= 0 {
				return bad, escaped, errStrict(bad, "invalid UTF-8")
			}
			i = j
		}
	}
}

// SkipString returns the index just after the string whose opening quote
// is at b[i], in a document that Check accepted. It looks only for the
// closing quote, eight bytes at a time: what it skips was validated
// already.
func SkipString(b []byte, i int) int {
	i++
	for {
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			q := x ^ (lo8 * '"')
			s := x ^ (lo8 * '\\')
			if special := (((q - lo8) &^ q) | ((s - lo8) &^ s)) & hi8; special != 0 {
				i += bits.TrailingZeros64(special) >> 3
				break
			}
			i += 8
		}
		for i < len(b) && b[i] != '"' && b[i] != '\\' {
			i++
		}
		switch {
		case i >= len(b):
			return len(b)
		case b[i] == '"':
			return i + 1
		}
		i += 2 // an escape; \uXXXX's digits are plain
	}
}

// DecodeString is ScanString that also decodes: when the string at b[i]
// holds an escape, its decoded value is appended to dst; otherwise dst is
// returned unchanged and the value is b[i+1:end-1] as it is. One pass does
// both.
func DecodeString(dst, b []byte, i int) (out []byte, end int, escaped bool, err *SyntaxError) {
	if i >= len(b) || b[i] != '"' {
		return dst, i, false, errAt(i, "expected a string")
	}
	i++
	from := i // start of the bytes not yet appended
	for {
		i = plainPrefix(b, i)
		if i >= len(b) {
			return dst, i, escaped, errAt(i, "unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			if escaped {
				dst = append(dst, b[from:i]...)
			}
			return dst, i + 1, escaped, nil
		case c == '\\':
			escaped = true
			n, err := escapeLen(b, i)
			if err != nil {
				return dst, i, escaped, err
			}
			dst = append(dst, b[from:i]...)
			r, _ := DecodeEscape(b[i:])
			dst = utf8.AppendRune(dst, r)
			i += n
			from = i
		case c < 0x20:
			return dst, i, escaped, errAt(i, "control character in a string")
		default:
			j, bad := textRun(b, i)
			if bad >= 0 {
				return dst, bad, escaped, errStrict(bad, "invalid UTF-8")
			}
			i = j
		}
	}
}

// textRun returns the end of the run of string text that starts with the
// non-ASCII byte b[i]: up to the next quote, backslash or control byte,
// none of which can be inside a multi-byte rune, so that the run is
// validated at once. bad is the offset of its first invalid UTF-8 byte, or
// -1.
func textRun(b []byte, i int) (end, bad int) {
	j := i + 1
	for j < len(b) && b[j] >= 0x20 && b[j] != '"' && b[j] != '\\' {
		j++
	}
	if utf8.Valid(b[i:j]) {
		return j, -1
	}
	for k := i; ; {
		r, size := utf8.DecodeRune(b[k:j])
		if r == utf8.RuneError && size <= 1 {
			return j, k
		}
		k += size
	}
}

// escapeLen returns the length of the strict escape at b[i] (a
// backslash).
func escapeLen(b []byte, i int) (int, *SyntaxError) {
	e := b[i:]
	if len(e) < 2 {
		return 0, errAt(i, "unterminated escape")
	}
	switch e[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
	default:
		return 0, errAt(i, "invalid escape")
	}
	r, ok := Hex4(e[2:])
	if !ok {
		return 0, errAt(i, "invalid \\u escape")
	}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, errStrict(i, "lone low surrogate")
	case r >= 0xD800 && r <= 0xDBFF:
		if len(e) < 12 || e[6] != '\\' || e[7] != 'u' {
			return 0, errStrict(i, "lone high surrogate")
		}
		lo, ok := Hex4(e[8:])
		if !ok {
			return 0, errAt(i, "invalid \\u escape")
		}
		if lo < 0xDC00 || lo > 0xDFFF {
			return 0, errStrict(i, "lone high surrogate")
		}
		return 12, nil
	}
	return 6, nil
}

// ScanNumber scans the number that starts at b[i] (RFC 8259 grammar: no
// leading zeros, no '+', digits on both sides of '.', an exponent with
// digits) and returns the index just after it.
func ScanNumber(b []byte, i int) (int, *SyntaxError) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, errAt(i, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, errAt(j, "invalid number: digits expected after '.'")
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, errAt(j, "invalid number: digits expected in the exponent")
		}
		i = j
	}
	return i, nil
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// ScanLiteral scans true, false or null at b[i] and returns the index just
// after it.
func ScanLiteral(b []byte, i int) (int, *SyntaxError) {
	var lit string
	if i < len(b) {
		switch b[i] {
		case 't':
			lit = "true"
		case 'f':
			lit = "false"
		case 'n':
			lit = "null"
		}
	}
	if lit == "" || len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, errAt(i, "invalid literal")
	}
	return i + len(lit), nil
}

// AppendUnescaped appends the decoded value of string contents (the bytes
// between the quotes, escapes undecoded) to dst. Contents that ScanString
// accepted decode exactly; in anything else a malformed escape or a lone
// surrogate becomes U+FFFD and other bytes are copied as they are.
func AppendUnescaped(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		j := i
		for j < len(raw) && raw[j] != '\\' {
			j++
		}
		dst = append(dst, raw[i:j]...)
		if j == len(raw) {
			break
		}
		r, n := DecodeEscape(raw[j:])
		dst = utf8.AppendRune(dst, r)
		i = j + n
	}
	return dst
}

// DecodeEscape decodes the escape at the start of b (b[0] == '\\') and
// returns the rune and the number of bytes it spans, at least 1. A
// malformed escape or a lone surrogate decodes to U+FFFD.
func DecodeEscape(b []byte) (rune, int) {
	if len(b) < 2 {
		return utf8.RuneError, len(b)
	}
	switch b[1] {
	case '"', '\\', '/':
		return rune(b[1]), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r, ok := Hex4(b[2:])
		if !ok {
			return utf8.RuneError, 2
		}
		if r >= 0xD800 && r < 0xDC00 {
			if len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
				if r2, ok := Hex4(b[8:]); ok && r2 >= 0xDC00 && r2 < 0xE000 {
					return (r-0xD800)<<10 | (r2 - 0xDC00) + 0x10000, 12
				}
			}
			return utf8.RuneError, 6
		}
		if r >= 0xDC00 && r < 0xE000 {
			return utf8.RuneError, 6
		}
		return r, 6
	}
	return utf8.RuneError, 2
}

// HexDigits are the lower-case hexadecimal digits, by value.
const HexDigits = "0123456789abcdef"

// Hex4 decodes the four hexadecimal digits (either case) at the start of
// b, as in a \u escape.
func Hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
