package redact

import (
	"strings"

	"github.com/toolcanon/toolcanon/canonical"
)

// Phone numbers: personal, wherever a tool logs them. A number in E.164
// form (+254778610287, +1 (415) 555-6497, +44 20 7946 0958) is one by its
// plus sign and its length, and one written as North America writes a
// phone's ((415) 555-6497, 415-555-6497, 555-0143) by its groups; a number
// in another national form (254791997369, 0412 345 678) only in the value
// of a key that names a phone (kvPhone), or after a word for a phone:
// bare, it is as likely an amount, a date or an id.

// Phone is the placeholder of a phone number.
const Phone = "<PHONE>"

// kPhone is the kind of a phone number.
const kPhone canonical.Kind = "PHONE"

// phoneEnd returns the end of the phone number at src[i:], digits grouped
// by single spaces, dashes, dots or an area code in brackets, 8 to 15
// digits in at most six groups; or i when there is none. plus says whether
// src[i] is the '+' of E.164, which the first digit follows.
func phoneEnd(src []byte, i int, plus bool) int {
	j := i
	if plus {
		j++
	}
	digits, _, e := phoneGroups(src, j, plus)
	if digits < 8 || digits > 15 || e == j || !phoneEnds(src, e) {
		return i
	}
	return e
}

// phoneGroups reads the groups of digits of a phone number at src[j:]:
// digits grouped by single spaces, dashes, dots or an area code in
// brackets, at most six groups of at most 15 digits. It returns the count
// of digits and of groups and the end of the last group (j: none). plus
// says whether a '+' came before: a first group then starts with no 0.
func phoneGroups(src []byte, j int, plus bool) (digits, groups, e int) {
	e = j
	for j < len(src) && groups < 6 {
		if src[j] == '(' {
			j++
		}
		s := j
		for j < len(src) && isDigit(src[j]) {
			j++
		}
		if j == s || j-s > 15 || (plus && groups == 0 && src[s] == '0') {
			break
		}
		digits += j - s
		groups++
		e = j
		if j < len(src) && src[j] == ')' {
			j++
		}
		if j+1 < len(src) && (src[j] == ' ' || src[j] == '-' || src[j] == '.') && (isDigit(src[j+1]) || src[j+1] == '(') {
			j++
			continue
		}
		break
	}
	return digits, groups, e
}

// phoneEnds reports whether a number may end at e: no letter or digit
// follows it, nor a dot before a digit (a version, an amount).
func phoneEnds(src []byte, e int) bool {
	return e == len(src) || !isAlnum(src[e]) && !(src[e] == '.' && e+1 < len(src) && isDigit(src[e+1]))
}

// redactPhones masks the numbers in E.164 form: a '+' that starts a word,
// then a number phoneEnd reads.
func redactPhones(rw *rewriter) {
	src := rw.src
	for i := 0; i < len(src); i++ {
		if i = nextByte(src, i, '+'); i >= len(src) {
			return
		}
		if i > 0 && (isAlnum(src[i-1]) || src[i-1] == '+') {
			continue
		}
		if e := phoneEnd(src, i, true); e > i {
			rw.mask(i, e, kPhone)
			i = e - 1
		}
	}
}

// redactNorthAmerican masks the numbers written as North America writes a
// phone's (northAmericanEnd). Each holds a '-' or a '.' after its first
// three digits: only there is one looked for.
func redactNorthAmerican(rw *rewriter) {
	src := rw.src
	if len(src) < 8 {
		return
	}
	dash, dot := nextByte(src, 3, '-'), nextByte(src, 3, '.')
	for p := 3; ; {
		for dash < p {
			dash = nextByte(src, p, '-')
		}
		for dot < p {
			dot = nextByte(src, p, '.')
		}
		if p = min(dash, dot); p >= len(src) {
			return
		}
		s, e := p-3, p-3
		if digitsAt(src, s, 3) {
			// An area code in brackets before the exchange: "(415)555-",
			// "(415) 555-".
			a := s - 5
			if a > 0 && src[s-1] == ' ' {
				a--
			}
			if a >= 0 && src[a] == '(' {
				if e = northAmericanEnd(src, a); e > a {
					s = a
				}
			}
			if e <= s {
				e = northAmericanEnd(src, s)
			}
		}
		if e > s {
			rw.mask(s, e, kPhone)
			p = e
		} else {
			p++
		}
	}
}

// northAmericanEnd returns the end of a number written as North America
// writes a phone's at src[i:] — (NXX) NXX-XXXX, NXX-NXX-XXXX, NXX.NXX.XXXX
// or NXX-XXXX, N a digit from 2 to 9 — standing alone: no word, number,
// path or range runs into it; or i. The groups' lengths and the first
// digits, which no area or exchange code has as 0 or 1, tell it from a
// date (2026-12-04), a version or an id of other groups (117-0032).
func northAmericanEnd(src []byte, i int) int {
	if i > 0 && (isAlnum(src[i-1]) || strings.IndexByte("+-.:/_#$@\\", src[i-1]) >= 0) {
		return i
	}
	j, area := i, false
	if src[j] == '(' {
		if !digitsAt(src, j+1, 3) || src[j+1] < '2' || j+4 >= len(src) || src[j+4] != ')' {
			return i
		}
		j += 5
		if j < len(src) && src[j] == ' ' {
			j++
		}
		area = true
	}
	if !digitsAt(src, j, 3) || src[j] < '2' || j+3 >= len(src) {
		return i
	}
	sep := src[j+3]
	if sep != '-' && (sep != '.' || area) {
		return i
	}
	j += 4
	switch {
	case !area && digitsAt(src, j, 3) && src[j] >= '2' && j+3 < len(src) && src[j+3] == sep && digitsAt(src, j+4, 4):
		j += 8 // NXX-NXX-XXXX, NXX.NXX.XXXX
	case sep == '-' && digitsAt(src, j, 4):
		j += 4 // NXX-XXXX, (NXX) NXX-XXXX
	default:
		return i
	}
	if !area && afterNumberedNoun(src, i) {
		return i // ref 518-427-7301, subject 305-0019: the thing's number
	}
	if !phoneEnds(src, j) || j < len(src) && (src[j] == '-' || src[j] == '/' || src[j] == ':' && j+1 < len(src) && isDigit(src[j+1])) {
		return i
	}
	return j
}

// numberedNouns name things numbered in groups of three and four digits
// (subject 305-0019, ref 518-427-7301): after one, the groups are its
// number, unless an area code in brackets opens them.
var numberedNouns = wordSet(`subject participant order ticket case invoice part lot batch item sku model serial kit sample
	specimen claim policy job run build release version room unit ref reference record file document form permit
	licence license tag box bin`)

// afterNumberedNoun reports whether one of numberedNouns, and a space or
// '=', stands before src[i].
func afterNumberedNoun(src []byte, i int) bool {
	e := i - 1
	if e < 1 || src[e] != ' ' && src[e] != '=' {
		return false
	}
	s := e
	for s > 0 && e-s < 16 && isAlpha(src[s-1]) {
		s--
	}
	var buf [16]byte
	w := lowerInto(&buf, src[s:e])
	return w != nil && numberedNouns[string(w)]
}

// digitsAt reports whether src holds n digits from i.
func digitsAt(src []byte, i, n int) bool {
	if i < 0 || i+n > len(src) {
		return false
	}
	for _, c := range src[i : i+n] {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// nationalEnd returns the end of a number in national form at src[i:]:
// a trunk prefix 0 and an area or mobile code of three to five digits,
// then one to three groups after single spaces, ten or eleven digits in
// all (07700 900331, 020 7946 0958, 0161 496 0000); or i. Written so,
// with its leading zero and its groups, a number is dialled, not counted.
func nationalEnd(src []byte, i int) int {
	if i >= len(src) || src[i] != '0' || i > 0 && (isAlnum(src[i-1]) || strings.IndexByte("+-.:/_,", src[i-1]) >= 0) {
		return i
	}
	digits, groups, e, j := 0, 0, i, i
	for j < len(src) && groups < 4 {
		s := j
		for j < len(src) && isDigit(src[j]) {
			j++
		}
		n := j - s
		if n == 0 || groups == 0 && (n < 3 || n > 5) || groups > 0 && (n < 3 || n > 6) {
			return i
		}
		digits += n
		groups++
		e = j
		if j+1 < len(src) && src[j] == ' ' && isDigit(src[j+1]) {
			j++
			continue
		}
		break
	}
	if groups < 2 || digits < 10 || digits > 11 || !phoneEnds(src, e) || e < len(src) && (src[e] == ':' && e+1 < len(src) && isDigit(src[e+1]) || src[e] == '-') {
		return i
	}
	return e
}

// spokenNumberEnd returns the end of the number whose first digit is at
// j, after a word for a phone in prose (phone 555-0193, mobile: 0412 345
// 678): seven to fifteen digits grouped as phoneEnd reads them, and not an
// ISO date; or j.
func spokenNumberEnd(src []byte, j int) int {
	if dateAt(src, j) {
		return j
	}
	digits, groups, e := phoneGroups(src, j, false)
	if digits < 7 || digits > 15 || groups < 2 && digits < 10 || !phoneEnds(src, e) {
		return j
	}
	return e
}

// spokenPhone masks the number whose first digit is at i, after a space
// or '=': a number in national form (nationalEnd), or after a word for a
// phone (spokenNumberEnd). It returns the number's end, or i.
func (rw *rewriter) spokenPhone(i int) int {
	src := rw.src
	if src[i] == '0' {
		if e := nationalEnd(src, i); e > i {
			rw.mask(i, e, kPhone)
			return e
		}
	}
	// The word before the number, across at most four of space, ':',
	// '=' and '#'.
	we := i
	for we > 0 && i-we < 4 && (src[we-1] == ' ' || src[we-1] == ':' || src[we-1] == '=' || src[we-1] == '#') {
		we--
	}
	ws := we
	for ws > 0 && we-ws <= 11 && isAlpha(src[ws-1]) {
		ws--
	}
	if we-ws < 3 || we-ws > 11 || ws > 0 && isAlnum(src[ws-1]) || !phoneFirst[lower(src[ws])] {
		return i
	}
	var buf [16]byte
	if w := lowerInto(&buf, src[ws:we]); w != nil && (phoneWords[string(w)] || callWords[string(w)]) {
		if e := spokenNumberEnd(src, i); e > i {
			rw.mask(i, e, kPhone)
			return e
		}
	}
	return i
}

// dateAt reports whether a date in ISO form (2026-12-01) starts at i.
func dateAt(src []byte, i int) bool {
	if i+10 > len(src) || src[i+4] != '-' || src[i+7] != '-' {
		return false
	}
	for _, k := range []int{0, 1, 2, 3, 5, 6, 8, 9} {
		if !isDigit(src[i+k]) {
			return false
		}
	}
	return true
}

// callWords are the words that a phone number follows in prose (call
// 555-0143, text 07700 900331, dial 0161 496 0000, contact 555-0178,
// callback=555-0148): how one reaches a person, a phone's word for
// spokenPhone, not a key's.
var callWords = wordSet(`call calls called ring text texted dial dialled dialed whatsapp contact callback sms reach`)

// phoneFirst marks the first letters of phoneWords and callWords.
var phoneFirst = firstLetters(phoneWords, callWords)

// localEnd returns the end of a local number at src[i:] in the value of
// a phone's key: three digits, a dash, a dot or a space, and four digits
// (555-0143), with nothing of a number or a word after them; or i.
func localEnd(src []byte, i int) int {
	if i+8 > len(src) || src[i+3] != '-' && src[i+3] != '.' && src[i+3] != ' ' {
		return i
	}
	for k := 0; k < 8; k++ {
		if k != 3 && !isDigit(src[i+k]) {
			return i
		}
	}
	if !phoneEnds(src, i+8) {
		return i
	}
	return i + 8
}
