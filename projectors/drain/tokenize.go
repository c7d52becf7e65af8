package drain

import (
	"encoding/binary"
	"math/bits"
	"unicode"
	"unicode/utf8"
)

// Tokenize appends the white-space separated tokens of msg to dst, as
// sub-slices of msg.
func Tokenize(dst [][]byte, msg []byte) [][]byte { return TokenizeN(dst, msg, 0) }

// TokenizeN is Tokenize that stops after max tokens (0: no bound), so that
// a long message costs no more than its first tokens.
//
// Separators are the runes that unicode.IsSpace accepts and the
// information separators 0x1c–0x1f; invalid UTF-8 bytes belong to tokens.
func TokenizeN(dst [][]byte, msg []byte, max int) [][]byte {
	n := 0
	for i := 0; i < len(msg); {
		// Separators before the token.
		if c := byteClass[msg[i]]; c != classToken {
			if c == classSpace {
				i++
				continue
			}
			if size := spaceRune(msg[i:]); size > 0 {
				i += size
				continue
			}
		}
		// The token runs to the next separator. Only the bytes that
		// byteClass may not class as token bytes are looked at: those below
		// 0x21 and above 0x7f, found eight at a time.
		start := i
		for i++; i < len(msg); i++ {
			var w uint64
			if i+8 <= len(msg) {
				w = binary.LittleEndian.Uint64(msg[i:])
			} else if len(msg) >= 8 {
				// The last bytes, moved to the low end of the word; the
				// zero bytes shifted in above them stand for the end.
				w = binary.LittleEndian.Uint64(msg[len(msg)-8:]) >> (8 * (i + 8 - len(msg)))
			} else {
				// A short msg: the zero bytes above its last stand for its end.
				for k, c := range msg[i:] {
					w |= uint64(c) << (8 * k)
				}
			}
			// The high bit of each such byte; a byte is also marked when a
			// lower byte of the word is (a borrow runs up from it), so the
			// lowest mark is the first such byte.
			mark := ((w - 0x21*lowBits) | w) & highBits
			if mark == 0 {
				i += 7
				continue
			}
			if i += bits.TrailingZeros64(mark) >> 3; i >= len(msg) {
				i = len(msg)
				break
			}
			if c := byteClass[msg[i]]; c == classSpace || (c == classLead && spaceRune(msg[i:]) > 0) {
				break
			}
		}
		dst = append(dst, msg[start:i])
		if n++; n == max {
			return dst
		}
	}
	return dst
}

// Masks of the high bit and of the lowest bit of every byte of a word.
const (
	highBits = 0x8080808080808080
	lowBits  = 0x0101010101010101
)

// Byte classes of the tokenizer.
const (
	classToken = iota // part of a token
	classSpace        // a separator on its own
	classLead         // the first byte of a multi-byte white-space rune, or of another rune
)

// byteClass classes every byte: the ASCII bytes that unicode.IsSpace
// accepts and the information separators 0x1c–0x1f separate tokens; the
// bytes that begin the UTF-8 encoding of some other white-space rune
// (U+0085, U+00A0, U+1680, U+2000…) need the rune decoded. A byte of a
// multi-byte rune other than its first never begins a white-space rune,
// so the bytes of other classes need no decoding.
var byteClass = func() (t [256]uint8) {
	for c := range utf8.RuneSelf {
		if c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f) {
			t[c] = classSpace
		}
	}
	var buf [utf8.UTFMax]byte
	mark := func(r rune) {
		if r >= utf8.RuneSelf && unicode.IsSpace(r) {
			utf8.EncodeRune(buf[:], r)
			t[buf[0]] = classLead
		}
	}
	for _, r := range unicode.White_Space.R16 {
		for c := rune(r.Lo); c <= rune(r.Hi); c += rune(r.Stride) {
			mark(c)
		}
	}
	for _, r := range unicode.White_Space.R32 {
		for c := rune(r.Lo); c <= rune(r.Hi); c += rune(r.Stride) {
			mark(c)
		}
	}
	return t
}()

// spaceRune returns the size of the white-space rune msg begins with, or 0.
func spaceRune(msg []byte) int {
	r, size := utf8.DecodeRune(msg)
	if unicode.IsSpace(r) {
		return size
	}
	return 0
}
