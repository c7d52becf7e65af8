package redact

import "strings"

// People's names where a tool writes who a record is about: after a noun
// for a person the record serves (customer, patient, guest, holder=), a
// given name and a family name, each capitalised and neither a word of
// English (customer Harriet Nwosu, holder=Oliver Pennington); and right
// before the person's own e-mail address (Mira Solvang (mira@…)). A noun
// for a person before capitalised English words names a team or a thing
// (customer Support Team) and stays. The walk that finds the names also
// finds the phone numbers people write (phone.go: spokenPhone).

// servedNouns name the person a record is about: whom a tool serves.
var servedNouns = wordSet(`customer patient guest candidate holder cardholder visitor passenger pax donor client payee
	tenant resident student attendee caller recipient subscriber applicant traveller traveler buyer bidder examinee
	learner participant claimant beneficiary skier rider grower member homeowner policyholder borrower renter hirer`)

// redactPersons masks a person's name after a noun of servedNouns as an
// account's name (kUser): the name says who the person is. The same walk
// masks a phone number in national form or after a word for a phone
// (spokenPhone). It stops only at a space or '=' before a capital or a
// digit.
func redactPersons(rw *rewriter) {
	src := rw.src
	var buf [16]byte
	if len(src) > 0 && isDigit(src[0]) {
		rw.spokenPhone(0) // a number that starts the text
	}
	for i := 0; i+3 < len(src); i++ {
		if c := src[i]; c == '"' && i > 2 && (src[i-1] == ':' || src[i-1] == ' ' && src[i-2] == ':') && isUpper(src[i+1]) {
			if e := rw.servedMember(i, &buf); e > i+1 {
				i = e - 1
			}
			continue
		} else if c != ' ' && c != '=' {
			continue
		}
		switch c := src[i+1]; {
		case class[c]&cDigit != 0:
			if e := rw.spokenPhone(i + 1); e > i+1 {
				i = e - 1
			}
		case c >= 'A' && c <= 'Z':
			if e := rw.servedName(i, &buf); e > i+1 {
				i = e - 1
			}
		}
	}
}

// redactAddressNames masks the name before an e-mail address of its own.
func redactAddressNames(rw *rewriter) {
	src := rw.src
	for i := 0; i < len(src); i++ {
		if i = nextByte(src, i, '@'); i >= len(src) {
			return
		}
		if s, e := nameBeforeAddress(src, i); s >= 0 {
			rw.mask(s, e, kUser)
		}
	}
}

// servedName masks the name after the space or '=' at i when a noun of
// servedNouns ends there, and returns the name's end, or i.
func (rw *rewriter) servedName(i int, buf *[16]byte) int {
	src := rw.src
	ws := i
	for ws > 0 && i-ws <= 11 && isAlpha(src[ws-1]) {
		ws--
	}
	if ws > 0 && isAlnum(src[ws-1]) || !servedNounAt(src, ws, i, src[ws], buf) {
		return i
	}
	if e := personNameEnd(src, i+1); e > i+1 {
		rw.mask(i+1, e, kUser)
		return e
	}
	return i
}

// servedMember masks the name that opens the quoted value at i of a
// JSON member named by a noun of servedNouns ("client":"Laura Mendoza"),
// and returns the name's end, or i.
func (rw *rewriter) servedMember(i int, buf *[16]byte) int {
	src := rw.src
	k := i - 1
	for k > 0 && (src[k] == ' ' || src[k] == ':') {
		k--
	}
	if src[k] != '"' {
		return i
	}
	ke, ks := k, k
	for ks > 0 && k-ks <= 11 && isAlpha(src[ks-1]) {
		ks--
	}
	if ks == 0 || src[ks-1] != '"' || !servedNounAt(src, ks, ke, lower(src[ks]), buf) {
		return i
	}
	if e := personNameEnd(src, i+1); e > i+1 && e < len(src) && src[e] == '"' {
		rw.mask(i+1, e, kUser)
		return e
	}
	return i
}

// servedNounAt reports whether src[ws:we] is a noun of servedNouns, three
// to eleven letters in any case, with first its first byte as the caller
// reads it (servedFirst holds small letters).
func servedNounAt(src []byte, ws, we int, first byte, buf *[16]byte) bool {
	if n := we - ws; n < 3 || n > 11 || !servedFirst[first] {
		return false
	}
	w := lowerInto(buf, src[ws:we])
	return w != nil && servedNouns[string(w)]
}

// servedFirst marks the first letters of servedNouns.
var servedFirst = firstLetters(servedNouns)

// nameBeforeAddress returns the bounds of the name of the e-mail address
// whose '@' is at at, when a given and a family name stand right before
// the address as addressAfter reads them; or -1, -1.
func nameBeforeAddress(src []byte, at int) (int, int) {
	a := at
	for a > 0 && at-a <= 64 && (isAlnum(src[a-1]) || strings.IndexByte("._%+-", src[a-1]) >= 0) {
		a--
	}
	if a == at || a < 3 {
		return -1, -1
	}
	k := a
	switch {
	case src[k-1] == '(' || src[k-1] == '<':
		k--
		if src[k-1] == ' ' {
			k--
		}
	case src[k-1] == ',':
		k--
	case src[k-1] == ' ' && src[k-2] == ',':
		k -= 2
	default:
		return -1, -1
	}
	// Two capitalised words end at k.
	e2 := k
	s2 := e2
	for s2 > 0 && (isAlpha(src[s2-1]) || src[s2-1] == '\'' || src[s2-1] == '-') {
		s2--
	}
	if s2 < 2 || src[s2-1] != ' ' {
		return -1, -1
	}
	s1 := s2 - 1
	for s1 > 0 && isAlpha(src[s1-1]) {
		s1--
	}
	if s1 > 0 && (isAlnum(src[s1-1]) || strings.IndexByte(" \"(,[:;", src[s1-1]) < 0) {
		return -1, -1
	}
	if e := personNameEnd(src, s1); e != e2 || !addressAfter(src, e) {
		return -1, -1
	}
	return s1, e2
}

// personNameEnd returns the end of a given and a family name at src[i:],
// two capitalised words of letters (a family name may hold an apostrophe
// or a dash: O'Neill, Lloyd-Jones) that are no English words, or i.
func personNameEnd(src []byte, i int) int {
	e1 := nameWordEnd(src, i)
	if e1 == i || e1+2 >= len(src) || src[e1] != ' ' {
		return i
	}
	e2 := nameWordEnd(src, e1+1)
	if e2 == e1+1 || e2 < len(src) && (isAlnum(src[e2]) || src[e2] == '_' || src[e2] == '@' || src[e2] == '.' && e2+1 < len(src) && isAlnum(src[e2+1])) {
		return i
	}
	if proseName(src[i:e1]) || proseName(src[e1+1:e2]) {
		return i
	}
	return e2
}

// nameWordEnd returns the end of a capitalised word of letters at
// src[i:], two to about 20 of them, those after the first in any script
// (Wiśniewski, Müller), or i.
func nameWordEnd(src []byte, i int) int {
	if i >= len(src) || !isUpper(src[i]) {
		return i
	}
	k := i + 1
	for k < len(src) && k-i <= 24 && (src[k] >= 'a' && src[k] <= 'z' || src[k] >= 0x80 || (src[k] == '\'' || src[k] == '-') && k+1 < len(src) && isUpper(src[k+1])) {
		k++
	}
	if k-i < 2 || k < len(src) && isAlnum(src[k]) {
		return i
	}
	return k
}

// thingNouns are the nouns a capitalised title of a team, a place or a
// thing ends or starts with (customer Support Team, patient Care Unit,
// guest Wi-Fi Network, passenger Name Record): no part of a name.
var thingNouns = wordSet(`team teams desk service services support success care unit ward portal account accounts network
	card cards name names record records list lists number data group groups mode access area lounge pass office
	centre center hub club relations experience journey reference level tier status type class id login profile`)

// proseName reports whether a capitalised word reads as a word of prose,
// of grammar, of a setting or of the interface, not as a name.
func proseName(w []byte) bool {
	var buf [24]byte
	if len(w) > len(buf) {
		return true
	}
	for k, c := range w {
		buf[k] = lower(c)
	}
	lw := buf[:len(w)]
	return proseWord(lw) || plainWord(lw) || servedNouns[string(lw)] || thingNouns[string(lw)] || roleAccount(lw)
}

// addressAfter reports whether an e-mail address follows a name that
// ends at e, as an address book, a From line or a CSV row writes it: in
// parentheses or angle brackets after a space, or after a comma. The
// name is then its owner's.
func addressAfter(src []byte, e int) bool {
	k := e
	if k < len(src) && src[k] == ',' {
		k++
	}
	if k < len(src) && src[k] == ' ' {
		k++
	}
	if k < len(src) && (src[k] == '(' || src[k] == '<') {
		k++
	} else if k == e+1 && src[e] == ' ' {
		return false // a name, a space, then a word: no address of its own
	}
	at := -1
	for j := k; j < len(src) && j-k <= 64 && (isAlnum(src[j]) || strings.IndexByte("._%+-@", src[j]) >= 0); j++ {
		if src[j] == '@' {
			if at >= 0 {
				return false
			}
			at = j
		}
		if at >= 0 && src[j] == '.' && j > at+1 && j+1 < len(src) && isAlpha(src[j+1]) {
			return at > k
		}
	}
	return false
}
