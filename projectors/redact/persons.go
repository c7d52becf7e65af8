package redact

import "strings"

// People's names where a tool writes who a record is about: after a noun
// for a person the record serves (customer, patient, guest, holder=), a
// given name and a family name, each capitalised and neither a word of
// English (customer Harriet Nwosu, holder=Oliver Pennington). A noun for
// a person before capitalised English words names a team or a thing
// (customer Support Team) and stays.

// servedNouns name the person a record is about: whom a tool serves.
var servedNouns = wordSet(`customer patient guest candidate holder cardholder visitor passenger pax donor client payee
	tenant resident student attendee caller recipient subscriber applicant traveller traveler buyer bidder examinee
	learner participant claimant beneficiary`)

// redactPersons masks a person's name after a noun of servedNouns, as an
// account's name (kUser): the name says who the person is.
func redactPersons(rw *rewriter) {
	src := rw.src
	var buf [16]byte
	for i := 1; i+3 < len(src); i++ {
		if !isUpper(src[i]) || src[i-1] != ' ' && src[i-1] != '=' {
			if isUpper(src[i]) && (src[i-1] == '"' || src[i-1] == ',' || src[i-1] == '(' || src[i-1] == '[') {
				if e := personNameEnd(src, i); e > i && addressAfter(src, e) {
					rw.mask(i, e, kUser) // "Aurelia Brandt,aurelia.b@…"
					i = e
				}
			}
			continue
		}
		if e := personNameEnd(src, i); e > i && addressAfter(src, e) {
			rw.mask(i, e, kUser) // donation from Mira Solvang (mira@…)
			i = e
			continue
		}
		ws := i - 1
		for ws > 0 && isAlpha(src[ws-1]) {
			ws--
		}
		if ws == i-1 || isUpper(src[ws]) {
			continue // a capitalised noun is a title's (Database Client Conventions)
		}
		w := lowerInto(&buf, src[ws:i-1])
		if w == nil || !servedNouns[string(w)] {
			continue
		}
		if e := personNameEnd(src, i); e > i {
			rw.mask(i, e, kUser)
			i = e
		}
	}
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
// src[i:], two to 20 of them, or i.
func nameWordEnd(src []byte, i int) int {
	if i >= len(src) || !isUpper(src[i]) {
		return i
	}
	k := i + 1
	for k < len(src) && k-i <= 20 && (src[k] >= 'a' && src[k] <= 'z' || (src[k] == '\'' || src[k] == '-') && k+1 < len(src) && isUpper(src[k+1])) {
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
	card cards name names record records list lists number data group groups mode access area lounge pass portal office
	centre center hub club services relations experience journey reference level tier status type class id login profile`)

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
