package redact

import (
	"bytes"
	"strings"
)

// The human-password pass: a word that only a person choosing a password
// writes is a secret wherever it stands, whatever names it or not. Names,
// ids, versions, paths and words of prose do not hold such a word; a
// password that follows a composition rule does:
//
//   - letters and digits with a symbol that no name holds between them or
//     after them: '!' or '?' (Harbor?Oatmeal48, dune605!), '&' between two
//     of them (Tulip&Lantern92), '$' last (Fenster736$);
//   - words of both cases joined by one separator and followed by digits
//     (Tomato.Pepper39, Hazel-Anchor17, HARVEST_eagle_1), one digit
//     enough after three words or more that open with a capital, as a
//     pass-phrase generator writes them (Lantern-tabby-badger3): a name
//     joins words of one case (kube-proxy-2), or is a member
//     (math.MaxInt64, tls.VersionTLS12);
//   - one of the most common passwords, alone or with a number after it
//     (letmein, dragon8, superman123);
//   - words joined by a separator, then a year (cherry.jasper.1986);
//   - a date written as one word around a month's name (October131957),
//     or after a month's abbreviation with a day and a year (Jan61949);
//   - a mnemonic: 12 to 25 words of three to ten lower-case letters in a
//     row, none of them a function word, not in alphabetical order;
//   - a word spelled with look-alike digits inside it (C0pp3r, passw0rd):
//     read as the letters they stand for, its letter runs are words; a
//     zero for an o is enough, other digits stand in twice (a name has
//     one: log4j, s3bucket).
//
// A candidate is a run of bytes between white space, quotes, brackets and
// the separators , ; | : @ \ (the value after the last '=' of key=value),
// without its sentence's trailing punctuation. Paths, addresses, mentions
// (@name), variables ($x, !x) and versions (v1p5beta1) are none.

// The classes of bytes the candidates are read with.
const (
	hStop  = 1 << iota // ends a candidate
	hEq                // '=': key=value
	hSym               // ! ? & $ #
	hUpper             // a capital
	hLower             // a lower-case letter
	hSep               // . - _: the separators of joinedCased
	hAlike             // a look-alike digit
	hDigit             // any digit
	hOther             // any other byte
	hPastF             // a lower-case letter after f: not hexadecimal
)

var humanClass = func() (t [256]uint16) {
	for c := range t {
		t[c] = hOther
	}
	for _, c := range " \t\r\n\"'`()[]{}<>,;|:@\\" {
		t[c] = hStop
	}
	t['='] = hEq
	for _, c := range "!?&$#" {
		t[c] = hSym
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = hUpper
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = hLower
		if c > 'f' {
			t[c] |= hPastF
		}
	}
	for _, c := range "._-" {
		t[c] = hSep
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = hDigit
	}
	for _, c := range "013457" {
		t[c] |= hAlike
	}
	return t
}()

// lookAlike maps the digits written for letters to those letters.
var lookAlike = [256]byte{'0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't'}

func redactHumanShaped(rw *rewriter) {
	src := rw.src
	var run wordRun
	escapes := rw.feat == 0 || rw.feat&fBackslash != 0 // a text without a backslash holds no escape
	for i := 0; i < len(src); {
		for i < len(src) && humanClass[src[i]]&hStop != 0 {
			i++
		}
		if escapes && i > 0 && i < len(src) && src[i-1] == '\\' {
			i = afterEscape(src, i, len(src))
		}
		s, j, seen := i, i, uint16(0)
		for ; j < len(src); j++ {
			cl := humanClass[src[j]]
			if cl&(hStop|hEq) != 0 {
				if cl&hStop != 0 {
					break
				}
				if j+1 < len(src) && humanClass[src[j+1]]&(hStop|hEq) == 0 {
					s, seen = j+1, 0 // key=value: the value
					continue
				}
			}
			seen |= cl
		}
		word := seen&^hPastF == hLower && s == i && j-i >= 3 && j-i <= 10 // of a mnemonic
		if word && run.extends(src, i) {
			run.n, run.end = run.n+1, j
		} else {
			run.close(rw)
			if word {
				run = wordRun{start: i, end: j, n: 1}
			}
		}
		if seen&^hPastF == hLower && j-s >= 6 && j-s <= 10 && commonBare(src[s:j]) {
			rw.mask(s, j, kSecret)
		}
		i = j
		if seen&hDigit == 0 || seen&(hLower|hUpper) == 0 {
			continue // each other shape holds letters and a digit
		}
		e := j
		for e > s && (src[e-1] == '.' || src[e-1] == ',' || src[e-1] == ')') {
			e--
		}
		mention := s > 0 && src[s-1] == '@' && (s == 1 || !isAlnum(src[s-2])) // @name
		if e-s >= 6 && !mention && (humanShaped(src[s:e], seen) || commonFirst[src[s]|0x20] && commonPassword(src[s:e]) ||
			(monthFirst[src[s]|0x20] || isDigit(src[s])) && datePassword(src[s:e])) {
			rw.mask(s, e, kSecret)
		}
	}
	run.close(rw)
}

// wordRun is a run of words of three to ten lower-case letters (the
// word lists of wallets and pass-phrase generators hold words of up to
// eight or nine), each after one space or comma: a mnemonic when it has
// the count of one and no word of grammar.
type wordRun struct{ start, end, n int }

// extends reports whether a word starting at i continues the run.
func (r *wordRun) extends(src []byte, i int) bool {
	if r.n == 0 {
		return false
	}
	gap := src[r.end:i]
	return len(gap) == 1 && (gap[0] == ' ' || gap[0] == ',') || string(gap) == ", "
}

// close masks the run when it is a mnemonic, and ends it: words drawn at
// random, none a word of grammar that a seed phrase's list lacks
// (mnemonicBreak: prose has them), not in alphabetical order (a list of
// names is). Words that announce it may run into it (wallet seed x y z …,
// mnemonic for the team wallet x y z …): the mnemonic is the run's words
// after its last such word of grammar, the last 24 of them when more run
// on (25 when the run has no more).
func (r *wordRun) close(rw *rewriter) {
	if r.n < 12 {
		r.n = 0
		return
	}
	src := rw.src
	limit := 24
	if r.n <= 25 {
		limit = 25
	}
	start, n := r.end, 0
	var later []byte // the word after the one read, walking back
	sorted := true
	for n < limit && start > r.start {
		e := start
		for e > r.start && (src[e-1] == ' ' || src[e-1] == ',') {
			e--
		}
		s := e
		for s > r.start && src[s-1] != ' ' && src[s-1] != ',' {
			s--
		}
		if mnemonicBreak(src[s:e]) {
			break
		}
		sorted = sorted && (later == nil || bytes.Compare(src[s:e], later) <= 0)
		start, n, later = s, n+1, src[s:e]
	}
	if n >= 12 && !sorted {
		rw.mask(start, r.end, kSecret)
	}
	r.n = 0
}

// seedListGrammar are the words of grammarWords that the seed word list
// of BIP-39 (English) holds too (about, this, you, …): a mnemonic may
// hold them, so they end no run and refuse none.
var seedListGrammar = wordSet(`that this then have can will must into over under upon about before you they what when where
	all any such only also very just more other own same few`)

// mnemonicBreak reports whether w is a word of grammar that no seed
// phrase holds.
func mnemonicBreak(w []byte) bool { return grammarWords[string(w)] && !seedListGrammar[string(w)] }

// grammarWords are the English function words of three letters or more
// (shorter ones end a run before it is read).
var grammarWords = wordSet(`the and for with from that this these those then than are was were been being has have had
	not but can will would should could may might must shall into onto over under upon about after before
	its his her hers our ours their theirs you your yours she him they them what which who whom whose when where why how
	all any each every some such only also very just more most other own same both few nor yet per via`)

// The most common passwords, from the published lists of passwords that
// leaked most often: commonBare lists passwords as they are, commonBases
// are passwords with a number after them (dragon8, superman123,
// iloveyou2024). The bases are those that name nothing in a program's
// text with a number (master1, hello2, admin7, spring5 do, and password2
// is a form's field), so that only the person's choice is masked.
var commonBases = wordSet(`qwerty letmein iloveyou monkey dragon football baseball welcome sunshine princess shadow superman batman
	trustno starwars whatever freedom ranger buster soccer hockey killer tigger pepper ginger charlie cheese flower changeme
	pokemon mustang harley chelsea liverpool arsenal snoopy maggie bailey yankees thunder summer winter autumn qazwsx zxcvbn asdfgh`)

// commonFirst and monthFirst mark the first letters of commonBases and
// of months: a word that starts with another is not looked up.
var commonFirst, monthFirst = firstLetters(commonBases), firstLetters(months)

// commonBare reports whether w is one of the most common passwords as
// they are.
func commonBare(w []byte) bool {
	switch string(w) {
	case "letmein", "iloveyou", "qwerty", "qwertyuiop", "qazwsx", "zxcvbn", "asdfgh":
		return true
	}
	return false
}

// firstLetters marks the first bytes of the words of sets.
func firstLetters(sets ...map[string]bool) (t [256]bool) {
	for _, set := range sets {
		for w := range set {
			t[w[0]] = true
		}
	}
	return t
}

// commonPassword reports whether t is a base of commonBases, in lower
// case or capitalised, then one to four digits and at most one symbol.
func commonPassword(t []byte) bool {
	n := 0
	for n < len(t) && isAlpha(t[n]) {
		n++
	}
	if n < 5 || n > 12 || n == len(t) || !isLowerName(t[1:n]) {
		return false
	}
	var buf [12]byte
	for k := range n {
		buf[k] = lower(t[k])
	}
	if !commonBases[string(buf[:n])] {
		return false
	}
	d := n
	for d < len(t) && isDigit(t[d]) {
		d++
	}
	return d > n && d-n <= 4 && (d == len(t) || d+1 == len(t) && strings.IndexByte("!?#$*.", t[d]) >= 0)
}

// months are the month names a date written as a password spells out.
var months = wordSet(`january february march april june july august september october november december`)

// datePassword reports whether t is a date written as one word around a
// month's name, in lower case or capitalised, with four digits or more
// (October131957, 13November2010, june1985): a program writes a date with
// separators.
func datePassword(t []byte) bool {
	i := 0
	for i < len(t) && i < 2 && isDigit(t[i]) {
		i++
	}
	j := i
	for j < len(t) && isAlpha(t[j]) {
		j++
	}
	if j-i < 3 || j-i > 9 || !isLowerName(t[i+1:j]) {
		return false
	}
	var buf [9]byte
	for k, c := range t[i:j] {
		buf[k] = lower(c)
	}
	k := j
	for k < len(t) && isDigit(t[k]) {
		k++
	}
	if !(k == len(t) || k+1 == len(t) && strings.IndexByte("!?#$*.", t[k]) >= 0) {
		return false
	}
	if j-i == 3 {
		// An abbreviated month takes a day and a year after it, the year
		// of a birth or a wedding (Jan61949, Dec241964): Dec2019 and
		// build names are not dates of a person.
		return i == 0 && monthAbbrevs[string(buf[:3])] && dayYear(t[j:k])
	}
	return months[string(buf[:j-i])] && i+k-j >= 4 && k-j >= 2
}

// monthAbbrevs are the three-letter names of the months.
var monthAbbrevs = wordSet(`jan feb mar apr may jun jul aug sep oct nov dec`)

// dayYear reports whether d, digits, is a day of the month (one or two
// digits, 1 to 31) then a year of the last or this century.
func dayYear(d []byte) bool {
	if len(d) != 5 && len(d) != 6 {
		return false
	}
	day, y := d[:len(d)-4], d[len(d)-4:]
	n := int(day[0] - '0')
	if len(day) == 2 {
		n = n*10 + int(day[1]-'0')
	}
	return n >= 1 && n <= 31 && (string(y[:2]) == "19" || string(y[:2]) == "20")
}

// humanShaped reports whether t, a candidate holding the classes seen, is
// a password by its composition.
func humanShaped(t []byte, seen uint16) bool {
	switch {
	case bytes.IndexByte(t, '/') >= 0, strings.IndexByte("$!?&%~#-+.", t[0]) >= 0, t[0] == 'v' && isDigit(t[1]):
		return false
	}
	return seen&hSym != 0 && symbolPassword(t) || seen&(hAlike|hPastF) == hAlike|hPastF && lookAlikeWord(t) || seen&(hUpper|hSep) == hUpper|hSep && joinedCased(t) ||
		seen&hSep != 0 && wordsAndYear(t)
}

// wordsAndYear reports whether t is two words or more of three letters or
// more, in lower case or capitalised, joined by one of '.', '-', '_', then
// a year of a person's life, 1940 to 2012, a birth's or a wedding's
// (cherry.jasper.1986, Maple-otter-2011): a host's last label is no
// number, and a release or a backup is of a recent year (notes-2024).
func wordsAndYear(t []byte) bool {
	if len(t) < 12 || len(t) > 40 {
		return false
	}
	sep := t[len(t)-5]
	y := t[len(t)-4:]
	if sep != '.' && sep != '-' && sep != '_' || !allDigits(y) || !(y[0] == '1' && y[1] == '9' && y[2] >= '4' || y[0] == '2' && y[1] == '0' && (y[2] == '0' || y[2] == '1' && y[3] <= '2')) {
		return false
	}
	words := 0
	for _, w := range bytes.Split(t[:len(t)-5], []byte{sep}) {
		if len(w) < 3 || !allLetters(w) || !(isLowerName(w) || isUpper(w[0]) && isLowerName(w[1:])) || wordCost(lowerASCII(w)) > wordLimit {
			return false
		}
		words++
	}
	return words >= 2
}

// joinedCased reports whether t, at most 40 bytes, is two words or more
// of three letters or more, each of one case or capitalised, joined by one
// of '.', '-', '_' and followed by digits, two or more when glued to the
// last word (Checksums-Sha1 and Readonly-Mode7 are names) unless three
// words or more open with a capital, as a pass-phrase generator writes
// them (Lantern-tabby-badger3); with words of
// both cases, or capitalised ones only. Joined by
// '.', a lower-case word before a capitalised one is a member
// (value.Int64), not a password.
func joinedCased(t []byte) bool {
	if len(t) > 40 {
		return false
	}
	var sep byte
	words, low, capd, up := 0, 0, 0, 0
	firstLow := false
	for i := 0; i < len(t); {
		j := i
		for j < len(t) && isAlpha(t[j]) {
			j++
		}
		w := t[i:j]
		if len(w) < 3 || len(w) > 3 && wordCost(lowerASCII(w)) > wordLimit {
			return false // three letters are too few to read
		}
		switch {
		case isUpperName(w):
			up++
		case isUpper(w[0]) && isLowerName(w[1:]):
			capd++
		case isLowerName(w):
			low++
			firstLow = firstLow || words == 0
		default:
			return false // camel case: a name
		}
		words++
		k := j
		for k < len(t) && isDigit(t[k]) {
			k++
		}
		if k > j { // digits glued to the word: the end
			return k == len(t) && words >= 2 && sep != 0 && (k-j >= 2 || words >= 3 && capd > 0 && up == 0 && !firstLow) && joinedMix(sep, firstLow, low, capd, up)
		}
		if k == len(t) || t[k] != '.' && t[k] != '-' && t[k] != '_' || sep != 0 && t[k] != sep {
			return false
		}
		sep = t[k]
		if k++; k < len(t) && isDigit(t[k]) { // the digits, after the separator: the end
			for k < len(t) && isDigit(t[k]) {
				k++
			}
			return k == len(t) && words >= 2 && joinedMix(sep, firstLow, low, capd, up)
		}
		i = k
	}
	return false
}

// joinedMix reports whether joined words of these cases read as a
// password's rather than a name's.
func joinedMix(sep byte, firstLow bool, low, capd, up int) bool {
	if sep == '.' && firstLow {
		return false
	}
	return capd+up > 0 && (low > 0 || up > 0 && capd > 0) || capd >= 2
}

// symbolPassword reports whether t holds four letters or more, a digit,
// and a symbol where no name has one: '!' or '?' after a letter or digit
// (last, or before another), '&' between two, '#' between two letters in
// a token without a dot, a dash or an underscore (Blister#Line4; an
// issue's or an item's number follows '#', PR#42, quote#Q-22871, and a
// file's anchor a dotted name, api_v1.9.md#create), '$' last. Three letters, two digits or more and a
// '!' last are one too (Uld2026!).
func symbolPassword(t []byte) bool {
	letters, digits, marks := 0, 0, 0
	for _, c := range t {
		if isAlpha(c) {
			letters++
		} else if isDigit(c) {
			digits++
		} else if c == '.' || c == '_' || c == '-' {
			marks++
		}
	}
	if letters == 3 && digits >= 2 && t[len(t)-1] == '!' && isDigit(t[len(t)-2]) {
		return true
	}
	if letters < 4 || digits == 0 {
		return false
	}
	for k := 1; k < len(t); k++ {
		last := k == len(t)-1
		between := !last && isAlnum(t[k-1]) && isAlnum(t[k+1])
		switch t[k] {
		case '!', '?':
			if isAlnum(t[k-1]) && (last || between) {
				return true
			}
		case '&':
			if between {
				return true
			}
		case '#':
			if !last && marks == 0 && isAlpha(t[k-1]) && isAlpha(t[k+1]) {
				return true
			}
		case '$':
			if last && isAlnum(t[k-1]) {
				return true
			}
		}
	}
	return false
}

// lookAlikeWord reports whether t, at most 24 bytes, is words spelled
// with look-alike digits: every run of letters and look-alike digits
// (a digit counts between a letter and a lower-case one) of three or more
// reads as a word once the digits are read as letters, and one of five or
// more holds a zero or two look-alikes; other digits only follow the last
// letter (Pr3tz3l+limon1). Hexadecimal of one case (an abbreviated commit)
// is none.
func lookAlikeWord(t []byte) bool {
	if len(t) > 24 {
		return false
	}
	k := 1
	for k+1 < len(t) && !(lookAlike[t[k]] != 0 && isAlpha(t[k-1]) && t[k+1] >= 'a' && t[k+1] <= 'z') {
		k++
	}
	if k+1 >= len(t) || hexDashes(t) && !hasUpperAndLower(t) {
		return false // no look-alike, or hexadecimal
	}
	found := false
	var buf [24]byte
	for i := 0; i < len(t); {
		if !isAlpha(t[i]) {
			if isDigit(t[i]) && hasLetter(t[i:]) {
				return false // a digit before more letters that is no look-alike
			}
			i++
			continue
		}
		n, alike, zero, j := 0, 0, false, i
		for ; j < len(t); j++ {
			c := t[j]
			if isAlpha(c) {
				buf[n] = lower(c)
			} else if m := lookAlike[c]; m != 0 && j+1 < len(t) && t[j+1] >= 'a' && t[j+1] <= 'z' {
				buf[n] = m
				alike++
				zero = zero || c == '0'
			} else {
				break
			}
			n++
		}
		if n >= 3 && wordCost(buf[:n]) > wordLimit {
			return false
		}
		found = found || n >= 5 && (zero || alike >= 2)
		i = j
	}
	return found
}

// hasUpperAndLower reports whether t holds both cases of letters.
func hasUpperAndLower(t []byte) bool {
	up, lo := false, false
	for _, c := range t {
		up = up || isUpper(c)
		lo = lo || c >= 'a' && c <= 'z'
	}
	return up && lo
}
