package redact

import (
	"bytes"
	"strings"
)

// Codes a noun governs from afar. A code's noun (code, PIN, passcode, OTP,
// combination, keypad, buzzer) or a lock's (safe, keysafe, lockbox,
// padlock) governs the first code that follows it in its sentence, however
// many words say what it opens or who asked between (door code for St
// Mary's crypt tour > 6340; PIN (attempt 2 of 3), expected 2719; keysafe
// left of door, 4826): the announcement (redactAnnounced) reads a few
// words after its noun, while a writer keeps a code in the sentence that
// names it. A code is four to eight digits, digits that a keypad's '#' or
// '*' ends (0415*), or digits in three or more groups joined by dashes
// (9-9-0-1).
//
// A number that is something else's is not the code: one right after
// another noun (phone 9182, cabin 12; a dial's groups are a code there
// too, dialGroupsEnd), after a preposition of time or count (at 0600, 2
// of 3), before a word that counts it (4000 rows), a year, a date; and a
// noun of a public code (error code, zip code) or of an outcome (failed
// with code 4001, code … returned 5003) governs none.

// governors are the nouns that govern a code in their sentence.
var governors = wordSet(`code codes pin pins passcode passcodes otp otps combination combo keypad buzzer safe keysafe lockbox
	padlock`)

// governedLinks are the words that link a noun to its code, besides
// verbs in -ed (entered, expected, changed): a number after any other
// word is that word's.
var governedLinks = wordSet(`is was are were be been now remains stays becomes became to into takes take use uses enter
	try reads read set new same still also as here gets got then its it's one`)

// countWords place a number in time or count it: a number after one is a
// time, a date or a count (at 0600, 2 of 3, since 1998).
var countWords = wordSet(`at by until till since before after from in on of than per every over under within about
	around between during`)

// timeAfter reports whether the number tok, after the word w, is a time,
// a date or a count: digits alone after one of countWords (in 2024, at
// 0600; not at 0-7-1-9, a combination's groups).
func timeAfter(w, tok []byte) bool {
	var buf [16]byte
	lw := lowerInto(&buf, w)
	return lw != nil && countWords[string(lw)] && digitRun(tok, 0) == len(trimSentence(tok, ".,;)"))
}

// afterCodeWords may follow a code in its sentence; any other word after
// a number counts or names what the number is (4000 rows, 1204 forced).
var afterCodeWords = wordSet(`now and or for then today tonight please until since from at on in to is was but not instead
	which that so if when after before this these thanks ok okay pls`)

// accountNumber masks the number after the space at i, the end of the
// word "account", or after "number" (no, nr) after it: eight to
// seventeen digits, a bank's or a cloud's account (account 6449451752,
// account number 12345678), as arn:aws:iam::123456789012 holds one.
// It returns the number's end, or i.
func (rw *rewriter) accountNumber(i int) int {
	src := rw.src
	if i >= len(src) || src[i] != ' ' {
		return i
	}
	s := i + 1
	// account number 12345678, account no.: 12345678
	w := s
	for w < len(src) && w-s < 6 && isAlpha(src[w]) {
		w++
	}
	var nb [16]byte
	if n := lowerInto(&nb, src[s:w]); w > s && n != nil && numberWords[string(n)] {
		for w < len(src) && (src[w] == '.' || src[w] == ':') && w-s < 8 {
			w++
		}
		if w < len(src) && src[w] == ' ' {
			s = w + 1
		}
	}
	if s < len(src) && src[s] == '#' {
		s++
	}
	e := s + digitRun(src, s)
	if n := e - s; n < 8 || n > 17 || e < len(src) && (isAlnum(src[e]) || src[e] == '-' || src[e] == '.' && e+1 < len(src) && isDigit(src[e+1])) {
		return i
	}
	rw.mask(s, e, kAccount)
	return e
}

// letterCodeNouns name a code that may be letters (claim code HUGfsis,
// join with code QBJBDOT); a PIN or a combination is digits.
var letterCodeNouns = wordSet(`code codes passcode passcodes`)

// flagCodes are the flags whose value is a code (--code EZ1EGK).
var flagCodes = wordSet(`code passcode pin otp`)

// letterCode masks the code of letters after the space at i, the end of a
// code's noun, or of "is" or a colon after it: five to sixteen letters and
// digits that are no words (ZIXGUCOEQU, HUGfsis; not RED, SUMMER, or a
// name and its number, ISO8859, E1234), or letters a digit interleaves
// (EZ1EGK, 9ISMA). It returns the code's end, or i.
func (rw *rewriter) letterCode(i int) int {
	src := rw.src
	k := i
	if src[k-1] != ':' && hasPrefixFold(src[k:], " is ") {
		k += 3 // code is X; code: X
	}
	if k >= len(src) || src[k] != ' ' {
		return i
	}
	vs := k + 1
	ve := vs
	for ve < len(src) && ve-vs <= 16 && isAlnum(src[ve]) {
		ve++
	}
	n := ve - vs
	if n < 5 || n > 16 || ve < len(src) && !codeEndsClause(src, ve) && strings.IndexByte(" \"'", src[ve]) < 0 {
		return i
	}
	v := src[vs:ve]
	digits, flips := 0, 0
	for j, c := range v {
		if isDigit(c) {
			digits++
		}
		if j > 0 && isDigit(c) != isDigit(v[j-1]) {
			flips++
		}
	}
	switch {
	case digits == 0:
		// Letters alone: capitals among them, as a code is written (code
		// doesn't, code review: words of prose), that read as no words.
		if isLowerName(v) || !notWords(v) || ve+1 < len(src) && src[ve] == '\'' && isAlpha(src[ve+1]) {
			return i
		}
	case digits == n || numberWithUnit(v):
		return i // digits: the pass's other rule reads them; 512MiB a size
	case flips < 2 && !isDigit(v[0]):
		return i // a name and its number: ISO8859, E1234
	}
	rw.mask(vs, ve, kSecret)
	return ve
}

// governedReach is the most tokens between a governing noun and its code.
const governedReach = 14

func redactGoverned(rw *rewriter) {
	src := rw.src
	gov := -1                    // tokens read since the governing noun, or -1: none
	var prevTok, prevCore []byte // the token before, as written and without its marks
	var buf [16]byte
	for i := 0; i < len(src); {
		for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n') {
			if src[i] == '\n' {
				gov = -1
			}
			i++
		}
		s := i
		for i < len(src) && src[i] != ' ' && src[i] != '\t' && src[i] != '\n' {
			i++
		}
		if s == i {
			break
		}
		tok := src[s:i]
		ts, te := markedCore(tok)
		cs, ce := s+ts, s+te
		core := src[cs:ce]
		w := lowerInto(&buf, core)
		if gov >= 0 {
			gov++
			if n := governedCode(core); n > 0 && (dialGroupsEnd(core[:n]) == n || governedPlace(prevTok, gov, core, src, i, ce)) {
				rw.mask(cs, cs+n, kSecret)
				gov = -1
			} else if w != nil && outcomeWords[string(w)] || gov > governedReach {
				gov = -1
			}
		}
		if w != nil && governors[string(w)] && !publicGovernor(prevCore, string(w), src, s) && !settingAfter(src, i) {
			gov = 0
			if letterCodeNouns[string(w)] {
				if e := rw.letterCode(i); e > i {
					i, gov, prevTok, prevCore = e, -1, nil, nil
					continue
				}
			}
		} else if w != nil && (string(w) == "account" || string(w) == "acct") && len(tok) == len(core) {
			if e := rw.accountNumber(i); e > i {
				i, prevTok, prevCore = e, nil, nil
				continue
			}
		} else if len(w) > 2 && w[0] == '-' && flagCodes[string(bytes.TrimLeft(w, "-"))] {
			if e := rw.letterCode(i); e > i {
				i, prevTok, prevCore = e, nil, nil
				continue
			}
		}
		if ce < i && sentenceEnd(tok[ce-s:]) {
			gov = -1
		}
		prevTok, prevCore = tok, core
	}
}

// governedCode returns the length of the code core starts with, or 0: four
// to eight digits, alone or before a '#' or '*'; or digits in three or
// more groups of one to four, joined by dashes, four to twelve in all,
// not a date (2026-12-04).
func governedCode(core []byte) int {
	d := digitRun(core, 0)
	switch {
	case d == len(core) && d >= 4 && d <= 8:
		if d == 4 && centuryStart(core) {
			return 0 // a year
		}
		return d
	case d >= 4 && d <= 8 && d+1 == len(core) && (core[d] == '#' || core[d] == '*'):
		return d // the keypad's mark stays, as after a code's noun
	}
	groups, digits := 0, 0
	for k := 0; k < len(core); {
		n := digitRun(core, k)
		if n == 0 || n > 4 {
			return 0
		}
		groups, digits, k = groups+1, digits+n, k+n
		if k < len(core) {
			if core[k] != '-' || k+1 == len(core) {
				return 0
			}
			k++
		}
	}
	if groups < 3 || digits < 4 || digits > 12 || groups == 3 && digitRun(core, 0) == 4 {
		return 0
	}
	return len(core)
}

// governedPlace reports whether a code at the token after prev, the n-th
// token after its noun, stands where a code does: after a mark that
// links it (a colon, a comma, an arrow, =), after the noun itself, or
// after a word of governedLinks or a verb in -ed; and before the
// sentence's end, a mark, or a word that may follow a code. i is the
// token's end, ce the end of its core.
func governedPlace(prev []byte, n int, core, src []byte, i, ce int) bool {
	if len(prev) == 0 {
		return false
	}
	linked := n == 1
	switch last := prev[len(prev)-1]; {
	case last == ':' || last == ',' || string(prev) == ">" || string(prev) == "->" || string(prev) == "=>" ||
		string(prev) == "=" || string(prev) == "-":
		linked = true
	case !linked:
		var buf [16]byte
		w := lowerInto(&buf, prev)
		if w == nil || timeAfter(prev, core) {
			return false
		}
		linked = governedLinks[string(w)] || len(w) > 3 && w[len(w)-2] == 'e' && w[len(w)-1] == 'd' && allLetters(w)
	}
	if !linked {
		return false
	}
	if ce < i || i >= len(src) || src[i] != ' ' {
		return true // a mark, or the text's end, follows the code
	}
	var buf [16]byte
	w, n := lowerWordAfter(&buf, src, i)
	if n == 0 {
		return true // a mark, a number, a bracket
	}
	return w != nil && afterCodeWords[string(w)]
}

// lowerWordAfter returns the letters that follow the space at i, in lower
// case in dst (nil when they are longer than dst, or no space stands at
// i), and how many there are.
func lowerWordAfter(dst *[16]byte, src []byte, i int) ([]byte, int) {
	if i >= len(src) || src[i] != ' ' {
		return nil, 0
	}
	e := i + 1
	for e < len(src) && isAlpha(src[e]) {
		e++
	}
	return lowerInto(dst, src[i+1:e]), e - i - 1
}

// publicGovernor reports whether the noun w, after the word prev (a
// token without its marks), names a public code: a code of an error, a
// place, a product (publicCodes; a key code is a lock's here), or one in
// a clause of an outcome.
func publicGovernor(prev []byte, w string, src []byte, s int) bool {
	var buf [16]byte
	if p := lowerInto(&buf, prev); p != nil && string(p) != "key" && publicCodes[string(p)] {
		return true
	}
	return (w == "code" || w == "codes") && outcomeBefore(src, s)
}

// settingAfter reports whether the word after i is a setting word (PIN
// length 6, code format 4-4-4): the noun is a setting's, not a code's.
func settingAfter(src []byte, i int) bool {
	var buf [16]byte
	w, _ := lowerWordAfter(&buf, src, i)
	return len(w) > 0 && settingWords[string(w)]
}

// markedCore returns the bounds of tok without the quotes, brackets and
// marks around it.
func markedCore(tok []byte) (s, e int) {
	s, e = 0, len(tok)
	for s < e && strings.IndexByte("\"'(<[", tok[s]) >= 0 {
		s++
	}
	for e > s && strings.IndexByte("\"')>],.;:!?", tok[e-1]) >= 0 {
		e--
	}
	return s, e
}

// sentenceEnd reports whether the marks after a token's core end its
// sentence: a full stop, a semicolon, '!' or '?'.
func sentenceEnd(marks []byte) bool {
	for _, c := range marks {
		if c == '.' || c == ';' || c == '!' || c == '?' {
			return true
		}
	}
	return false
}

// gateKeypad lets through a text that holds a '#'.
func gateKeypad(src []byte, _ features) bool { return bytes.IndexByte(src, '#') >= 0 }

// redactKeypad masks a keypad entry: four to eight digits that a '#'
// ends, as a door's, a gate's or a conference line's keypad takes a code
// (gate code is 1979# then ring flat 4, conference PIN 448812#), where a
// word starts and no letter or digit follows. An anchor after a number
// (issues/1248#discussion) or a number after '#' (#1248) is none.
func redactKeypad(rw *rewriter) {
	src := rw.src
	for off := 0; off < len(src); {
		k := bytes.IndexByte(src[off:], '#')
		if k < 0 {
			return
		}
		h := off + k
		off = h + 1
		s := h
		for s > 0 && h-s < 9 && isDigit(src[s-1]) {
			s--
		}
		if n := h - s; n < 4 || n > 8 || s > 0 && !keypadBefore(src[s-1]) || h+1 < len(src) && isAlnum(src[h+1]) {
			continue
		}
		rw.mask(s, h, kSecret)
	}
}

// keypadBefore reports whether c may stand before a keypad entry: a
// space, a quote, or a mark that ends a label.
func keypadBefore(c byte) bool {
	return c == ' ' || c == '"' || c == '\'' || c == ':' || c == '=' || c == '(' || c == '\t'
}
