package redact

import (
	"bytes"
	_ "embed"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/toolcanon/toolcanon/canonical"
)

// Who a record is about: a person's name wherever it stands (a given name
// of givennames/names.txt and a family name, the words after a form of
// address, a login after "by"), and after a noun for a person the record
// serves (customer, patient, guest, holder=) any given and family name
// that are no words of English (customer Harriet Nwosu); the name right
// before the person's own e-mail address (Mira Solvang (mira@…)); a street
// address and a date of birth. A noun for a person before capitalised
// English words names a team or a thing (customer Support Team) and
// stays. The walk that finds them also finds the phone numbers people
// write (phone.go: spokenPhone).

// servedNouns name the person a record is about: whom a tool serves.
var servedNouns = wordSet(`customer patient guest candidate holder cardholder visitor passenger pax donor client payee contact
	tenant resident student attendee caller recipient subscriber applicant traveller traveler buyer bidder examinee
	learner participant claimant beneficiary skier rider grower member homeowner policyholder borrower renter hirer
	inspector officer analyst clerk technician nurse clinician surveyor assessor adjuster courier dispatcher cashier teller
	caseworker instructor ranger supervisor author`)

// redactPersons masks people's names as accounts' (kUser), street
// addresses (kAddress), dates of birth (kBirthDate) and phone numbers
// (spokenPhone). It stops only at a byte of personBoundary before a
// letter or a digit; the text's start reads as a space.
func redactPersons(rw *rewriter) {
	src := rw.src
	var buf [16]byte
	i := -1
	if len(src) > 3 {
		i = rw.personAfter(-1, ' ', &buf) // the text's start
	}
	for i++; i+3 < len(src); i++ {
		if c := src[i]; personBoundary[c] { // one look at most bytes
			i = rw.personAfter(i, c, &buf)
		}
	}
}

// personAfter reads what starts after c, a byte of personBoundary at i
// (-1: the text's start, read as a space), masks it, and returns where
// the walk goes on: the masked value's last byte, or i.
func (rw *rewriter) personAfter(i int, c byte, buf *[16]byte) int {
	src := rw.src
	if c == '"' && i > 2 && (src[i-1] == ':' || src[i-1] == '=' || src[i-1] == ' ' && src[i-2] == ':') && isUpper(src[i+1]) {
		if e := rw.servedMember(i, buf); e > i+1 {
			return e - 1
		}
	}
	e := i + 1
	if c != ' ' && c != '=' {
		if nameBoundary[c] && capitalised(src, i+1) {
			e = rw.namedPerson(i + 1)
		} else if (c == '"' || c == ':' || c == ',' || c == ';' || c == '(') && isDigit(src[i+1]) {
			e = rw.personalNumber(i + 1)
		}
		return max(e-1, i)
	}
	switch c := src[i+1]; {
	case c >= 'a' && c <= 'z':
		if i >= 2 && src[i-1] == 'y' && lower(src[i-2]) == 'b' && (i == 2 || !isAlnum(src[i-3])) {
			e = rw.loginAfterBy(i + 1)
		}
	case class[c]&cDigit != 0:
		if i > 0 {
			e = rw.recordAfterNoun(i, buf) // booking ref: 9Z8Y7X, card 9122371330
		}
		if e <= i+1 {
			if e = rw.personalNumber(i + 1); e <= i+1 {
				e = rw.spokenPhone(i + 1)
			}
		}
	case c == '#' && i > 0:
		e = rw.recordAfterNoun(i, buf) // staff card #448812
	case c >= 'A' && c <= 'Z' && (capitalised(src, i+1) || initialAt(src, i+1) && capitalised(src, i+4)):
		e = rw.titledName(i + 1)
		if e <= i+1 && i >= 0 {
			e = rw.servedName(i, buf) // a noun before the space
		}
		if e <= i+1 {
			e = rw.givenAndFamily(i + 1)
		}
	case c >= 'A' && c <= 'Z' && i > 0:
		// MULLER/ANNA MRS after pax, XTB1HT after PNR: a traveller's
		// name as airlines print it, or the booking it has.
		e = rw.recordAfterNoun(i, buf)
	}
	return max(e-1, i)
}

// travelNouns name whom a booking of travel or a stay is for.
var travelNouns = wordSet(`pax passenger passengers psgr traveller traveler travellers travelers`)

// travelTitles may follow a traveller's given name, glued or after a
// space (SMITH/JOHN MR, SMITH/JOHNMR).
var travelTitles = []string{"MR", "MRS", "MS", "MISS", "MSTR", "DR", "PROF", "REV"}

// recordAfterNoun masks, at the space at i, a card's or a badge's number
// (cardNumberEnd), a traveller's name in the form of
// IATA's passenger name records and boarding passes (SURNAME/GIVEN, a
// title after it or not) after a noun of travelNouns, or a booking's record
// locator (five to eight capitals and digits, a capital at least) after
// "PNR", "record locator" or "booking reference" (ref, code): with the
// traveller's family name it opens the booking. It returns the masked
// value's end, or i+1.
func (rw *rewriter) recordAfterNoun(i int, buf *[16]byte) int {
	src := rw.src
	ws, we := nounBefore(src, i)
	if ws == we || !recordFilter.mayFold(src[ws:we]) {
		return i + 1
	}
	noun := lowerInto(buf, src[ws:we])
	if noun == nil {
		return i + 1
	}
	if e := rw.documentNumber(i, ws, noun); e > i+1 {
		return e
	}
	switch {
	case travelNouns[string(noun)]:
		if e := travelName(src, i+1); e > i+1 {
			rw.mask(i+1, e, kUser)
			return e
		}
	case string(noun) == "card" || string(noun) == "badge":
		// A card's or a badge's number says whose it is (a member's, a
		// player's, a technician's): six to nineteen digits, which a
		// payment card's check digit would have made a card's already.
		if e := cardNumberEnd(src, i+1); e > i+1 {
			rw.mask(i+1, e, kID)
			return e
		}
	case string(noun) == "pnr" || string(noun) == "locator" && wordBefore(src, ws, "record") ||
		(string(noun) == "reference" || string(noun) == "ref" || string(noun) == "code") && wordBefore(src, ws, "booking"):
		if e := recordLocatorEnd(src, i+1); e > i+1 {
			rw.mask(i+1, e, kID)
			return e
		}
	}
	return i + 1
}

// nounBefore returns the bounds of the word before the space at i, past
// a ':', '=' or '.' that ends it (PNR: x, pax=x, no. x), when it starts
// a word; or (i, i).
func nounBefore(src []byte, i int) (int, int) {
	we := i
	for we > 0 && i-we < 2 && (src[we-1] == ':' || src[we-1] == '=' || src[we-1] == '.') {
		we--
	}
	ws := we
	for ws > 0 && we-ws <= 12 && isAlpha(src[ws-1]) {
		ws--
	}
	if ws == we || ws > 0 && (isAlnum(src[ws-1]) || src[ws-1] == '_') {
		return i, i
	}
	return ws, we
}

// documentNouns name a person's identity document or the number a state
// gives a person: its number after it, or after "number" (no, nr, #),
// says who the person is. A licence is a driver's (or a renter's, a
// pilot's) only: a product's licence number is none.
var documentNouns = wordSet(`passport nino nhs ssn sin tin medicare`)

// driverWords qualify a licence as a person's.
var driverWords = wordSet(`driver drivers driver's driving renter renter's pilot pilot's dl`)

// numberWords stand between a document's noun and its number.
var numberWords = wordSet(`number no nr num`)

// recordFilter passes every noun recordAfterNoun reads before a value.
var recordFilter = func() *wordFilter {
	all := wordSet(`card badge pnr locator reference ref code licence license insurance id`)
	for _, m := range []map[string]bool{travelNouns, documentNouns, numberWords} {
		maps.Copy(all, m)
	}
	return filterOf(all)
}()

// documentNumber masks the number of an identity document after its noun
// (passport number 533812749, driver license D1234567, national insurance
// number QQ123456C, ID card 8812-4471-2290) at the space at i, whose word
// before is src[ws:] (noun, in lower case): six to twenty capitals,
// digits and inner '-', five digits at least. It returns the number's
// end, or i.
func (rw *rewriter) documentNumber(i, ws int, noun []byte) int {
	src := rw.src
	var nb [16]byte
	if numberWords[string(noun)] {
		// passport number x: the noun before "number".
		s, e := nounBefore(src, ws-1)
		if s == e || ws == 0 || src[ws-1] != ' ' {
			return i
		}
		noun, ws = lowerInto(&nb, src[s:e]), s
		if noun == nil {
			return i
		}
	}
	var pb [16]byte
	prev := []byte(nil)
	if s, e := nounBefore(src, ws-1); ws > 0 && src[ws-1] == ' ' && s < e {
		prev = lowerInto(&pb, src[s:e])
	}
	switch string(noun) {
	case "licence", "license":
		if !driverWords[string(prev)] {
			return i
		}
	case "card":
		if string(prev) != "id" && string(prev) != "identity" {
			return i
		}
	case "insurance":
		if string(prev) != "national" && string(prev) != "social" {
			return i
		}
	case "id":
		if string(prev) != "national" && string(prev) != "voter" && string(prev) != "tax" {
			return i
		}
	default:
		if !documentNouns[string(noun)] {
			return i
		}
	}
	s := i + 1
	e, digits := s, 0
	for e < len(src) && e-s <= 20 && (isUpper(src[e]) || isDigit(src[e]) || src[e] == '-' && e > s && e+1 < len(src) && isAlnum(src[e+1])) {
		if isDigit(src[e]) {
			digits++
		}
		e++
	}
	if e-s < 6 || e-s > 20 || digits < 5 || e < len(src) && (isAlnum(src[e]) || src[e] == '_' || src[e] == '.' && e+1 < len(src) && isAlnum(src[e+1])) ||
		dateShaped(src[s:e]) {
		return i
	}
	rw.mask(s, e, kID)
	return e
}

// dateShaped reports whether v is a date of digits and dashes: yyyy-mm-dd
// or dd-mm-yyyy (a passport's expiry, not its number).
func dateShaped(v []byte) bool {
	if len(v) != 10 || !(v[4] == '-' && v[7] == '-' || v[2] == '-' && v[5] == '-') {
		return false
	}
	for k, c := range v {
		dash := k == 4 && v[7] == '-' || k == 7 && v[4] == '-' || k == 2 && v[5] == '-' || k == 5 && v[2] == '-'
		if dash != (c == '-') || !dash && !isDigit(c) {
			return false
		}
	}
	return true
}

// wordBefore reports whether the word before the one at ws, across one
// space, is w (small letters) in any case.
func wordBefore(src []byte, ws int, w string) bool {
	s := ws - 1 - len(w)
	return s >= 0 && src[ws-1] == ' ' && hasPrefixFold(src[s:], w) && (s == 0 || !isAlnum(src[s-1]))
}

// travelName returns the end of SURNAME/GIVEN at src[i] (capitals, two or
// more each side, a hyphen or a space inside the surname's part no), with
// a title after the given name, glued or after a space, when one follows;
// or i.
func travelName(src []byte, i int) int {
	k := i
	for k < len(src) && k-i <= 35 && (isUpper(src[k]) || src[k] == '-' && k > i) {
		k++
	}
	if k-i < 2 || k >= len(src) || src[k] != '/' {
		return i
	}
	g := k + 1
	e := g
	for e < len(src) && e-g <= 35 && isUpper(src[e]) {
		e++
	}
	if e-g < 2 || e < len(src) && (isAlnum(src[e]) || src[e] == '/' || src[e] == '_') {
		return i
	}
	if e+1 < len(src) && src[e] == ' ' {
		t := e + 1
		for t < len(src) && t-e <= 5 && isUpper(src[t]) {
			t++
		}
		if t > e+1 && (t == len(src) || !isAlnum(src[t])) && slices.Contains(travelTitles, string(src[e+1:t])) {
			return t
		}
	}
	return e
}

// cardNumberEnd returns the end of six to nineteen digits at src[i], '#'
// before them or not, that no letter, digit, '.', '-', '_' or '/' follows;
// or i.
func cardNumberEnd(src []byte, i int) int {
	d := i
	if d < len(src) && src[d] == '#' {
		d++
	}
	e := d
	for e < len(src) && e-d < 20 && isDigit(src[e]) {
		e++
	}
	if e-d < 6 || e-d > 19 || e < len(src) && (isAlnum(src[e]) || strings.IndexByte(".-_/:,", src[e]) >= 0 && e+1 < len(src) && isAlnum(src[e+1])) {
		return i
	}
	return e
}

// recordLocatorEnd returns the end of a record locator at src[i]: five to
// eight capitals and digits, a capital at least, before no letter, digit,
// '-' or '_', and no word of the dictionary (WELCOME); or i.
func recordLocatorEnd(src []byte, i int) int {
	e, upper := i, false
	for e < len(src) && e-i < 9 && (isUpper(src[e]) || isDigit(src[e])) {
		upper = upper || isUpper(src[e])
		e++
	}
	if e-i < 5 || e-i > 8 || !upper || e < len(src) && (isAlnum(src[e]) || src[e] == '-' || src[e] == '_') || dictionaryWord(src[i:e]) {
		return i
	}
	return e
}

// loginAfterBy masks the account at src[i] after "by", the agent of what
// a log tells (opened by det.varga, rotated by winifred_marsh), when it is
// shaped as a person's login: two parts of small letters joined by '.' or
// '_', digits after the second or not, where the first is a given name
// (winifred_marsh, eudora.bpt), or an initial or a rank of one to four
// letters before a family name of four letters or more that is no word of
// the dictionary (j.marchetti, lt.quarshie). What a step or a file is
// named by (restart_server, sample.bin, qc_review) is none. It returns the
// account's end, or i.
func (rw *rewriter) loginAfterBy(i int) int {
	src := rw.src
	a := i
	for a < len(src) && a-i <= 24 && src[a] >= 'a' && src[a] <= 'z' {
		a++
	}
	if a == i || a+1 >= len(src) || src[a] != '.' && src[a] != '_' {
		return i
	}
	b := a + 1
	for b < len(src) && b-a <= 24 && src[b] >= 'a' && src[b] <= 'z' {
		b++
	}
	e := b
	for e < len(src) && e-b < 4 && isDigit(src[e]) {
		e++
	}
	if b-a-1 < 3 || e < len(src) && (isAlnum(src[e]) || src[e] == '_' || src[e] == '@' || src[e] == '-' ||
		(src[e] == '.' || src[e] == '/') && e+1 < len(src) && isAlnum(src[e+1])) {
		return i
	}
	var gb [24]byte
	first, second := src[i:a], src[a+1:b]
	given := len(first) >= 3 && len(first) < len(gb) && givenName(capitalisedCopy(&gb, first)) && !dictionaryWord(first)
	initial := len(first) <= 4 && len(second) >= 4 && !dictionaryWord(second)
	if !given && !initial {
		return i
	}
	rw.mask(i, e, kUser)
	return e
}

// capitalisedCopy returns w with its first letter a capital, written into
// buf (len(w) <= len(buf)).
func capitalisedCopy(buf *[24]byte, w []byte) []byte {
	n := copy(buf[:], w)
	buf[0] = w[0] - 'a' + 'A'
	return buf[:n]
}

// capitalised reports whether src[i] is a capital and a small letter (or
// a letter of another script) follows it, as in every word of a name.
func capitalised(src []byte, i int) bool {
	return i+1 < len(src) && isUpper(src[i]) && (src[i+1] >= 'a' && src[i+1] <= 'z' || src[i+1] >= 0x80)
}

// personalNumber masks a date of birth (birthDate) or a street address
// (streetAddress) at src[i], a digit, and returns its end, or i. The
// digits are read once: a date's first group has one, two or four and a
// date's mark after it; a house's number has five at most, then a space
// or a letter.
func (rw *rewriter) personalNumber(i int) int {
	src := rw.src
	n := digitRun(src, i)
	if i+n >= len(src) {
		return i
	}
	switch c := src[i+n]; {
	case dateMark(c):
		if n == 1 || n == 2 || n == 4 {
			return rw.birthDate(i)
		}
	case c == ' ' || isUpper(c):
		if n <= 5 {
			return rw.streetAddress(i)
		}
	}
	return i
}

// kAddress is the kind of a street address; kBirthDate of a date of
// birth. Both say who a record is about, as a name does.
const (
	kAddress   canonical.Kind = "ADDRESS"
	kBirthDate canonical.Kind = "BIRTH_DATE"
)

// Address and BirthDate are the placeholders of a street address and of a
// date of birth.
const (
	Address   = "<ADDRESS>"
	BirthDate = "<BIRTH_DATE>"
)

// streetTypes end the name of a street, in full and abbreviated.
var streetTypes = wordSet(`street st road rd lane ln avenue ave close row drive dr way court ct place pl terrace crescent
	cres boulevard blvd gardens square sq mews grove walk parade rise vale highway hwy parkway pkwy circle cir trail
	strasse straße gasse weg platz allee`)

// streetAddress masks a street address at src[i]: a house's number (one
// to five digits, a letter after them or not), then one to three
// capitalised words of which the last is a street's type (14 Hawthorn
// Close, 8 Quarry Rd, 221B Baker Street). It returns its end, or i.
func (rw *rewriter) streetAddress(i int) int {
	src := rw.src
	n := digitRun(src, i)
	e := i + n
	if n == 0 || n > 5 || i > 0 && (isAlnum(src[i-1]) || src[i-1] == '.' || src[i-1] == '-') {
		return i
	}
	if e < len(src) && isUpper(src[e]) && e+1 < len(src) && src[e+1] == ' ' {
		e++ // 221B
	}
	var buf [16]byte
	end, typeLen := -1, 0
	for words := 0; words < 4 && e+1 < len(src) && src[e] == ' ' && isUpper(src[e+1]); words++ {
		we := e + 2
		for we < len(src) && (isAlpha(src[we]) || src[we] >= 0x80 || src[we] == '-' || src[we] == '\'') {
			we++
		}
		if words > 0 {
			if w := lowerInto(&buf, src[e+1:we]); w != nil && streetTypes[string(w)] {
				end, typeLen = we, we-e-1
				break
			}
		}
		e = we
	}
	if end < 0 || end < len(src) && (isAlnum(src[end]) || src[end] == '_' || src[end] == '@') {
		return i
	}
	if typeLen <= 4 && end < len(src) && src[end] == '.' && (end+1 == len(src) || src[end+1] == ' ' || src[end+1] == ',') {
		end++ // Rd., Ave.
	}
	rw.mask(i, end, kAddress)
	return end
}

// birthWords name a date of birth before it, in a key or in prose.
var birthWords = wordSet(`dob birth birthdate birthday born geburtsdatum geboren nacimiento naissance nascita`)

// birthDate masks a date at src[i] after a word of birthWords (DOB
// 1938-04-02, "date_of_birth":"1990-01-01", born 02/04/1938): a year,
// a month and a day in digits joined by '-', '/' or '.', in either
// order. It returns the date's end, or i.
func (rw *rewriter) birthDate(i int) int {
	src := rw.src
	e := dateEnd(src, i)
	if e == i {
		return i
	}
	we := i
	for we > 0 && i-we < 4 && (src[we-1] == ' ' || src[we-1] == ':' || src[we-1] == '=' || src[we-1] == '"' || src[we-1] == '\'') {
		we--
	}
	ws := we
	for ws > 0 && we-ws < 24 && (isAlpha(src[ws-1]) || src[ws-1] == '.') {
		ws--
	}
	var buf [16]byte
	n := 0
	for _, c := range src[ws:we] {
		if c != '.' { // D.O.B.
			if n == len(buf) {
				return i
			}
			buf[n] = lower(c)
			n++
		}
	}
	if !birthWords[string(buf[:n])] {
		return i
	}
	rw.mask(i, e, kBirthDate)
	return e
}

func dateMark(c byte) bool { return c == '-' || c == '/' || c == '.' }

// dateEnd returns the end of a date at src[i] (2026-04-02, 02/04/1938,
// 2.4.1938): three groups of digits joined by one mark, a group of four
// digits first or last; or i.
func dateEnd(src []byte, i int) int {
	var g [3]int
	k := i
	var sep byte
	for n := 0; n < 3; n++ {
		d := digitRun(src, k)
		if d == 0 || d > 4 {
			return i
		}
		g[n] = d
		k += d
		if n < 2 {
			if k >= len(src) || src[k] != '-' && src[k] != '/' && src[k] != '.' || sep != 0 && src[k] != sep {
				return i
			}
			sep = src[k]
			k++
		}
	}
	if k < len(src) && (isAlnum(src[k]) || (src[k] == sep || src[k] == ':') && k+1 < len(src) && isDigit(src[k+1])) {
		return i
	}
	if !(g[0] == 4 && g[1] <= 2 && g[2] <= 2 || g[2] == 4 && g[0] <= 2 && g[1] <= 2) {
		return i
	}
	return k
}

// nameBoundary marks the bytes other than a space and '=' that a person's
// name may follow: a quote, a CSV or list separator, a bracket, a colon.
var nameBoundary = func() (t [256]bool) {
	for _, c := range "\"';,([{:|/>" {
		t[c] = true
	}
	return t
}()

// personBoundary marks every byte the persons pass reads after: a space,
// '=' and those of nameBoundary.
var personBoundary = func() (t [256]bool) {
	t = nameBoundary
	t[' '], t['='] = true, true
	return t
}()

// namedPerson masks the name of a person at src[i] as titledName or
// givenAndFamily read it, and returns its end, or i.
func (rw *rewriter) namedPerson(i int) int {
	if e := rw.titledName(i); e > i {
		return e
	}
	return rw.givenAndFamily(i)
}

// titles are the forms of address written before a person's name.
var titles = wordSet(`mr mrs ms mx miss dr prof herr frau mme mlle`)

// titledName masks the one to three capitalised words of a name after a
// form of address at src[i] (Mrs Edna Pritchard, Mr Tuckwell, Dr. Amara
// Okafor), each no word of prose, and returns the name's end, or i. The
// form of address stays. A capitalised word before "Dr" makes it a
// street's (Oak Dr), not a doctor's.
func (rw *rewriter) titledName(i int) int {
	src := rw.src
	e := nameWordEnd(src, i)
	if e == i || e-i > 5 {
		return i
	}
	var buf [16]byte
	t := lowerInto(&buf, src[i:e])
	if t == nil || !titles[string(t)] {
		return i
	}
	if string(t) == "dr" && i >= 2 && src[i-1] == ' ' {
		k := i - 1
		for k > 0 && isAlpha(src[k-1]) {
			k--
		}
		if k < i-1 && isUpper(src[k]) {
			return i
		}
	}
	if e < len(src) && src[e] == '.' {
		e++
	}
	if e+1 >= len(src) || src[e] != ' ' {
		return i
	}
	s, end := e+1, e+1
	for n := 0; n < 3 && end < len(src); n++ {
		w := end
		if n > 0 {
			if src[end] != ' ' {
				break
			}
			w++
		}
		we := nameWordEnd(src, w)
		if we == w || proseName(src[w:we]) {
			break
		}
		end = we
	}
	if end == s || end < len(src) && (isAlnum(src[end]) || src[end] == '_' || src[end] == '@') {
		return i
	}
	rw.mask(s, end, kUser)
	return end
}

// givenAndFamily masks a given name of givenNames and a family name after
// it at src[i] (Tomasz Wierzbicki, Winifred Osei), and returns their end,
// or i: a person's name wherever it stands. Neither may be a word of the
// dictionary, of grammar, of a setting or of the interface; a name's
// ending alone (Winifred, Fielding) does not make it a word, as it does
// for personNameEnd, which reads names without the list.
func (rw *rewriter) givenAndFamily(i int) int {
	src := rw.src
	e1 := givenNameEnd(src, i)
	if e1 == i {
		return i
	}
	e2 := familyEnd(src, e1+1)
	if e2 == e1+1 || namedWord(src[e1+1:e2]) || dictionaryWord(src[e1+1:e2]) && !familyWord(src[e1+1:e2]) && !contactAfter(src, e2) {
		return i
	}
	rw.mask(i, e2, kUser)
	return e2
}

// contactAfter reports whether a phone number or an e-mail address follows
// a name that ends at e, across at most a separator and two words (Annika
// Strand mobile +46 555 889 021, Lily Dobbs, lily@example.org, Theodora
// Quill sent to +44 7700 900205): contact data says whose it is, so a
// family name that is also a word (Strand, Dobbs, Quill) is one there.
func contactAfter(src []byte, e int) bool {
	k := e
	for k < len(src) && k-e < 3 && (src[k] == ' ' || src[k] == ',' || src[k] == ';' || src[k] == '"' || src[k] == '\t' || src[k] == '|') {
		k++
	}
	for n := 0; n < 2 && k < len(src) && isAlpha(src[k]); n++ {
		// One or two words for the contact or its sending: mobile,
		// phone, email; sent to, reached at.
		w := k
		for w < len(src) && w-k <= 10 && isAlpha(src[w]) {
			w++
		}
		if w >= len(src) || src[w] != ' ' && src[w] != ':' {
			break
		}
		k = w
		for k < len(src) && k-w < 3 && (src[k] == ' ' || src[k] == ':') {
			k++
		}
	}
	if k == e || k >= len(src) {
		return false
	}
	switch {
	case src[k] == '+':
		return phoneEnd(src, k, true) > k
	case isDigit(src[k]) || src[k] == '(':
		return spokenNumberEnd(src, k) > k
	}
	return addressAt(src, k)
}

// englishWordList holds the words of an English dictionary in small
// letters, one per line, sorted (englishwords/README.md).
//
//go:embed englishwords/words.txt
var englishWordList string

// dictionaryWord reports whether w, in small letters, is a word of
// englishWordList: a capitalised word after a given name that is one
// (Santa Special, Pascal Compiler, Claude Platform) makes a title of a
// thing rather than a person's name. It searches the sorted list in
// place, without a table of its own.
func dictionaryWord(w []byte) bool {
	var buf [24]byte
	b := lowerName(&buf, w)
	if b == nil {
		return false
	}
	lw := string(b)
	list := englishWordList
	lo, hi := 0, len(list) // the lines starting in [lo, hi) are the candidates
	for lo < hi {
		mid := lo + (hi-lo)/2
		s := strings.LastIndexByte(list[:mid], '\n') + 1 // the line that holds mid
		e := s + strings.IndexByte(list[s:], '\n')
		switch line := list[s:e]; {
		case line == lw:
			return true
		case line < lw:
			lo = e + 1
		default:
			hi = s
		}
	}
	return false
}

// namedWord reports whether a capitalised word is one the dictionary of
// englishWords, grammar, a setting or the interface names, as proseName
// does without reading its ending.
func namedWord(w []byte) bool { return readsAsWord(w, false) }

// givenNameList holds people's given names, one per line: the first names
// of the 60 locales of faker-js (MIT; givennames/README.md), in Latin
// script, of three letters or more.
//
//go:embed givennames/names.txt
var givenNameList string

// givenNames is givenNameList as a set, made on first use.
var givenNames = sync.OnceValue(func() map[string]struct{} { return lineSet(givenNameList, 16384) })

// familyWordList holds the family names that are also English words
// (Martin, Strand, Smith, King), one per line: the last names of the same
// locales of faker-js whose small-letter form is a word of
// englishWordList. After a given name they are a family name, not a word
// of a title (Chloe Martin, not Santa Special).
//
//go:embed givennames/family-words.txt
var familyWordList string

// familyWords is familyWordList as a set, made on first use.
var familyWords = sync.OnceValue(func() map[string]struct{} { return lineSet(familyWordList, 256) })

// familyWord reports whether w, capitalised, is a family name of
// familyWordList.
func familyWord(w []byte) bool {
	_, ok := familyWords()[string(w)]
	return ok
}

// lineSet returns the non-empty lines of text as a set.
func lineSet(text string, size int) map[string]struct{} {
	m := make(map[string]struct{}, size)
	for rest := text; rest != ""; {
		line, after, _ := strings.Cut(rest, "\n")
		if line != "" {
			m[line] = struct{}{}
		}
		rest = after
	}
	return m
}

// givenName reports whether w, capitalised, is a given name of
// givenNameList.
func givenName(w []byte) bool {
	_, ok := givenNames()[string(w)]
	return ok
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
	if e := servedPersonEnd(src, i+1); e > i+1 && !companyAfter(src, e) {
		rw.mask(i+1, e, kUser)
		return e
	}
	return i
}

// companySuffixes end a company's name (Harbour Civil Ltd, Acme Widgets
// Inc): the capitalised words before one name a company, not a person.
var companySuffixes = wordSet(`ltd limited inc llc llp gmbh ag sa bv nv plc pty co corp corporation company group holdings`)

// companyAfter reports whether a company's suffix follows the name that
// ends at e, after a space or ", ".
func companyAfter(src []byte, e int) bool {
	k := e
	if k < len(src) && src[k] == ',' {
		k++
	}
	if k >= len(src) || src[k] != ' ' {
		return false
	}
	s := k + 1
	w := s
	for w < len(src) && w-s <= 12 && isAlpha(src[w]) {
		w++
	}
	var buf [16]byte
	lw := lowerInto(&buf, src[s:w])
	return w > s && (w == len(src) || strings.IndexByte(" .,;:)\"'", src[w]) >= 0) && lw != nil && companySuffixes[string(lw)]
}

// servedMember masks the name that opens the quoted value at i of a
// JSON member or a key named by a noun of servedNouns ("client":"Laura
// Mendoza", contact="Maureen Pike"), and returns the name's end, or i.
func (rw *rewriter) servedMember(i int, buf *[16]byte) int {
	src := rw.src
	k := i - 1 // contact="…": the key ends at the '='
	if src[k] != '=' {
		for k > 0 && (src[k] == ' ' || src[k] == ':') {
			k--
		}
		if src[k] != '"' {
			return i
		}
	}
	ke, ks := k, k
	for ks > 0 && k-ks <= 11 && isAlpha(src[ks-1]) {
		ks--
	}
	opened := ks > 0 && src[ks-1] == '"'
	if src[k] == '=' {
		opened = ks == 0 || !isKeyByte(src[ks-1]) // a whole key
	}
	if ke == ks || !opened || !servedNounAt(src, ks, ke, lower(src[ks]), buf) {
		return i
	}
	if e := servedPersonEnd(src, i+1); e > i+1 && e < len(src) && src[e] == '"' && !companyAfter(src, e) {
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
// or a dash: O'Neill, Lloyd-Jones) that are no English words, the given
// name perhaps an initial (J. Morales), or i.
func personNameEnd(src []byte, i int) int {
	e1 := nameWordEnd(src, i)
	if e1 == i && initialAt(src, i) {
		if e2 := familyEnd(src, i+3); e2-(i+3) >= 3 && !proseName(src[i+3:e2]) {
			return e2 // an initial and a family name
		}
		return i
	}
	if e1 == i || e1+2 >= len(src) || src[e1] != ' ' {
		return i
	}
	e2 := familyEnd(src, e1+1)
	if e2 == e1+1 || proseName(src[i:e1]) || proseName(src[e1+1:e2]) {
		return i
	}
	return e2
}

// givenNameEnd returns the end of a given name of the list at src[i:],
// capitalised, three letters or more and naming no thing, before a space
// and more of the text; or i.
func givenNameEnd(src []byte, i int) int {
	e := nameWordEnd(src, i)
	if e-i < 3 || e+2 >= len(src) || src[e] != ' ' || !givenName(src[i:e]) || namedWord(src[i:e]) {
		return i
	}
	return e
}

// initialAt reports whether an initial stands at src[i]: a capital, a
// full stop and a space (J. Morales).
func initialAt(src []byte, i int) bool {
	return i+3 < len(src) && isUpper(src[i]) && src[i+1] == '.' && src[i+2] == ' '
}

// servedPersonEnd returns the end of a person's name at src[i:] after a
// noun for whom a record serves (customer Maureen Pike): what
// personNameEnd reads, or a given name of the list that no dictionary
// holds before a capitalised word that names no thing, even one of the
// dictionary (client Grace Period stays). The noun says a person follows,
// as an e-mail address or a phone number after the name does for
// givenAndFamily.
func servedPersonEnd(src []byte, i int) int {
	e := personNameEnd(src, i)
	if e == i {
		e1 := givenNameEnd(src, i)
		if e1 == i {
			return i
		}
		e2 := familyEnd(src, e1+1)
		if e2-(e1+1) < 2 || namedWord(src[e1+1:e2]) || dictionaryWord(src[i:e1]) {
			return i
		}
		e = e2
	}
	// A third name of three letters or more that is no word, and no
	// company's suffix, goes with them (Nguyen Thi Hoa, Ana López García).
	if e < len(src) && src[e] == ' ' {
		if e3 := familyEnd(src, e+1); e3-(e+1) >= 3 && !namedWord(src[e+1:e3]) && !dictionaryWord(src[e+1:e3]) && !companyAfter(src, e) {
			return e3
		}
	}
	return e
}

// familyEnd returns the end of a family name's capitalised word at src[j]
// (nameWordEnd) where a name ends: before no letter, digit, '_' or '@',
// nor a '.' that more of a word follows (an address's or a host's label);
// or j.
func familyEnd(src []byte, j int) int {
	e := nameWordEnd(src, j)
	if e == j || e < len(src) && (isAlnum(src[e]) || src[e] == '_' || src[e] == '@' || src[e] == '.' && e+1 < len(src) && isAlnum(src[e+1])) {
		return j
	}
	return e
}

// nameWordEnd returns the end of a capitalised word of letters at
// src[i:], two to about 20 of them, those after the first in any script
// (Wiśniewski, Müller), or i.
func nameWordEnd(src []byte, i int) int {
	if i >= len(src) || !isUpper(src[i]) {
		return i
	}
	k := i + 1
	for k < len(src) && k-i <= 24 {
		if src[k] >= 'a' && src[k] <= 'z' || src[k] >= 0x80 {
			k++
		} else if (src[k] == '\'' || src[k] == '-') && k+2 < len(src) && isUpper(src[k+1]) && (src[k+2] >= 'a' && src[k+2] <= 'z' || src[k+2] >= 0x80) {
			k += 2 // O'Neill, Lloyd-Jones: a capital after the mark
		} else {
			break
		}
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
func proseName(w []byte) bool { return readsAsWord(w, true) }

// readsAsWord reports whether a capitalised word reads as a word of
// prose, grammar, a setting or the interface; by its ending too (Fielding,
// Winifred) when endings is set. A word longer than any name does.
func readsAsWord(w []byte, endings bool) bool {
	var buf [24]byte
	lw := lowerName(&buf, w)
	if lw == nil || plainWord(lw) || servedNouns[string(lw)] || thingNouns[string(lw)] {
		return true
	}
	if endings {
		return proseWord(lw) || roleAccount(lw)
	}
	return englishFilter.may(lw) && englishWords[string(lw)] || credentialFilter.may(lw) && credentialWords[string(lw)] ||
		roleAccounts[string(lw)]
}

// lowerName returns w in small letters, written into buf; nil when w is
// longer than buf.
func lowerName(buf *[24]byte, w []byte) []byte {
	if len(w) > len(buf) {
		return nil
	}
	for k, c := range w {
		buf[k] = lower(c)
	}
	return buf[:len(w)]
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
	return addressAt(src, k)
}

// addressAt reports whether an e-mail address starts at src[k]: a local
// part, one '@', and a domain with a dot before a letter.
func addressAt(src []byte, k int) bool {
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

// namesAddressesSpell masks the capitalised words of a text that the local
// part of an e-mail address in it spells, with the capitalised word on
// either side of one that no dictionary holds (the rest of the name): a
// contact row names the address's owner (Ellison Moorcroft, +44 …,
// ellison.m@example.net; "Okonkwo, Adaeze",adaeze.okonkwo@example.org). A
// part of the address that is a word (info, support, rose) spells no one,
// nor does an address of one word (jenkins@, noreply@): a person's
// address spells a name in parts. The parts of the first addresses are
// gathered first, then the text's words are read once, so that the time
// stays linear in the text whatever it holds.
func (rw *rewriter) namesAddressesSpell() {
	src := rw.src
	var parts [maxSpelledParts][]byte
	np, masks := 0, len(rw.spans)
	for k := 0; k < masks && np < len(parts); k++ {
		sp := rw.spans[k]
		if sp.kind != kEmail {
			continue
		}
		at := bytes.IndexByte(src[sp.start:sp.end], '@')
		if at < 3 || bytes.IndexAny(src[sp.start:sp.start+at], "._-") < 0 {
			continue // one word (jenkins, support): a role's or a service's address
		}
		local := src[sp.start : sp.start+at]
		for i := 0; i < len(local) && np < len(parts); {
			j := i
			for j < len(local) && isAlpha(local[j]) {
				j++
			}
			if seg := local[i:j]; len(seg) >= 3 && len(seg) <= 24 && !proseWord(seg) && !dictionaryWord(seg) {
				parts[np] = seg
				np++
			}
			i = j + 1
		}
	}
	if np == 0 {
		return
	}
	named := 0
	for i := 0; i < len(src) && named < maxSpelledNames; i++ {
		if !isUpper(src[i]) || i > 0 && isAlnum(src[i-1]) {
			continue
		}
		e := nameWordEnd(src, i)
		if e-i < 3 || e < len(src) && isAlnum(src[e]) || !slices.ContainsFunc(parts[:np], func(p []byte) bool { return equalFoldBytes(src[i:e], p) }) ||
			rw.maskedBefore(i, masks) {
			i = max(i, e-1)
			continue
		}
		if ns := nameSiblingAfter(src, e); ns > e {
			if ne := nameWordEnd(src, ns); ne > ns+1 && !proseWord(src[ns:ne]) && !dictionaryWord(src[ns:ne]) && !rw.maskedBefore(ns, masks) {
				rw.spans = append(rw.spans, span{start: ns, end: ne, kind: kUser})
			}
		}
		if ps := nameSiblingBefore(src, i); ps >= 0 && !rw.maskedBefore(ps, masks) {
			if pe := nameWordEnd(src, ps); pe > ps+1 && !proseWord(src[ps:pe]) && !dictionaryWord(src[ps:pe]) {
				rw.spans = append(rw.spans, span{start: ps, end: pe, kind: kUser})
			}
		}
		rw.spans = append(rw.spans, span{start: i, end: e, kind: kUser})
		named++
		i = e - 1
	}
}

// At most maxSpelledParts parts of addresses are looked for, and at most
// maxSpelledNames names masked, in one text.
const maxSpelledParts, maxSpelledNames = 16, 256

// nameSiblingAfter returns where a word after the name word ending at e
// starts, past a space, ", " or a quoted field's `","`; or e.
func nameSiblingAfter(src []byte, e int) int {
	for _, sep := range []string{`","`, ", ", " "} {
		if bytes.HasPrefix(src[e:], []byte(sep)) && e+len(sep) < len(src) && isUpper(src[e+len(sep)]) {
			return e + len(sep)
		}
	}
	return e
}

// nameSiblingBefore returns where the capitalised word before the name
// word starting at s starts, past the same separators; or -1.
func nameSiblingBefore(src []byte, s int) int {
	for _, sep := range []string{`","`, ", ", " "} {
		p := s - len(sep)
		if p <= 0 || !bytes.Equal(src[p:s], []byte(sep)) {
			continue
		}
		b := p
		for b > 0 && (src[b-1] >= 'a' && src[b-1] <= 'z' || src[b-1] >= 0x80) {
			b--
		}
		if b > 0 && isUpper(src[b-1]) && (b-1 == 0 || !isAlnum(src[b-2])) && nameWordEnd(src, b-1) == p {
			return b - 1
		}
	}
	return -1
}

// maskedBefore reports whether one of the first n masks holds src[i].
func (rw *rewriter) maskedBefore(i, n int) bool {
	for _, sp := range rw.spans[:n] {
		if i >= sp.start && i < sp.end {
			return true
		}
	}
	return false
}

// equalFoldBytes reports whether a and b are equal in any ASCII case.
func equalFoldBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if lower(a[k]) != lower(b[k]) {
			return false
		}
	}
	return true
}
