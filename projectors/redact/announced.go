package redact

import (
	"bytes"
	"slices"
	"strings"
)

// Values announced in prose: a credential word, a few words about it, a
// connecting word or a colon, then the value (verification code is
// 883440, PIN entered for … was 9208, password changed to: Ventana559%,
// Door code 6087, Password for admin@CORP: ribbon.pine.2004). A code or a
// PIN is four to eight digits; a password is shaped like one
// (passwordShaped). A setting word between (password length is 12) or the
// end of a sentence ends the announcement.

// announcedWords are the credential words that announce a value in prose:
// true for a code or a PIN, false for a password.
var announcedWords = map[string]bool{"pin": true, "pins": true, "passcode": true, "otp": true, "code": true, "codes": true,
	"voucher": true, "key": true, "combination": true, "combo": true, "answer": false, "answers": false,
	// A number right after unlocking or authorising is the code that does
	// it (tablet unlock 143057, override authorisation 750807).
	"unlock": true, "authorisation": true, "authorization": true, "keypad": true,
	// An override is authorised by a code, named by whose authority it
	// carries (manager override 9911; not config override 2026).
	"override": true,
	// What a code opens names it too: a padlock, a lockbox, a locker, a key
	// safe, a device paired by passkey (padlock 5492, passkey 088856).
	"padlock": true, "lock": true, "puk": true, "lockbox": true, "locker": true, "lockers": true, "keysafe": true, "safe": true, "passkey": true,
	"password": false, "passwd": false, "passphrase": false, "phrase": false,
	// A word is one when its qualifier says so (security word, duress word).
	"word": false,
	// The abbreviations people write in notes and commands (admin pw x).
	"pw": false, "pwd": false,
	// A card's security code (cardCodes), three or four digits.
	"cvv": true, "cvc": true, "cvv2": true, "cvc2": true, "csc": true,
	// A wireless network, named, announces its passphrase (guest wifi:
	// x y z); a setting or a state (wifi: enabled) is no password.
	"wifi": false, "wlan": false, "psk": false,
	// The same words in other languages: Kennwort, mot de passe, contraseña, …
	"kennwort": false, "passwort": false, "passe": false, "contraseña": false, "contrasena": false,
	"wachtwoord": false, "senha": false, "salasana": false, "haslo": false, "heslo": false, "parola": false, "clave": false,
	"schlüssel": false}

// publicCodes qualify a code that is no secret: error codes, country
// codes, status codes, codes of products, places, orders and trades. Any
// other noun before "code" (door, cabinet, override, menu) makes it one;
// a word of grammar does not (with code 1001).
var publicCodes = wordSet(`status response result http country area postal zip post currency language lang locale
	reason iso product item source class event op reply sql errno exit error return close
	tracking shipping discount promo coupon reference ref order invoice batch lot serial model part sku tax airport
	station route fault trouble diagnostic function exception completion condition abend color colour region state
	county dial calling vendor customer cost department job project shift leave pay billing procedure diagnosis icd
	cpt naics sic tariff commodity bar qr machine byte object morse swift iata icao unicode ascii scan char character
	key keyboard short long time hash exit`)

// lowerInto returns b in lower case, written into dst; nil when b is
// longer than dst (no word this pass reads is).
func lowerInto(dst *[16]byte, b []byte) []byte {
	if len(b) > len(dst) {
		return nil
	}
	for k, c := range b {
		dst[k] = lower(c)
	}
	return dst[:len(b)]
}

// loginVerbs log in or connect as an account: "as NAME" after one names
// the account.
var loginVerbs = wordSet(`connected logged authenticated signed`)

// connectors join an announced credential to its value, in the
// languages of announcedWords.
var connectors = wordSet(`is was to are from lautet ist es est är er now attempted tried entered`)

// destinationVerbs send or join something to a place: the word after
// their "to" is where it went (Wi-Fi connected to HomeNet, PIN sent to
// the caller), not what the credential became.
var destinationVerbs = wordSet(`connected joined switched roamed associated attached bound linked moved sent forwarded
	redirected posted uploaded pushed saved written copied exported mailed emailed texted delivered`)

// destinationVerb reports whether w, a word as written, is one of
// destinationVerbs.
func destinationVerb(w []byte) bool {
	var b [16]byte
	l := lowerInto(&b, w)
	return l != nil && destinationVerbs[string(l)]
}

// arrow reports whether tok is an arrow that points a name to its value
// (set password for x -> "y"); redactAnnounced reads => where it ends a
// token.
func arrow(tok []byte) bool { return string(tok) == "->" }

// accountWords announce an account and its password as a pair NAME /
// PASS (login: admin / x, credentials are alice / x).
var accountWords = wordSet(`login logins account credentials creds`)

// The filters of the sets that redactAnnounced looks each word up in.
var (
	loginFilter, accountFilter, announcedFilter = filterOf(loginVerbs), filterOf(accountWords), filterOf(announcedWords)
	settingFilter, connectorFilter              = filterOf(settingWords), filterOf(connectors)
)

// networkWords name a wireless network's key, which is a pass phrase.
var networkWords = wordSet(`wpa wpa2 wpa3 wifi wireless wlan network psk`)

// qualifiedOf returns the qualifiers of the noun last when it is named,
// or nil: the set is looked up only for a named noun.
func qualifiedOf(named bool, last []byte) map[string]bool {
	if !named || string(last) == "combination" || string(last) == "combo" {
		return nil // a combination announces one alone, in prose
	}
	switch string(last) {
	case "string":
		return communityString // not a connection string: its value is a whole setting
	case "community":
		return communityQualifiers // a key names one alone (kv.go)
	}
	return qualifiedNouns[string(last)]
}

// communityString qualifies "string" in prose: an SNMP community string;
// communityQualifiers qualify "community": SNMP's, or its access's.
var communityString, communityQualifiers = wordSet("community"), wordSet(`snmp read write ro rw readonly trap`)

// announceWindow is the most words between a credential word and its value.
const announceWindow = 6

func redactAnnounced(rw *rewriter) {
	src := rw.src
	credEnd, code, since := -1, noCode, 0
	answer, asked := false, false // the noun is an answer; a question was asked
	secretKey := false            // the noun is a secret's key, whose code may be any value after a colon
	prompted := false             // a prompt for a password was quoted on this line
	login := -1                   // words since a verb of logging in, or -1
	// The lower-case forms of this token's word and its last part, in
	// buffers of their own: no allocation. prev is the last part of the
	// token before, as written.
	var wbuf, lbuf [16]byte
	var prev, prevWord []byte // prevWord: the whole word of prev's token
	var toks [5][2]int        // the last tokens' bounds, the latest first (actorBefore)
	for i := 0; i < len(src); {
		for i < len(src) && (src[i] == ' ' || src[i] == '+' || src[i] == '\t') {
			i++
		}
		s := i
		for i < len(src) && !isSpace(src[i]) && src[i] != '+' && src[i] != '"' && src[i] != '\'' && src[i] != '=' && src[i] != '&' {
			i++
		}
		if i == s {
			if credEnd >= 0 && i+2 < len(src) && src[i] == '=' && src[i+1] == '>' && src[i+2] == ' ' {
				// # => 'x': an arrow points the credential to its value.
				if e := rw.announcedValue(i+2, code, false); e > i+2 {
					i, credEnd = e, -1
					continue
				}
			}
			if credEnd >= 0 && i > 0 && i+1 < len(src) && src[i] == '=' && src[i-1] == ' ' && src[i+1] == ' ' {
				// Kennwort Leitstand = x: an '=' between spaces joins
				// the announced credential to its value.
				if e := rw.announcedValue(i+1, code, false); e > i+1 {
					i, credEnd = e, -1
					continue
				}
			}
			if i < len(src) && (src[i] == '\n' || src[i] == '=' || src[i] == '&' || src[i] == '"') {
				credEnd = -1 // a line, a key or a string ends it
			}
			if i < len(src) && src[i] == '\n' {
				prompted = false
			}
			i++
			continue
		}
		tok := src[s:i]
		copy(toks[1:], toks[:4])
		toks[0] = [2]int{s, i}
		if e := rw.clauses(s, i); e > i {
			i, credEnd = e, -1
			continue
		}
		w := tok
		for len(w) > 0 && !isAlnum(w[len(w)-1]) {
			w = w[:len(w)-1]
		}
		rt := len(w) // the word's end in tok
		// A colon after the word, or after its parenthesis (share):).
		colon := len(tok) > rt && (tok[rt] == ':' || tok[len(tok)-1] == ':' && tok[rt] == ')')
		for len(w) > 0 && !isAlnum(w[0]) {
			w = w[1:]
		}
		// The last word of a key counts (mysql-monitor_password).
		last := w
		for k := len(w) - 1; k > 0; k-- {
			if w[k] == '_' || w[k] == '-' || w[k] == '.' || w[k] == ':' || w[k] == '/' {
				last = w[k+1:]
				break
			}
		}
		if credEnd < 0 && login < 0 && !prompted && (len(last) == 0 || announceTable.pairs[last[0]] == 0) && (len(w) == 0 || announceTable.pairs[w[0]] == 0) &&
			!hasSuffixFold(last, "code") {
			prev, prevWord = last, w // no word this pass reads, and none pending
			continue
		}
		raw := last
		lw := lowerInto(&wbuf, w)
		last = lowerInto(&lbuf, last)
		if string(lw) == "wi-fi" {
			last = append(lbuf[:0], "wifi"...) // the trademark's spelling, one word
		}
		if login >= 0 {
			login++
		}
		if len(w) == len(tok) {
			if e := rw.valueAfterWord(i, lw, last, &toks); e > i {
				i = e // voice password seven seven banana, login alice pass x
				prev, prevWord = nil, nil
				continue
			}
		}
		if loginFilter.may(lw) && loginVerbs[string(lw)] || string(last) == "pin" || string(last) == "password" && len(w) == len(last) {
			rw.actorBefore(&toks)
		}
		if loginFilter.may(lw) && loginVerbs[string(lw)] {
			login = 0
		} else if login >= 0 && login <= announceWindow && string(lw) == "as" && len(tok) == rt {
			// connected to 192.0.2.1:17070 as alice: the account.
			s, e := wordAfterSpaces(src, i)
			for e > s && src[e-1] == '.' {
				e--
			}
			if e > s && nameLike(src[s:e]) && !roleAccount(src[s:e]) && !isPlaceholder(src[s:]) {
				rw.mask(s, e, kUser)
				i, login = e, -1
				continue
			}
		}
		if prompted && replyVerbs[string(last)] {
			// expect "Password:" then send "x": the reply to the prompt.
			if e := rw.reply(i); e > i {
				i, prompted = e, false
				continue
			}
		}
		if i < len(src) && (src[i] == '"' || src[i] == '\'') && len(tok) > rt && tok[len(tok)-1] == ':' &&
			(hasSuffixFold(w, "assword") || hasSuffixFold(w, "passphrase") || string(last) == "pin") {
			prompted = true // a quoted prompt: "Password:", 'Enter PIN:'
		}
		if (string(lw) == "login" || accountNouns[string(lw)]) && len(tok) == rt {
			if e := rw.accountBeforeCredential(i, string(lw) != "login"); e > i {
				i = e // operator login mroom_op2 pin=3141
				continue
			}
		}
		if network := string(lw) == "wifi" || string(lw) == "wi-fi" || string(lw) == "wlan"; network ||
			accountFilter.may(last) && accountWords[string(last)] {
			if e := rw.slashPair(i, network); e > i {
				i, credEnd = e, -1
				prev, prevWord = nil, nil
				continue
			}
		}
		var isCode, named, keyOfSecret bool
		if announcedFilter.may(last) {
			isCode, named = announcedWords[string(last)]
		}
		if !named && (string(last) == "community" || string(last) == "string") {
			// An SNMP community (RFC 1157) is the password of its agent,
			// named so by its protocol or its access (SNMP community,
			// read community string): a noun only its qualifiers make a
			// credential's, in prose alone.
			named = true
		}
		if !named && gluedCode(raw) {
			isCode, named = true, true // Torcode, Zugangscode
		}
		isAnswer := string(last) == "answer" || string(last) == "answers"
		phrase := phraseNoun(last)
		if string(last) == "question" || string(last) == "questions" {
			asked = true
		}
		if quals := qualifiedOf(named, last); quals != nil && !(isAnswer && asked) {
			// A code, a key, a phrase: named so by the word before.
			var pb [16]byte
			q := prev // the word before, or the key's part before (zip_code)
			if k := len(w) - len(raw) - 1; k > 0 {
				q = w[:k]
				if j := bytes.LastIndexAny(q, "_-."); j >= 0 {
					q = q[j+1:]
				}
			}
			p := lowerInto(&pb, q)
			if len(p) <= 2 && len(prevWord) > len(q) && len(prevWord) <= 16 {
				// check-in code, sign-in key: the hyphenated word whole.
				n := 0
				for _, c := range prevWord {
					if c != '-' {
						pb[n] = lower(c)
						n++
					}
				}
				p = pb[:n]
			}
			named = p != nil && (quals[string(p)] || string(p) == "your" || string(p) == "time" ||
				(string(last) == "code" || string(last) == "codes") && secretCode(string(p)))
			// API key, enrolment key, encryption key: a secret's key,
			// whose value after a colon is its value whatever its shape
			// (enrolment key: MitoChondria!); a master or unlock key may
			// be a lock's, whose code it is.
			keyOfSecret = named && (string(last) == "key" || string(last) == "keys") && !keyCodeQuals[string(p)] &&
				len(w) == len(raw) && tok[0] != '(' // a word of prose, not a name's part: (check_secret_key): x
			if !named && string(p) == "key" && (string(last) == "code" || string(last) == "codes") && toks[2][1] > 0 {
				// door key code 4602: the code of what a key opens, not a
				// keyboard's key code.
				var ob [16]byte
				o := lowerInto(&ob, bytes.TrimRight(src[toks[2][0]:toks[2][1]], ",;:"))
				named = o != nil && qualifiedNouns["combination"][string(o)]
				isCode = named
			}
			if !named && p != nil && (string(last) == "code" || string(last) == "codes") && codeVerbs[string(p)] {
				if e := rw.interleavedCode(i); e > i {
					i = e // checked in with code FT4LXQ
					prev, prevWord = nil, nil
					continue
				}
			}
			if !named && (string(last) == "code" || string(last) == "codes") && (p == nil || !publicCodes[string(p)]) &&
				len(tok) == rt && bareCode(src, i) && !outcomeBefore(src, s) {
				// unlocked with code 73915, Locker 9, code 560745: a code
				// of four digits or more that no noun and no outcome in
				// its clause makes an exit's, an error's or a reply's.
				if e := rw.announcedValue(i, digitCode, false); e > i {
					i = e
					prev, prevWord = nil, nil
					continue
				}
			}
			if named && networkWords[string(p)] {
				isCode, phrase = false, true // WPA key, network key: a pass phrase, not a code
			}
			if !named && string(last) == "key" && len(w) == len(tok) && quotedNetworkBefore(src, s) {
				named, isCode, phrase = true, false, true // wifi "HarrowOffice" key x: the network's key
			}
		}
		switch {
		case named && cardCodes[string(last)]:
			// CVV 902: a card's security code, three or four digits.
			if e := cardCode(src, i); e > i {
				rw.mask(i+1, e, kSecret)
				i = e
			}
		case named:
			credEnd, code, since, answer, secretKey = i, codeOf(isCode, last), 0, isAnswer, keyOfSecret
			if l := leaderEnd(src, i); l > i {
				colon, i = true, l // Password . . . . . :  x
			}
			if colon {
				e := i
				if answer {
					e = rw.answerValue(i) // security answer: Ida Hollow
				}
				if e == i {
					e = rw.announcedValue(i, code, false)
				}
				if e == i && secretKey {
					e = rw.announcedValue(i, noCode, false)
				}
				i, credEnd = e, -1
			} else if code != noCode {
				// Door code 6087: a code right after its name, or a list;
				// gate code for Elm St lot 8937: after what it opens.
				if e := rw.announcedValue(i, code, false); e > i {
					i, credEnd = e, -1
				} else if e := rw.codeAfterPlace(i); e > i {
					i, credEnd = e, -1
				}
			} else if answer {
				if e := rw.answerValue(i); e > i {
					i, credEnd = e, -1 // security answer Lindenallee
				}
			} else if !phrase && len(tok) == rt && bareCode(src, i) && !outcomeBefore(src, s) {
				if e := rw.announcedValue(i, digitCode, false); e > i {
					i, credEnd = e, -1 // session password 5417: digits, a PIN's
				}
			} else if e := rw.clauseEndPassword(i, phrase); e > i {
				i, credEnd = e, -1 // arena password fern8
			} else if e := rw.passwordAfterPlace(i); e > i {
				i, credEnd = e, -1 // password for station KOTA P-wave-Arrival8
			} else if len(tok) != len(w) || !englishPassword(last) {
				// A password's word in punctuation, or another language's,
				// names no word after it.
			} else if e := rw.chosenWordAfter(i); e > i {
				i, credEnd = e, -1 // laptop password lanternfish
			}
		case credEnd >= 0 && (settingFilter.may(lw) && settingWords[string(lw)] && since <= 1 && !afterPreposition(prev) || since >= announceWindow):
			// A setting of the credential names it next (password length
			// is 12); further on, or after a preposition (PIN on file:
			// 2468), a setting word is prose (door code for the server
			// room is 3016).
			credEnd = -1
		case last != nil && string(last) == "securestring":
			// PowerShell's ConvertTo-SecureString takes a password as a
			// literal, after -String or alone.
			j := i
			if hasPrefixFold(src[j:], " -string") {
				j += len(" -string")
			}
			i = rw.announcedValue(j, noCode, true)
		case credEnd >= 0 && (connectorFilter.may(lw) && connectors[string(lw)] && len(tok) == rt && !(string(lw) == "to" && destinationVerb(prev)) ||
			colon || arrow(tok)):
			// Without a value the announcement goes on (changed from
			// 'monitor' to 'x').
			e := rw.announcedValue(i, code, false)
			if answer && e == i {
				e = rw.answerValue(i)
			}
			if e == i && colon && secretKey {
				e = rw.announcedValue(i, noCode, false)
			}
			if e == i && colon && code == noCode && !answer {
				e = rw.colonValue(i) // wifi password for guests: cinephile-popcorn
			}
			if e > i && string(lw) != "from" {
				i, credEnd = e, -1
			} else {
				i = e // changed from x to y: y too
				since++
			}
		case credEnd >= 0 && code != noCode && since < 3 && codeToken(src, s, i) && !preposition(prev) && !timeAfter(prev, src[s:i]) &&
			!announcesLater(src, i):
			// door code for pickup 6232, PIN accepted (8374): the code a
			// few words after its name, standing alone.
			ds, de := s, i
			for ds < de && src[ds] == '(' {
				ds++
			}
			for de > ds && !isDigit(src[de-1]) {
				de--
			}
			rw.mask(ds, de, kSecret)
			credEnd = -1
		case credEnd >= 0:
			since++
			if len(tok) > rt && (tok[rt] == '.' || tok[rt] == ';' || tok[rt] == ',') && !(tok[rt] == ',' && itIs(src[i:])) {
				credEnd = -1 // the end of a sentence or a clause
			}
		}
		prev, prevWord = raw, w
	}
}

// announcedValue masks the value after a connector that ends at i, when it
// is one: digits of a code of the kind code names, or (noCode) a word
// shaped like a password, or any quoted literal when literal is set. It
// returns where the scan goes on.
func (rw *rewriter) announcedValue(i int, code codeKind, literal bool) int {
	if code != noCode {
		// One code, or a list of them (recovery codes: x y z, [x, y]).
		src := rw.src
		e := rw.announcedDigits(i, code)
		first := bytes.TrimLeft(src[i:e], " +:='\"[")
		for e > i && e+1 < len(src) && (src[e] == ' ' || src[e] == ',' && src[e+1] == ' ') {
			k := e + 1
			if src[e] == ',' {
				k++
			} else if sep := listJoin(src[k:]); sep > 0 && allDigits(first) {
				k += sep - 1 // pins 7710 / 3392, codes 4471 and 9038: from the space before the next
			}
			n := rw.announcedDigits(k, code)
			if n == k {
				// A code of the list's shape is one of them, though it
				// reads as a number and its unit (4p2cj-argd8).
				if n = k + len(first); n > len(src) || !sameShape(first, src[k:n]) || n < len(src) && isWord(src[n]) {
					break
				}
				rw.mask(k, n, kSecret)
			}
			e = n
		}
		if e > i && allDigits(first) && len(first) >= 4 {
			e = rw.nextCodeOfClause(e, len(first))
		}
		return e
	}
	src := rw.src
	vs := i
	for vs < len(src) && vs-i < 4 && (src[vs] == ' ' || src[vs] == ':') {
		vs++
	}
	if refEnd(src, vs) > 0 {
		return i // ((db-password)), !secret x, ${X:?must be set}
	}
	if vs < len(src) && src[vs] == '!' {
		vs = typeTagEnd(src, vs)
	}
	if e := titlePhraseEnd(src, vs); e > vs {
		rw.mask(vs, e, kSecret) // Password: Dished Wheel 1890
		return e
	}
	var quote byte
	if vs < len(src) && (src[vs] == '\'' || src[vs] == '"') {
		quote = src[vs]
		vs++
	}
	ve := vs
	for ve < len(src) && !isSpace(src[ve]) && src[ve] != quote && (quote != 0 || src[ve] != '"' && src[ve] != '\'') {
		if escapedBreak(src, ve) {
			break // an escaped line break or tab
		}
		ve++
	}
	v := src[vs:ve]
	if quote == 0 {
		v = trimSentence(v, ".,;")
	}
	if quote != 0 && literal {
		// ConvertTo-SecureString 'a pass phrase': the literal whole.
		if k := bytes.IndexByte(src[vs:min(len(src), vs+maxRef)], quote); k > 0 {
			rw.mask(vs, vs+k, kSecret)
			return vs + k
		}
		return i
	}
	// Digits and slashes alone, quoted, are a date ('27/03/91'), no path.
	if (len(v) >= 6 || len(v) == 5 && hasLetter(v) && hasDigit(v)) && passwordShaped(v) && !(notASecret(src, vs, ve) && (quote == 0 || hasLetter(v) || maskValue(v))) && !isPlaceholder(v) {
		rw.mask(vs, vs+len(v), kSecret)
		return vs + len(v)
	}
	if quote != 0 {
		// A pass phrase quoted whole ("sleet russet eclipse sleet").
		if k := bytes.IndexByte(src[vs:min(len(src), vs+maxRef)], quote); k > 0 && passPhrase(src[vs:vs+k]) {
			rw.mask(vs, vs+k, kSecret)
			return vs + k
		}
	} else {
		if dashedWords(v) {
			rw.mask(vs, vs+len(v), kSecret) // the hotline password is blue-wave-bus
			return vs + len(v)
		}
		// A pass phrase: three words or more of small letters
		// (otter pebble granite heron), up to prose or punctuation.
		if e := phraseEnd(src, vs, vs+len(v)); e > vs+len(v) {
			rw.mask(vs, e, kSecret)
			return e
		}
		if e := vs + len(v); wordAfterIs(src, i, vs, e) {
			rw.mask(vs, e, kSecret) // the security word is gooseberry
			return e
		}
	}
	return i
}

// wordAfterIs reports whether the one word src[vs:e], after one of
// wordLinks that ends at i, ends its clause and names a thing: a
// credential that is one word of the dictionary (the password is hunter,
// the security word was Gooseberry). A word that tells the credential's
// state is none: function words, stateWords, predicateWords, and the
// endings of participles and adjectives (required, missing, optional,
// sensitive, different).
func wordAfterIs(src []byte, i, vs, e int) bool {
	if e-vs < 4 || e-vs > 16 || !valueEndsClause(src, e) || !isUpper(src[vs]) && !isLower(src[vs]) {
		return false
	}
	for _, c := range src[vs+1 : e] {
		if !isLower(c) {
			return false
		}
	}
	before := bytes.TrimRight(src[:i], " ")
	if !slices.ContainsFunc(wordLinks, func(l string) bool { return bytes.HasSuffix(before, []byte(l)) }) {
		return false
	}
	var b [16]byte
	w := string(lowerInto(&b, src[vs:e]))
	if grammarWords[w] || stateWords[w] || predicateWords[w] || settingWords[w] {
		return false
	}
	return !slices.ContainsFunc(stateEndings, func(end string) bool { return strings.HasSuffix(w, end) })
}

// wordLinks join a credential to the one word that is it.
var wordLinks = []string{" is", " was", " set to", " changed to"}

// predicateWords tell a credential's state after "is" where no other
// set (grammarWords, stateWords, settingWords) and no ending does.
var predicateWords = wordSet(`fine good bad right correct due secure unsafe safe free ready gone done known taken shown open plain plaintext
	clear cleartext secret private random unique still now never always mine case whatever stale given written
	chosen forgotten broken stolen frozen spoken seen drawn proven overwritten rewritten forbidden gotten kept
	lost left found made put read run shut split stuck told thought`)

// stateEndings are the endings of the participles and adjectives that
// tell a state (expired, missing, readable, sensitive, personal).
var stateEndings = []string{"ed", "ing", "able", "ible", "ive", "ous", "ful", "less", "ent", "ant", "ary", "ory", "ic", "al", "ly", "ise", "ize"}

// valueEndsClause reports whether a clause ends at e, where a value ends:
// the text, a line or punctuation ends there, or a parenthesis opens.
func valueEndsClause(src []byte, e int) bool {
	return e == len(src) || src[e] == '\n' || src[e] == '.' || src[e] == ',' || src[e] == ';' || src[e] == ')' ||
		src[e] == ' ' && e+1 < len(src) && src[e+1] == '('
}

// passwordValue reports whether v, which ends a clause after a password's
// word, is shaped as a password: five to 64 bytes, letters with digits or
// marks as a password mixes them, or three words joined by dashes.
func passwordValue(v []byte) bool {
	return len(v) >= 5 && len(v) <= 64 && ((hasLetter(v) && hasDigit(v) || mixedWithMark(v)) && passwordShaped(v) || phraseWords(v, '-', nil) >= 3)
}

// passwordAfterPlace masks the password that ends the clause after the
// password's word that ends at i and what it opens: "for", one to six
// words or a quoted title, then the value, shaped as clauseEndPassword
// takes one, quoted or not (password for station KOTA P-wave-Arrival8), or
// after a colon that ends the place, any value announcedValue takes
// (password for "The Salt Harvest" screener: saltharvest!press). A clause
// that goes on after its last word (password for user admin1 expired) has
// none. It returns the value's end, or i.
func (rw *rewriter) passwordAfterPlace(i int) int {
	src := rw.src
	if !phrasePrefix(src[i:], " for ") {
		return i
	}
	k := i + len(" for ")
	for w := 0; w < 7 && k < len(src); w++ {
		s, e := k, k
		quoted := src[s] == '"' || src[s] == '\''
		if quoted {
			q := bytes.IndexByte(src[s+1:min(len(src), s+66)], src[s])
			if q < 0 {
				return i
			}
			e = s + q + 2
		} else {
			for e < len(src) && e-s <= 64 && !isSpace(src[e]) {
				e++
			}
		}
		if w > 0 {
			vs, v := s, trimSentence(src[s:e], ".,;)")
			end := vs + len(v)
			if quoted {
				vs, v, end = s+1, src[s+1:e-1], e
			}
			if valueEndsClause(src, end) && passwordValue(v) && !isPlaceholder(v) && !notASecret(src, vs, vs+len(v)) {
				rw.mask(vs, vs+len(v), kSecret)
				return end
			}
		}
		if !quoted && src[e-1] == ':' && e-s > 1 {
			// A colon ends the place: what follows is its password, read
			// as after the password's own colon.
			if ve := rw.announcedValue(e, noCode, false); ve > e {
				return ve
			}
			return i
		}
		if e >= len(src) || src[e] != ' ' || !quoted && (src[s] == '(' || strings.IndexByte(".,;)!?", src[e-1]) >= 0) {
			return i // the clause ends with no value
		}
		k = e + 1
	}
	return i
}

// clauseEndPassword masks a password right after the credential word
// that ends at i, with no connector between, when it ends the clause (the
// text, a line, or punctuation): letters and digits, five or more,
// shaped as a password (room password fern8), words joined by dashes
// (password tulip-saffron-harbor) or, after a phrase's noun (phrase), a
// phrase of three words or more. A word that goes on the sentence
// (password reset2 done, password reset link sent) is none. It returns
// the end, or i.
func (rw *rewriter) clauseEndPassword(i int, phrase bool) int {
	src := rw.src
	if i+2 >= len(src) || src[i] != ' ' || src[i+1] == '"' || src[i+1] == '\'' {
		return i // a quoted value is the other passes'
	}
	vs, ve := i+1, i+1
	for ve < len(src) && ve-vs <= 64 && !isSpace(src[ve]) {
		ve++
	}
	v := trimSentence(src[vs:ve], ".,;)")
	end := vs + len(v)
	if isPlaceholder(v) || notASecret(src, vs, end) {
		return i
	}
	ws := i
	for ws > 0 && isAlnum(src[ws-1]) {
		ws--
	}
	if e := titlePhraseEnd(src, vs); e > vs && ws < i && !isUpper(src[ws]) {
		// console password Bar Buoy Red 3; a capitalised word before
		// capitalised words is a title's (Password Reset Link Sent).
		rw.mask(vs, e, kSecret)
		return e
	}
	if valueEndsClause(src, end) && passwordValue(v) {
		rw.mask(vs, end, kSecret)
		return end
	}
	// A pass phrase of words, to the clause's end (passphrase otter
	// pebble granite heron).
	if !phrase {
		return i // a password's word before words is prose (password reset link sent)
	}
	e, n := vs, 0
	for n < 12 {
		w := e
		for w < len(src) && w-e <= 10 && src[w] >= 'a' && src[w] <= 'z' {
			w++
		}
		if w-e < 3 || w-e > 10 || grammarWords[string(src[e:w])] || settingWords[string(src[e:w])] || w < len(src) && isWord(src[w]) {
			break
		}
		e, n = w, n+1
		if e+1 >= len(src) || src[e] != ' ' || src[e+1] < 'a' || src[e+1] > 'z' {
			break
		}
		e++
	}
	if n >= 3 && valueEndsClause(src, e) {
		rw.mask(vs, e, kSecret)
		return e
	}
	return i
}

// phraseNoun reports whether w, a credential word in lower case, names a
// phrase of words: a passphrase, a phrase, a seed, a mnemonic.
func phraseNoun(w []byte) bool {
	switch string(w) {
	case "passphrase", "phrase", "seed", "mnemonic", "words":
		return true
	}
	return false
}

// phraseWords returns how many words v is, joined by sep, when each is
// a word a pass phrase draws: three to ten small letters, no function word
// and none of except (nil: none); 0 when v is anything else.
func phraseWords(v []byte, sep byte, except map[string]bool) int {
	n := 0
	for _, w := range bytes.Split(v, []byte{sep}) {
		if len(w) < 3 || len(w) > 10 || !isLowerWord(w) || grammarWords[string(w)] || except[string(w)] {
			return 0
		}
		n++
	}
	return n
}

// actorBefore masks the account named before an act of signing in or of
// setting a credential, the token toks[0] (marshal tovanek logged in,
// manager x reset password, leader x set new PIN, staff x PIN 7839): a
// person's part, then the account, then the act. toks holds the bounds of
// the last five tokens, the act's word first.
func (rw *rewriter) actorBefore(toks *[5][2]int) {
	src := rw.src
	n := 1 // the account's token
	for n < 3 && toks[n][1] > 0 && setVerb(src[toks[n][0]:toks[n][1]]) {
		n++ // reset password, set new PIN: the verb, and "new"
	}
	if n+1 >= len(toks) || toks[n+1][1] == 0 || toks[n][1]+1 != toks[n-1][0] || toks[n+1][1]+1 != toks[n][0] {
		return
	}
	name, part := src[toks[n][0]:toks[n][1]], src[toks[n+1][0]:toks[n+1][1]]
	if k := bytes.LastIndexByte(part, '-'); k >= 0 {
		part = part[k+1:] // printer-apprentice
	}
	var buf [16]byte
	role := lowerInto(&buf, part)
	if role == nil || !(personWords[string(role)] || personParts[string(role)] || actorRoles[string(role)]) ||
		prepositions[string(role)] || !actorName(name) || toks[n][0] < rw.last {
		return
	}
	rw.mask(toks[n][0], toks[n][1], kUser)
}

// setVerb reports whether w sets a credential before its word: set,
// reset, changed, new.
func setVerb(w []byte) bool {
	switch string(w) {
	case "set", "reset", "changed", "new", "Set", "Reset", "Changed", "New":
		return true
	}
	return false
}

// preposition reports whether w is one of prepositions, in any case.
func preposition(w []byte) bool {
	var buf [16]byte
	lw := lowerInto(&buf, w)
	return lw != nil && prepositions[string(lw)]
}

// announcesLater reports whether the text after i goes on to a connector
// within a few words (PIN for 1003 changed to x, PIN for card 23 is x):
// the number before it names what the code is for.
func announcesLater(src []byte, i int) bool {
	rest := src[i:min(len(src), i+40)]
	for _, c := range []string{" is ", " was ", " changed", " to "} {
		if bytes.Contains(rest, []byte(c)) {
			return true
		}
	}
	return false
}

// codeToken reports whether src[s:e], a token, is a code of four to ten
// digits, in parentheses or not, before the end of a clause.
func codeToken(src []byte, s, e int) bool {
	for s < e && src[s] == '(' {
		s++
	}
	d := s
	for d < e && isDigit(src[d]) {
		d++
	}
	if g := dialGroupsEnd(src[s:e]); g > 0 {
		d = s + g // 4-2-2-6: a dial's numbers
	}
	rest := src[d:e]
	return (d-s >= 4 && d-s <= 10 || d-s > 4 && bytes.IndexByte(src[s:d], '-') > 0) && (len(rest) == 0 || string(rest) == ")" || len(rest) == 1 && strings.IndexByte(".,;#", rest[0]) >= 0 ||
		string(rest) == ")," || string(rest) == ").")
}

// sameShape reports whether a and b, of one length, hold letters or
// digits at the same places and the same other bytes between them, and,
// unless those bytes group them (9dd6-y8ha, qynj-zfrz: a random group may
// lack a digit by chance), both digits and letters, or one of them,
// alike.
func sameShape(a, b []byte) bool {
	if len(a) != len(b) || len(a) < 6 {
		return false
	}
	if allAlnum(a) && (hasDigit(a) != hasDigit(b) || hasLetter(a) != hasLetter(b)) {
		return false
	}
	for k := range a {
		if isAlnum(a[k]) != isAlnum(b[k]) || !isAlnum(a[k]) && a[k] != b[k] {
			return false
		}
	}
	return true
}

// slashPair masks an account and its password written NAME / PASS after
// an account word that ends at i (login admin / 1423, login: groundskeeper
// / x, credentials are jmarlow / x; login admin/x when x, eight bytes or
// more, holds a digit and no further '/', or is words joined by dashes:
// login sup/pennies-from-heaven), and returns where the scan
// goes on:
// i when there is no such pair. The password is shaped like one, or four
// digits or more; an account named for its role stays, and so does the
// name of a network (network: wifi Staff / x).
func (rw *rewriter) slashPair(i int, network bool) int {
	src := rw.src
	j := i
	for j < len(src) && j-i < 2 && src[j] == ':' {
		j++
	}
	for _, c := range []string{" are", " is"} {
		if hasPrefixFold(src[j:], c) {
			j += len(c)
		}
	}
	ns, ne := wordAfterSpaces(src, j)
	limit := 32
	if ne > ns && ne+1 < len(src) && src[ne] == '@' && isAlnum(src[ne+1]) {
		_, ne = wordAfterSpaces(src, ne+1) // an account by its e-mail address
		limit = 64
	}
	vs := ne + 3
	switch {
	case ne == ns || ne-ns > limit:
		return i
	case ne+1 < len(src) && src[ne] == '/' && isAlnum(src[ne+1]) && ns > j:
		vs = ne + 1 // login admin/x: the pair as one word, no path
	case !hasPrefixFold(src[ne:], " / "):
		// The pair may stand a few words on, after the account's role or
		// whom it is for (login instructor pb / x, login for Aisha is op
		// 6612 / x): in the clause, the word before " / ".
		p := pairAhead(src, ne)
		if p < 0 {
			return i
		}
		ns, ne, vs = p, p, p+3
		for ns > j && (isWord(src[ns-1]) || src[ns-1] == '.' || src[ns-1] == '-') {
			ns--
		}
		if ns == ne {
			return i
		}
	}
	ve := vs
	for ve < len(src) && !isSpace(src[ve]) && ve-vs <= 64 {
		if escapedBreak(src, ve) {
			break // an escaped line break or tab
		}
		ve++
	}
	v := trimSentence(src[vs:ve], ".,;")
	glued := vs == ne+1 && (chosenWord(v) && (roleAccount(src[ns:ne]) || bytes.IndexAny(src[ns:ne], "0123456789._") >= 0) || dashedWords(v))
	if !(passwordShaped(v) || allDigits(v) && len(v) >= 4 || glued) || notASecret(src, vs, vs+len(v)) || isPlaceholder(v) ||
		numberWithUnit(v) || numberWithUnit(src[ns:ne]) || // 2.4GHz / 5GHz: a choice of two measures
		vs == ne+1 && !(allDigits(v) && len(v) >= 4) && (len(v) < 8 || !hasDigit(v) || bytes.IndexByte(v, '/') >= 0) && !glued {
		return i
	}
	if !network && nameLike(src[ns:ne]) && !roleAccount(src[ns:ne]) {
		rw.mask(ns, ne, kUser)
	}
	rw.mask(vs, vs+len(v), kSecret)
	return vs + len(v)
}

// pairAhead returns where " / " stands after i in i's clause, at most
// 48 bytes on, or -1: a comma, a quote or a sentence's end ends the
// clause.
func pairAhead(src []byte, i int) int {
	p := bytes.Index(src[i:min(len(src), i+48+3)], []byte(" / "))
	if p < 0 {
		return -1
	}
	for k := i; k < i+p; k++ {
		switch src[k] {
		case ',', ';', '"', '!', '?', '\n', '(', ')':
			return -1
		case '.':
			if src[k+1] == ' ' {
				return -1
			}
		}
	}
	return i + p
}

// notWords reports whether the letters of v do not read as words (OIZSBLUP
// is a code, WELCOME a word).
func notWords(v []byte) bool {
	cost, _ := runCost(v)
	return cost > wordLimit
}

// codeAfterPlace masks the code that ends the clause after the code's
// noun that ends at i and the place it opens, "for" or "at" and one to
// five words (gate code for Elm St lot 8937, keypad code at Pier 9 gate
// 1782, pairing code for IOM class 3307785): three to eight digits, or a
// dial's groups (4-2-2-6). It returns the code's end, or i.
func (rw *rewriter) codeAfterPlace(i int) int {
	src := rw.src
	if !phrasePrefix(src[i:], " for ") && !phrasePrefix(src[i:], " at ") {
		return i
	}
	k := i + 1
	for k < len(src) && src[k] != ' ' {
		k++
	}
	for w := 0; w < 5 && k+1 < len(src) && src[k] == ' '; w++ {
		s := k + 1
		if w > 0 {
			n := dialGroupsEnd(src[s:])
			if d := digitRun(src, s); d >= 3 && d <= 8 && !(d == 4 && centuryStart(src[s:])) {
				n = d // not a year
			}
			if e := s + n; n >= 3 && codeEndsClause(src, e) {
				rw.mask(s, e, kSecret)
				if n >= 4 && allDigits(src[s:e]) {
					e = rw.nextCodeOfClause(e, n)
				}
				return e
			}
		}
		e := s
		for e < len(src) && e-s <= 16 && (isAlpha(src[e]) || src[e] == '\'' || src[e] >= 0x80 || isDigit(src[e]) && e-s < 2) {
			e++
		}
		if e == s || e-s > 16 {
			return i
		}
		k = e
	}
	return i
}

// digitRun returns the count of digits at src[s:].
func digitRun(src []byte, s int) int {
	e := s
	for e < len(src) && isDigit(src[e]) {
		e++
	}
	return e - s
}

// centuryStart reports whether v starts as a year of the last century or
// this one does (19…, 20…): four digits so written are a year, no code.
func centuryStart(v []byte) bool {
	return len(v) >= 2 && (v[0] == '1' && v[1] == '9' || v[0] == '2' && v[1] == '0')
}

// codeEndsClause reports whether a code may end at e: the text's end, or
// a space, a '#' or punctuation that ends a clause.
func codeEndsClause(src []byte, e int) bool {
	if e >= len(src) {
		return true
	}
	switch src[e] {
	case ',', '.', ';', ')', '#', '!':
		return e+1 >= len(src) || src[e+1] == ' ' || src[e] == '#'
	case ' ':
		return e+1 >= len(src) || src[e+1] == '(' || src[e+1] == '-' || phrasePrefix(src[e:], " and ")
	}
	return false
}

// nextCodeOfClause masks a second code of n digits that the clause after
// a code ends at e names next, after a comma and up to three words (PIN
// 6583 for section A, 0475 for section B; code 5488, alarm 6818), and
// returns where the scan goes on.
func (rw *rewriter) nextCodeOfClause(e, n int) int {
	src := rw.src
	k := e
	for k < len(src) && k-e < 48 && src[k] != ',' && src[k] != '.' && src[k] != ';' && src[k] != '\n' && !isDigit(src[k]) {
		k++
	}
	if k+2 >= len(src) || src[k] != ',' || src[k+1] != ' ' {
		return e
	}
	s := k + 2
	// Up to three words may name what the second code opens (passcode
	// 080808, manager iPad 271828; code 5488, alarm 6818).
	for w := 0; w < 3 && s < len(src) && isAlpha(src[s]); w++ {
		we := s
		for we < len(src) && we-s <= 12 && isAlpha(src[we]) {
			we++
		}
		if we-s > 12 || we+1 >= len(src) || src[we] != ' ' {
			return e
		}
		s = we + 1
	}
	m := s + digitRun(src, s)
	if m-s != n || m < len(src) && (isAlnum(src[m]) || src[m] == '.' || src[m] == ':' || src[m] == '/' || src[m] == '-') ||
		n == 4 && centuryStart(src[s:]) {
		return e // (a year, 2026, goes on with the clause)
	}
	rw.mask(s, m, kSecret)
	return m
}

// allAlnum reports whether v is letters and digits alone.
func allAlnum(v []byte) bool {
	for _, c := range v {
		if !isAlnum(c) {
			return false
		}
	}
	return true
}

// announcedDigits masks a code of the kind code names standing alone
// after the separators at i (spaces, URL-encoded spaces, a colon or '=',
// a quote, a list's bracket), and returns its end, or i when there is
// none.
func (rw *rewriter) announcedDigits(i int, code codeKind) int {
	src := rw.src
	s := i
	for s < len(src) && s-i < 4 && (src[s] == ' ' || src[s] == '+' || src[s] == ':' || src[s] == '=' || src[s] == '"' || src[s] == '\'' || src[s] == '[' ||
		// A keypad's mark before the digits (gate code #4402), or a
		// parenthesis around them (the alarm code (55190)).
		(src[s] == '#' || src[s] == '(') && s+1 < len(src) && isDigit(src[s+1])) {
		s++
	}
	if s > i && (src[s-1] == '"' || src[s-1] == '\'') {
		// A code quoted whole, of any bytes but spaces (door code
		// "Dune$1995"), when shaped like a password.
		q := bytes.IndexByte(src[s:min(len(src), s+33)], src[s-1])
		if q > 0 && bytes.IndexByte(src[s:s+q], ' ') < 0 && passwordShaped(src[s:s+q]) && hasLetter(src[s:s+q]) && hasDigit(src[s:s+q]) &&
			!allAlnum(src[s:s+q]) {
			rw.mask(s, s+q, kSecret)
			return s + q
		}
	}
	e := s
	for e < len(src) && e-s <= 24 && (isAlnum(src[e]) || src[e] == '-' && e > s && e+1 < len(src) && isAlnum(src[e+1])) {
		e++
	}
	// Four to ten digits, or six to twenty letters and digits mixed, in
	// groups or not (an invite code nl32n59t, a recovery code e5us-36tm),
	// or letters whose case changes inside as no word's does (tBLlCxWGh).
	v := src[s:e]
	var letters, digits, inner int
	for k, c := range v {
		switch {
		case isDigit(c):
			digits++
		case isAlpha(c):
			letters++
			if k > 0 && isUpper(c) && !isUpper(v[k-1]) {
				inner++
			}
		}
	}
	if g := dialGroupsEnd(v); g > 0 && g == len(v) && s > i && (e == len(src) || !isAlnum(src[e]) && src[e] != '-' && src[e] != '/') {
		rw.mask(s, e, kSecret) // padlock combination 7-3-9-1
		return e
	}
	if wideGroups(v) && s > i && (e == len(src) || !isAlnum(src[e]) && src[e] != '-' && src[e] != '/') {
		rw.mask(s, e, kSecret) // release code 0918-7724
		return e
	}
	mixed := letters+digits >= 6 && letters+digits <= 20 && (digits > 0 && letters > 0 && !numberWithUnit(v) || digits == 0 && inner >= 3 ||
		digits == 0 && letters <= 12 && isUpperName(v) && notWords(v))
	if !(allDigits(v) && (len(v) >= 4 || len(v) == 3 && code == lockCode) && len(v) <= 10 || mixed) ||
		s == i || e < len(src) && (isAlnum(src[e]) || src[e] == '.' && e+1 < len(src) && isDigit(src[e+1]) || src[e] == ':' || src[e] == '-' || src[e] == '/') {
		return i
	}
	rw.mask(s, e, kSecret)
	return e
}

// gateAnnounced reports whether src may announce a value: a word (or a
// key's part after '_', '-' or '.') starts with one of announceStarts, in
// any case. One look at the first letter of each word.
func gateAnnounced(src []byte, _ features) bool {
	quoted := -1 // whether the text holds a quote, read at its first '/'
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '/' {
			if quoted < 0 {
				quoted = 0
				if bytes.IndexByte(src, '"') >= 0 || bytes.IndexByte(src, '\'') >= 0 {
					quoted = 1
				}
			}
			if quoted == 1 && pathKeyBeforeQuote(src, i) {
				return true // app/db/requirepass 'x' (quotedPair)
			}
		}
		if !isAlpha(c) {
			continue
		}
		if i+1 < len(src) && announceTable.pairs[c]&letterBit[src[i+1]] != 0 {
			for _, l := range announceTable.byFirst[c] {
				if l[1] == lower(src[i+1]) && hasPrefixFold(src[i:], l) {
					return true
				}
			}
		}
		ws := i
		for i+1 < len(src) && isAlpha(src[i+1]) {
			i++ // the rest of the word
		}
		if i-ws >= 6 && hasSuffixFold(src[:i+1], "code") {
			return true // a noun glued before code (Torcode)
		}
	}
	return false
}

// lockNouns name a lock's code that may be three digits, as a luggage
// padlock's or a bicycle lock's is (padlock 392, combination set to 319).
// A locker's, a lockbox's or a lock's number is more often the thing's
// own (locker 118, lock 123 released), and needs four.
var lockNouns = wordSet(`padlock keysafe combination combo`)

// keyCodeQuals qualify a key that may open a lock or pair a device, whose
// value is a code: the other qualifiers of a key (qualifiedNouns) name a
// secret's, whose value is a password's, of any shape.
var keyCodeQuals = wordSet(`master unlock pairing device local your time`)

// codeKind is what an announcement's value is: a password's (noCode), a
// code of four digits or more (digitCode), or a lock's code, which may
// have three (lockCode).
type codeKind uint8

const (
	noCode codeKind = iota
	digitCode
	lockCode
)

// codeOf returns the kind of the value the credential's word last
// announces; isCode says it announces a code.
func codeOf(isCode bool, last []byte) codeKind {
	switch {
	case !isCode:
		return noCode
	case lockNouns[string(last)]:
		return lockCode
	}
	return digitCode
}

// announceStarts are the literals an announcing word starts with.
var announceStarts = []string{"pin", "pass", "code", "otp", "kennw", "securestring", "connected", "logged", "authenticated", "signed",
	"phrase", "contra", "clave", "wifi", "wi-fi", "wlan", "keyp", "unlock", "authori", "wachtw", "senha", "salasana", "haslo", "heslo", "parola", "schl", "login", "account", "cred",
	"vouch", "key", "open", "overr", "pw", "psk", "padl", "lock", "puk", "cvv", "cvc", "csc", "safe", "basic", "auth", "logon", "token", "secret", "comb", "answer", "question", "signin", "assword", "word", "commun",
	// The governed pass's words besides these (governors): a buzzer, an account's number.
	"buzz", "acct"}

var announceTable = newPrefixTable(announceStarts)

// Passwords fed to a command's input: echo 'x' | chpasswd, echo x | kinit
// alice, sshfs … -o password_stdin <<< 'x'. A value echoed or given as a
// here-string is a password when the command that reads it reads one
// there: its name holds "passw" or ends in "init" (kinit, iinit), or its
// line names a password read from stdin (--password-stdin); an echo is
// one too as the value of a setting whose command yields a password
// (password-command: echo x).

var litEcho, litHere = newLit("echo "), newLit("<<< ")

// gateStdin reports whether src may feed a value to a command, or echo
// one as a setting's command.
func gateStdin(src []byte, f features) bool {
	return litEcho.in(src, f) && (bytes.IndexByte(src, '|') >= 0 || commandWord(src)) || bytes.IndexByte(src, '<') >= 0 && litHere.in(src, f)
}

// commandWord reports whether s holds a word that names a command a
// setting runs: cmd, command, eval (password-command, PassCmd,
// passwordeval).
func commandWord(s []byte) bool {
	return indexFold(s, "cmd") >= 0 || indexFold(s, "command") >= 0 || indexFold(s, "eval") >= 0
}

// echoedSetting reports whether the echo at k is the value of a setting
// whose command yields a credential (password-command: echo x,
// passwordeval "echo x", PassCmd "echo x"): the key right before it, past
// a sign and a quote, names a credential and a command.
func echoedSetting(src []byte, k int) bool {
	j := k
	for j > 0 && k-j < 4 && strings.IndexByte(" \"':=", src[j-1]) >= 0 {
		j--
	}
	ks := j
	for ks > 0 && j-ks < 64 && isKeyByte(src[ks-1]) {
		ks--
	}
	key := src[ks:j]
	return j < k && ks < j && commandWord(key) &&
		(indexFold(key, "pass") >= 0 || indexFold(key, "pw") >= 0 || indexFold(key, "secret") >= 0 || indexFold(key, "token") >= 0)
}

func redactStdin(rw *rewriter) {
	src := rw.src
	// echo and here are the next "echo " and "<<< " at or after i (-1:
	// none), each searched for again only once i passes it.
	echo, here := -2, -2
	next := func(at, i int, lit string) int {
		if at >= i || at == -1 {
			return at
		}
		if k := bytes.Index(src[i:], []byte(lit)); k >= 0 {
			return i + k
		}
		return -1
	}
	for i := 0; i < len(src); {
		echo, here = next(echo, i, "echo "), next(here, i, "<<< ")
		k, h := echo-i, here-i
		switch {
		case echo < 0 && here < 0:
			return
		case echo >= 0 && (here < 0 || k < h):
			vs, ve := quotedOrWord(src, i+k+len("echo "))
			p := ve
			if p < len(src) && (src[p] == '\'' || src[p] == '"') {
				p++
			}
			for p < len(src) && src[p] == ' ' {
				p++
			}
			if ve > vs && (p+1 < len(src) && src[p] == '|' && readsPassword(src, p+1) || echoedSetting(src, i+k)) && !notASecret(src, vs, ve) {
				rw.mask(vs, ve, kSecret)
			}
			i = max(ve, i+k+len("echo "))
		default:
			vs, ve := quotedOrWord(src, i+h+len("<<< "))
			ls := max(0, i+h-maxRef) // the command, at most maxRef back
			if n := bytes.LastIndexByte(src[ls:i+h], '\n'); n >= 0 {
				ls += n + 1
			}
			if ve > vs && hereReadsPassword(src[ls:i+h], ls, src) && !notASecret(src, vs, ve) {
				rw.mask(vs, ve, kSecret)
			}
			i = max(ve, i+h+len("<<< "))
		}
	}
}

// quotedOrWord returns the bounds of the quoted text or the word at i.
func quotedOrWord(src []byte, i int) (int, int) {
	if i < len(src) && (src[i] == '\'' || src[i] == '"') {
		if k := bytes.IndexByte(src[i+1:min(len(src), i+1+maxRef)], src[i]); k > 0 {
			return i + 1, i + 1 + k
		}
		return i, i
	}
	return i, valueWord(src, i)
}

// readsPassword reports whether the command at i reads a password from
// its input: by its name, or by a flag or option of its line.
func readsPassword(src []byte, i int) bool {
	for i < len(src) && src[i] == ' ' {
		i++
	}
	e := i
	for e < len(src) && !isSpace(src[e]) && e-i < 64 {
		e++
	}
	name := src[i:e]
	if k := bytes.LastIndexByte(name, '/'); k >= 0 {
		name = name[k+1:]
	}
	line := src[i:min(len(src), i+maxRef)] // its line, at most maxRef on
	if le := bytes.IndexByte(line, '\n'); le >= 0 {
		line = line[:le]
	}
	return indexFold(name, "passw") >= 0 || bytes.HasSuffix(name, []byte("init")) ||
		indexFold(line, "password-stdin") >= 0 || indexFold(line, "password_stdin") >= 0
}

// hereReadsPassword reports whether the command of seg, the text of a line
// before a here-string, reads a password from it: a command of the line
// named for one (smbpasswd -a x -s <<<, addencpassword x - <<<), or one
// readsPassword knows at the line's start ls.
func hereReadsPassword(seg []byte, ls int, src []byte) bool {
	return indexFold(seg, "passw") >= 0 || readsPassword(src, ls)
}

// Clauses: a call or a parenthesised clause named by a credential takes
// its value as its argument, in any language, its name before the
// parenthesis or, in Lisp, inside it: PASSWORD(X) and
// PHRASE('x') of a security product's commands, password('x') of a
// Prolog option list, passwd('admin', 'x') and basic(svc, 'x') of an
// account and its password, and a Lisp keyword and the strings after it
// ((:login "u" "x"), :proxy-authorization '("u" "x")). A clause named for
// the credential takes one argument, or an account and the credential; a
// verb of logging in takes the two. A setting of the credential
// (password_min_length(12)) and a getter (get_password(x)) name none.

// pairVerbs take an account and its password as their two arguments.
var pairVerbs = wordSet(`basic login logon signin auth authorization credentials creds`)

// passwordNames name a password as a clause's or a keyword's whole name.
var passwordNames = wordSet(`pwd pw passcode`)

// clauseKind classifies the name of a clause: clausePassword when it is a
// password's own name, clausePair when it is a verb of logging in.
func clauseKind(name []byte) int {
	if k := bytes.LastIndexByte(name, '-'); k >= 0 {
		name = name[k+1:] // a Lisp keyword's last word: proxy-authorization
		if clauseKind(name) != clausePair {
			return clauseNone
		}
	}
	var buf [16]byte
	n := string(lowerInto(&buf, name))
	switch pw, ok := announcedWords[n]; {
	case ok && !pw && n != "answer" && n != "answers" || passwordNames[n]:
		return clausePassword
	case pairVerbs[n]:
		return clausePair
	}
	return clauseNone
}

const (
	clauseNone = iota
	clausePassword
	clausePair
)

// clauses masks the value of a clause named in the token src[s:e], or of
// the Lisp keyword the token is, and returns where the scan goes on: e
// when there is none.
func (rw *rewriter) clauses(s, e int) int {
	src := rw.src
	// A clause opens a parenthesis and a keyword starts with a colon: in a
	// text without either, each token goes to quotedPair unread.
	if rw.feat != 0 && rw.feat&(fParen|fColon) == 0 {
		return rw.quotedPair(s, e)
	}
	for p := s; p < e; p++ {
		if src[p] != '(' {
			if src[p] == ':' && (p == s || src[p-1] == '(') && p+1 < e && isAlpha(src[p+1]) {
				// (:login "u" "x"), :password "x": a keyword and its
				// strings; :proxy-authorization '("u" "x"): and its list.
				kind := clauseKind(src[p+1 : e])
				if kind == clauseNone {
					return e
				}
				j := e
				for j < len(src) && j-e < 4 && (src[j] == ' ' || src[j] == '\'') {
					j++
				}
				if j < len(src) && src[j] == '(' {
					return rw.clauseValue(kind, j+1, true)
				}
				return rw.clauseValue(kind, e, false)
			}
			continue
		}
		ns := p
		for ns > s && (isWord(src[ns-1]) || src[ns-1] == '-') {
			ns--
		}
		if kind := clauseKind(src[ns:p]); kind != clauseNone {
			if v := rw.clauseValue(kind, p+1, true); v > e {
				return v
			}
		} else if ns == p && p+1 < e && isAlpha(src[p+1]) {
			// (login "u" "x"): a Lisp call names itself inside its
			// parenthesis.
			ne := p + 1
			for ne < e && (isWord(src[ne]) || src[ne] == '-') {
				ne++
			}
			if kind := clauseKind(src[p+1 : ne]); kind != clauseNone && ne == e && e < len(src) && src[e] == ' ' {
				if v := rw.clauseValue(kind, e, true); v > e {
					return v
				}
			}
		}
	}
	return rw.quotedPair(s, e)
}

// quotedPair masks the value of a key quoted, in a subscript or at the end
// of a path that the token src[s:e] is: "wms_password" "x", set
// ::env(DB_PASS) "x", config set shop/mail/password 'x', "relay_password"
// string => "x" (a type's name and an arrow between). A
// quoted value follows the key with no sign of assignment between, which
// the key=value pass reads. It returns the value's end, or e.
func (rw *rewriter) quotedPair(s, e int) int {
	src := rw.src
	ks, ke, j := s, e, e
	switch c := src[e-1]; {
	case c == ')' || c == ']':
		// A subscript: ::env(DB_PASS), opts[api_token].
		open := byte('(')
		if c == ']' {
			open = '['
		}
		k := bytes.LastIndexByte(src[s:e-1], open)
		if k < 0 {
			return e
		}
		ks, ke = s+k+1, e-1
	case s > 0 && e < len(src) && (src[s-1] == '"' || src[s-1] == '\'') && src[e] == src[s-1]:
		j++
	case bytes.IndexByte(src[s:e], '/') >= 0 && !bytes.Contains(src[s:e], []byte("://")):
		// A key's path, named by its last segment: app/db/password 'x'
		// (a URL's segments name pages: the quoted title after a link).
		ks += bytes.LastIndexByte(src[s:e], '/') + 1
	default:
		return e
	}
	v := j
	for v < len(src) && v-j < 4 && src[v] == ' ' {
		v++
	}
	if v > j && v < len(src) && isAlpha(src[v]) {
		// A type's name, then an arrow: string => "x".
		t := v
		for t < len(src) && t-v < 16 && isAlpha(src[t]) {
			t++
		}
		if !bytes.HasPrefix(src[t:], []byte(" => ")) {
			return e
		}
		v = t + 4
	}
	if v == j || v >= len(src) || src[v] != '"' && src[v] != '\'' || rw.keys.classify(src[ks:ke]) != kvSecret {
		return e
	}
	return rw.clauseValue(clausePassword, v, false)
}

// clauseValue reads the arguments from i, after a clause's opening
// parenthesis (closed: they end at its closing one) or after a keyword
// (strings alone, up to anything else), and masks the credential among
// them: the one argument, or the last of two, quoted or shaped like a
// password. It returns the end of what it masked, or i.
func (rw *rewriter) clauseValue(kind, i int, closed bool) int {
	src := rw.src
	var vs, ve, n int
	quoted := false
	j := i
	for ; n <= 2 && j-i < 1024; n++ {
		for j < len(src) && j-i < 1024 && src[j] == ' ' {
			j++
		}
		if j >= len(src) || src[j] == ')' {
			break
		}
		if q := src[j]; q == '\'' || q == '"' {
			k := j + 1
			for k < len(src) && k-j < 256 && src[k] != q && src[k] != '\n' {
				k++
			}
			if k >= len(src) || src[k] != q {
				return i
			}
			vs, ve, quoted, j = j+1, k, true, k+1
		} else {
			if !closed {
				break
			}
			k := j
			for k < len(src) && k-j < 64 && src[k] != ',' && src[k] != ')' && !isSpace(src[k]) && src[k] != '(' && src[k] != '"' && src[k] != '\'' {
				k++
			}
			if k == j || k < len(src) && src[k] == '(' {
				return i // a call yields the value: no literal here
			}
			vs, ve, quoted, j = j, k, false, k
		}
		for j < len(src) && src[j] == ' ' {
			j++
		}
		if j < len(src) && src[j] == ',' {
			j++
		}
	}
	if closed && (j >= len(src) || src[j] != ')') || n == 0 || n > 2 || kind == clausePair && (n != 2 || !quoted) ||
		ve <= vs || notASecret(src, vs, ve) || isPlaceholder(src[vs:]) || !hasAlnum(src[vs:ve]) {
		return i // "-", "*": no value
	}
	if v := src[vs:ve]; !quoted && (n != 1 || !passwordShaped(v) || strings.IndexByte("*&@$%:?#", v[0]) >= 0 || identifier(v)) {
		return i // *NONE, &PWD, newPassword: a value of the product's, a variable
	}
	rw.mask(vs, ve, kSecret)
	return ve
}

// identifier reports whether v is written as a program's variable: a
// small letter first, then letters and '_' (newPassword, raw_pw).
func identifier(v []byte) bool {
	if len(v) == 0 || v[0] < 'a' || v[0] > 'z' {
		return false
	}
	for _, c := range v {
		if !isAlpha(c) && c != '_' {
			return false
		}
	}
	return true
}

// gluedCode reports whether w is a noun glued before "code" that names a
// secret code (Torcode, Zugangscode, alarmcode): the noun before is not one
// of prose, of settings or of public codes (barcode, opcode, unicode,
// zipcode).
func gluedCode(w []byte) bool {
	if len(w) < 7 || !hasSuffixFold(w, "code") {
		return false
	}
	var buf [16]byte
	q := lowerInto(&buf, w[:len(w)-4])
	for _, c := range q {
		if !isAlpha(c) && c < 0x80 {
			return false // PDOException(code: a word before, no noun glued
		}
	}
	return q != nil && !publicCodes[string(q)] && !englishWords[string(q)] && !settingWords[string(q)] && !codeNouns[string(q)]
}

// codeNouns glue before "code" to name a code that is no secret.
var codeNouns = wordSet(`bar uni post zip short key byte geo micro time hash trans source pseudo shell machine
	exit return status error country area http qr op`)

// leaderEnd returns the end of a leader of dots after a label that ends at
// i (Password . . . . :), through the colon after it, or i.
func leaderEnd(src []byte, i int) int {
	j, dots := i, 0
	for j+1 < len(src) && j-i < 128 && src[j] == ' ' {
		for j < len(src) && j-i < 128 && src[j] == ' ' {
			j++
		}
		if j < len(src) && src[j] == '.' {
			dots++
			j++
		}
	}
	if dots < 3 {
		return i
	}
	for j < len(src) && j-i < 132 && (src[j] == ' ' || src[j] == ':') {
		j++
	}
	return j
}

// answerValue masks the answer to a security question after the noun that
// ends at i (and the question's gist in parentheses, an '=' or a colon): a
// quoted literal whole, or a name of one to four capitalised words
// (Lindenallee, Ida Hollow), which no word of prose is. It returns the
// answer's end, or i.
func (rw *rewriter) answerValue(i int) int {
	src := rw.src
	vs := i
	if vs < len(src) && src[vs] == ' ' {
		// security answer (mother's maiden name) = x: the question's
		// gist, in parentheses, comes between.
		if k := bytes.IndexByte(src[vs+1:min(len(src), vs+1+64)], ')'); vs+1 < len(src) && src[vs+1] == '(' && k > 0 {
			vs += k + 2
		}
	}
	// answer to "first pet" set to x, answer 'first pony' = x: the
	// question quoted before the setter that gives its answer.
	if j := vs; j < len(src) {
		if phrasePrefix(src[j:], " to ") {
			j += 3
		}
		if j+1 < len(src) && src[j] == ' ' && (src[j+1] == '"' || src[j+1] == '\'') {
			if k := bytes.IndexByte(src[j+2:min(len(src), j+2+96)], src[j+1]); k > 0 {
				if e := setterEnd(src, j+2+k+1); e > 0 {
					vs = e
				}
			}
		}
	}
	if e := setterEnd(src, vs); e > 0 {
		vs = e // answer recorded as x, answer set to x
	}
	for vs < len(src) && vs-i < 68+96 && (src[vs] == ' ' || src[vs] == '=' || src[vs] == ':') {
		vs++
	}
	if vs == i || vs >= len(src) {
		return i
	}
	if q := src[vs]; q == '"' || q == '\'' {
		k := bytes.IndexByte(src[vs+1:min(len(src), vs+1+maxRef)], q)
		if k <= 0 || notASecret(src, vs+1, vs+1+k) {
			return i
		}
		rw.mask(vs+1, vs+1+k, kSecret)
		return vs + 1 + k
	}
	ve := vs
	for ve < len(src) && ve-vs < 32 && isAlpha(src[ve]) {
		ve++
	}
	if ve-vs < 3 || ve < len(src) && (isWord(src[ve]) || src[ve] >= 0x80) || !isUpper(src[vs]) || !nameLike(src[vs:ve]) || isPlaceholder(src[vs:]) {
		return i
	}
	// A name of several words: each capitalised (Lavinia Bozeman).
	for n := 0; n < 3 && ve+1 < len(src) && src[ve] == ' ' && isUpper(src[ve+1]); n++ {
		we := ve + 1
		for we < len(src) && we-ve < 32 && isAlpha(src[we]) {
			we++
		}
		if we-ve < 4 || we < len(src) && (isWord(src[we]) || src[we] >= 0x80) || !nameLike(src[ve+1:we]) {
			break
		}
		ve = we
	}
	rw.mask(vs, ve, kSecret)
	return ve
}

// answerSetters give a value to what comes before them: set to x,
// recorded as x, changed to x.
var answerSetters = []string{" set to ", " recorded as ", " saved as ", " changed to ", " updated to ", " reset to ", " = ", "=", ": "}

// setterEnd returns the end of the setter of answerSetters at src[i:],
// or 0.
func setterEnd(src []byte, i int) int {
	for _, p := range answerSetters {
		if phrasePrefix(src[min(i, len(src)):], p) {
			return i + len(p)
		}
	}
	return 0
}

func hasAlnum(v []byte) bool {
	return bytes.IndexFunc(v, func(r rune) bool { return r >= 0x80 || isAlnum(byte(r)) }) >= 0
}

func hasLetter(v []byte) bool {
	return bytes.IndexFunc(v, func(r rune) bool { return r < 0x80 && isAlpha(byte(r)) }) >= 0
}

// replyVerbs send a reply to the prompt a script waits for (expect
// "Password:" { send "x\r" }, child.expect('Password:');
// child.sendline('x')).
var replyVerbs = wordSet(`send sendline send_line sendln reply respond`)

// reply masks the quoted reply after a verb of replyVerbs that ends at i,
// without the escaped line break that ends it, and returns its end, or i.
func (rw *rewriter) reply(i int) int {
	src := rw.src
	j := i
	for j < len(src) && j-i < 2 && (src[j] == ' ' || src[j] == '(') {
		j++
	}
	if j >= len(src) || src[j] != '"' && src[j] != '\'' {
		return i
	}
	vs := j + 1
	k := bytes.IndexByte(src[vs:min(len(src), vs+maxRef)], src[j])
	if k <= 0 {
		return i
	}
	ve := vs + k
	for ve-vs >= 2 && src[ve-2] == '\\' && (src[ve-1] == 'r' || src[ve-1] == 'n') {
		ve -= 2
	}
	if ve <= vs || notASecret(src, vs, ve) || isPlaceholder(src[vs:]) {
		return i
	}
	rw.mask(vs, ve, kSecret)
	return vs + k
}

// stateWords say what a credential is or was, not what it holds: after
// its word they are prose (Password: Not Set, password Required).
var stateWords = wordSet(`not set unset none empty blank hidden masked redacted required optional unknown default
	enabled disabled changed reset expired invalid incorrect wrong missing provided supplied stored saved updated same
	new old see below above here there null nil true false yes mismatch match mismatched ok okay denied weak strong
	short long complexity history change changes recovery reuse protected protection based fallback login logon prompt
	entry box input form option options auth authentication`)

// titleWord reports whether w is a word written with a capital first, as
// a name or a title writes it: a capital, small letters, maybe digits
// after them (Castle, No6).
func titleWord(w []byte) bool {
	if len(w) < 2 || w[0] < 'A' || w[0] > 'Z' || w[1] < 'a' || w[1] > 'z' {
		return false
	}
	k := 2
	for k < len(w) && w[k] >= 'a' && w[k] <= 'z' {
		k++
	}
	for k < len(w) && isDigit(w[k]) {
		k++
	}
	return k == len(w)
}

// titlePhraseEnd returns the end of a pass phrase written in capitalised
// words at src[vs:] (Hawthorn Blackthorn Hazel, Ridge Lift 2021, Bar Buoy
// Red 3): two to six words separated by single spaces, a capitalised word
// first and one more at least, the others capitalised words, numbers of
// at most four digits, or "and" or "of" between two of them, none saying
// what the credential is (stateWords) or naming a part of it (setting
// and interface words), running to the clause's end (the text's, a
// line's, or punctuation before a space). A person chose it; its words
// are one value. It returns vs when there is none.
func titlePhraseEnd(src []byte, vs int) int {
	n, titles, e, joined := 0, 0, vs, false
	var buf [16]byte
	for j := vs; n < 6; {
		k := j
		for k < len(src) && isAlnum(src[k]) {
			k++
		}
		w := src[j:k]
		switch lw := lowerInto(&buf, w); {
		case lw == nil || len(w) == 0:
			return vs
		case titleWord(w) && !stateWords[string(lw)] && !(n == 0 && settingWords[string(lw)]) && !interfaceWords[string(lw)] && !grammarWords[string(lw)]:
			titles++
			joined = false
		case len(w) <= 4 && allDigits(w) && n > 0:
			joined = false
		case (string(w) == "and" || string(w) == "of") && n > 0 && !joined:
			joined = true
		default:
			return vs
		}
		n++
		e = k
		if k+1 < len(src) && src[k] == ' ' && isAlnum(src[k+1]) {
			j = k + 1
			continue
		}
		break
	}
	if titles < 2 || joined || !titleWord(src[vs:min(len(src), vs+wordLen(src[vs:]))]) {
		return vs
	}
	if !clauseEndsAt(src, e) {
		return vs
	}
	return e
}

// clauseEndsAt reports whether a clause ends at e: the text or a line
// does, or one or two marks of punctuation before a space or a line's
// end, or an aside in parentheses follows.
func clauseEndsAt(src []byte, e int) bool {
	p := e
	for p < len(src) && p-e < 2 && strings.IndexByte(".,;)\"'", src[p]) >= 0 {
		p++
	}
	switch {
	case p == len(src) || src[p] == '\n' || src[p] == '\r':
		return true
	case p > e:
		return src[p] == ' '
	}
	return src[e] == ' ' && e+1 < len(src) && src[e+1] == '('
}

// wordLen returns the length of the letters and digits that start b.
func wordLen(b []byte) int {
	k := 0
	for k < len(b) && isAlnum(b[k]) {
		k++
	}
	return k
}

// extendTitlePhrases widens each secret that is one capitalised word over
// the capitalised words after it that end its clause (--crew-pass Castle
// Class 4073, passphrase=Shire Horse Jester): the words of a pass phrase
// are one value, wherever a pass masked its first.
func (rw *rewriter) extendTitlePhrases() {
	src := rw.src
	for k := range rw.spans {
		sp := &rw.spans[k]
		if sp.kind != kSecret || sp.end >= len(src) || src[sp.end] != ' ' || !titleWord(src[sp.start:sp.end]) {
			continue
		}
		if e := titlePhraseEnd(src, sp.start); e > sp.end {
			sp.end = e
		}
	}
}

// englishPassword reports whether w, in lower case, is an English word
// for a password: the words after which chosenWordAfter reads one word as
// the password (the words of other languages are followed by their own
// prose: Kennwort falsch).
func englishPassword(w []byte) bool {
	switch string(w) {
	case "password", "passwd", "passphrase", "pw", "pwd":
		return true
	}
	return false
}

// chosenWordAfter masks the word after the space at i when it ends the
// clause and is a password a person chose (chosenWord); it returns its
// end, or i.
func (rw *rewriter) chosenWordAfter(i int) int {
	src := rw.src
	if i+1 >= len(src) || src[i] != ' ' {
		return i
	}
	vs := i + 1
	ve := vs
	for ve < len(src) && ve-vs <= 25 && (isAlpha(src[ve]) || src[ve] == '-') {
		ve++
	}
	if ve == vs || !clauseEndsAt(src, ve) || !chosenWord(src[vs:ve]) {
		return i
	}
	rw.mask(vs, ve, kSecret)
	return ve
}

// joinPrefixes are the words that open a compound of prose with a dash
// (self-service, read-only, one-time): no pair of words a person chose.
var joinPrefixes = wordSet(`self auto non pre post multi read write one two single plain clear case user time per sub semi
	cross opt built out off down half full long short well`)

// chosenWord reports whether v, the one word that ends a clause after a
// password's word, is a password a person chose rather than a word of the
// sentence: five to 24 small letters that are no word of prose, grammar,
// state or setting, nor a role's account, nor a plural of prose
// (password lanternfish, pw quarrystone); or two to four words of small
// letters joined by dashes, none a word of grammar, state, setting or the
// first of a compound, but for a connector between two of them (pw
// heron-quay, embers-and-oak).
func chosenWord(v []byte) bool {
	if k := bytes.IndexByte(v, '-'); k > 0 {
		parts := bytes.Split(v, []byte("-"))
		if len(parts) > 4 || joinPrefixes[string(parts[0])] {
			return false
		}
		for n, p := range parts {
			if n > 0 && n < len(parts)-1 && phraseConnectors[string(p)] {
				continue // embers-and-oak, smores-by-the-lake
			}
			if len(p) > 12 || !isLowerWord(p) || plainWord(p) {
				return false
			}
		}
		return true
	}
	if len(v) < 5 || len(v) > 24 || !isLowerWord(v) || plainWord(v) || proseWord(v) || roleAccount(v) || isPlaceholder(v) {
		return false
	}
	return !(v[len(v)-1] == 's' && proseWord(v[:len(v)-1]))
}

// phraseConnectors join the words of a pass phrase written with dashes
// (embers-and-oak, pennies-from-heaven): between two chosen words, they
// do not make it prose.
var phraseConnectors = wordSet(`and or of from in on at by the with for`)

// plainWord reports whether w, small letters, is a word of grammar,
// state, setting, interface or keeper: what says how a credential is, not
// what it is.
func plainWord(w []byte) bool {
	s := string(w)
	return grammarWords[s] || stateWords[s] || settingWords[s] || interfaceWords[s] || keeperWords[s]
}

// dialGroupsEnd returns the length of the code of a dial or a keypad at
// the start of v, three to six groups of one to three digits joined by
// dashes (7-3-9-1, 34-12-27), or 0. A date with its year in four digits is
// none; after a code's word, one with two digits (22-08-19) is the code.
func dialGroupsEnd(v []byte) int {
	groups, k := 0, 0
	for groups < 6 {
		d := k
		for d < len(v) && d-k <= 3 && isDigit(v[d]) {
			d++
		}
		if d == k || d-k > 3 {
			return 0
		}
		groups++
		k = d
		if k+1 < len(v) && v[k] == '-' && isDigit(v[k+1]) {
			k++
			continue
		}
		break
	}
	if groups < 3 || k < len(v) && (isDigit(v[k]) || v[k] == '-' && k+1 < len(v) && isDigit(v[k+1])) {
		return 0
	}
	return k
}

// codeVerbs are the words before "code" that give a code rather than
// qualify it: with, using, via, enter, entered. A number after them is an
// exit's or an error's code (exited with code 137); a code that mixes
// letters and digits as no error's name does is the secret one.
var codeVerbs = wordSet(`with using via enter entered use by`)

// pathKeyBeforeQuote reports whether the '/' at i starts the last
// segment of a token that a quoted value follows, and the segment names a
// secret as a key does (app/db/requirepass 'x'): quotedPair masks that
// value though no word of the text starts with a literal of the gate.
func pathKeyBeforeQuote(src []byte, i int) bool {
	e := i + 1
	for e < len(src) && !isSpace(src[e]) && src[e] != '/' && src[e] != '"' && src[e] != '\'' {
		e++
	}
	if e == i+1 || e < len(src) && src[e] == '/' {
		return false
	}
	v := e
	for v < len(src) && v-e < 4 && src[v] == ' ' {
		v++
	}
	return v > e && v < len(src) && (src[v] == '"' || src[v] == '\'') && classifyKey(src[i+1:e]) == kvSecret
}

// cardCodes name a payment card's security code.
var cardCodes = wordSet(`cvv cvc cvv2 cvc2 csc`)

// cardCode returns the end of a card's security code after the space at
// i, three or four digits alone, or i.
func cardCode(src []byte, i int) int {
	if i >= len(src) || src[i] != ' ' {
		return i
	}
	n := digitRun(src, i+1)
	if e := i + 1 + n; (n == 3 || n == 4) && (e == len(src) || !isAlnum(src[e]) && src[e] != '-' && src[e] != '/' && src[e] != '.') {
		return e
	}
	return i
}

// colonValue masks the one token after the colon that ends an
// announcement of a password (wifi password for guests: cinephile-popcorn)
// when it ends its clause: what stood after "password:" itself. A word of
// state, a reference, a placeholder or a link (whose tokens the URL pass
// reads) stays, and so does a sentence.
func (rw *rewriter) colonValue(i int) int {
	src := rw.src
	vs := i
	for vs < len(src) && vs-i < 3 && src[vs] == ' ' {
		vs++
	}
	ve := vs
	for ve < len(src) && !isSpace(src[ve]) && src[ve] != '"' && src[ve] != '\'' {
		ve++
	}
	v := trimSentence(src[vs:ve], ".,;")
	e := vs + len(v)
	if vs == i || len(v) < 4 || refEnd(src, vs) > 0 || isPlaceholder(v) || !hasLetter(v) || bytes.Contains(v, []byte("://")) ||
		!(e == len(src) || src[e] == '\n' || src[e] == ',' || src[e] == ';' || src[e] == '.') {
		return i
	}
	var buf [16]byte
	if lw := lowerInto(&buf, v); lw != nil && (plainWord(lw) || proseWord(lw)) {
		return i
	}
	rw.mask(vs, e, kSecret)
	return e
}

// wideGroups reports whether v is a code in two or three groups of three
// or four digits joined by dashes (0918-7724, 401-882-193), and no date:
// a group of four digits first that starts as a year (2026-1204) is one.
func wideGroups(v []byte) bool {
	groups := 0
	for k := 0; k < len(v); {
		n := digitRun(v, k)
		if n < 3 || n > 4 {
			return false
		}
		groups++
		k += n
		if k == len(v) {
			break
		}
		if v[k] != '-' || groups == 3 {
			return false
		}
		k++
	}
	return groups >= 2 && !(len(v) > 4 && v[4] == '-' && centuryStart(v))
}

// listJoin returns the length of what joins a list's last item to the
// one before it at the start of b ("/ ", "and ", "& "), or 0.
func listJoin(b []byte) int {
	for _, j := range []string{"/ ", "and ", "& "} {
		if len(b) > len(j) && string(b[:len(j)]) == j && isDigit(b[len(j)]) {
			return len(j)
		}
	}
	return 0
}

// bareCode reports whether the token after the space (or colon) at i is
// a number of four to twelve digits that ends there: what a code's word
// alone announces as the code itself, not as a code's kind (code 2 of 5
// is a count, code 1.4 a version).
func bareCode(src []byte, i int) bool {
	k := i
	for k < len(src) && k-i < 3 && (src[k] == ' ' || src[k] == ':' || src[k] == '#') {
		k++
	}
	if k == i {
		return false
	}
	n := digitRun(src, k)
	e := k + n
	return n >= 4 && n <= 12 && (e == len(src) || !isAlnum(src[e]) && src[e] != '_' && src[e] != '-' &&
		!((src[e] == '.' || src[e] == ':' || src[e] == '/') && e+1 < len(src) && isDigit(src[e+1])))
}

// outcomeWords say what a process, a request or a connection ended with:
// a code in their clause is its exit's, error's or reply's (exited with
// code 137, request failed with code 5003, socket closed with code 1006).
var outcomeWords = wordSet(`exit exits exited exiting fail fails failed failing failure error errors errored
	return returns returned returning terminate terminates terminated termination finish finishes finished end ends
	ended stop stops stopped complete completes completed completion crash crashes crashed die dies died kill killed
	abort aborts aborted quit quits reject rejects rejected respond responds responded response reply replies replied
	close closes closed closing disconnect disconnected status result results exception panic panicked signal errno
	http https fault faulted abend abended`)

// outcomeBefore reports whether a word of outcomeWords stands in the
// clause before s: back to a sentence's or a clause's mark, at most
// twelve words, or as the label before a colon that opens the clause
// (Error: … code 10061).
func outcomeBefore(src []byte, s int) bool {
	var buf [16]byte
	e := s
	label := false
	for n := 0; n < 12 && e > 0; n++ {
		for e > 0 && (src[e-1] == ' ' || src[e-1] == ',' || src[e-1] == '"' || src[e-1] == '\'') {
			e--
		}
		if e == 0 {
			return false
		}
		if c := src[e-1]; c == ':' {
			e, label = e-1, true // the label's word is the clause's last one read
		} else if c == '.' || c == ';' || c == '!' || c == '?' || c == '\n' || c == '(' || c == '[' {
			return false
		}
		ws := e
		for ws > 0 && isAlnum(src[ws-1]) {
			ws--
		}
		if ws == e {
			return false // a mark no word is made of
		}
		if w := lowerInto(&buf, src[ws:e]); w != nil && outcomeWords[string(w)] {
			return true
		}
		if label {
			return false
		}
		e = ws
	}
	return false
}

// interleavedCode masks the token after the space at i when it is a code
// of six to twelve capitals and digits that alternate more than once
// (FT4LXQ, 9UB20F), not letters then digits as an error's name (ERR42,
// E1234) or an SQL state is (42P01); it returns its end, or i.
func (rw *rewriter) interleavedCode(i int) int {
	src := rw.src
	if i+1 >= len(src) || src[i] != ' ' {
		return i
	}
	vs, ve := i+1, i+1
	for ve < len(src) && ve-vs <= 12 && (isDigit(src[ve]) || isUpper(src[ve])) {
		ve++
	}
	n := ve - vs
	if n < 6 || n > 12 || ve < len(src) && (isAlnum(src[ve]) || src[ve] == '-' || src[ve] == '_') {
		return i
	}
	switches := 0
	for k := vs + 1; k < ve; k++ {
		if isDigit(src[k]) != isDigit(src[k-1]) {
			switches++
		}
	}
	if switches < 2 {
		return i
	}
	rw.mask(vs, ve, kSecret)
	return ve
}

// accountBeforeCredential masks the account after "login" (or, when role
// is set, after a noun of accountNouns) that ends at i when a credential's
// word or a failure follows it (operator login mroom_op2 pin=3141, login
// pbergmann failed 3x), or, after a noun, a session (officer percival.r
// logged in): a name of letters, digits, '_', '.' or '-', no word of prose
// and no role's account. It returns the account's end, or i.
func (rw *rewriter) accountBeforeCredential(i int, role bool) int {
	src := rw.src
	if i+1 >= len(src) || src[i] != ' ' {
		return i
	}
	vs, ve := i+1, i+1
	for ve < len(src) && ve-vs <= 32 && (isAlnum(src[ve]) || src[ve] == '_' || src[ve] == '.' || src[ve] == '-') {
		ve++
	}
	if ve-vs < 3 || ve+1 >= len(src) || src[ve] != ' ' || !isAlpha(src[vs]) {
		return i
	}
	v := src[vs:ve]
	var buf [16]byte
	lv := lowerInto(&buf, v)
	if lv == nil || proseWord(lv) || plainWord(lv) || roleAccount(v) || actorRoles[string(lv)] || isPlaceholder(v) ||
		!nameLike(v) && !actorName(v) {
		return i
	}
	ns := ve + 1
	ne := ns
	for ne < len(src) && isAlpha(src[ne]) {
		ne++
	}
	next := lowerInto(&buf, src[ns:ne])
	if next == nil {
		return i
	}
	if pw, ok := announcedWords[string(next)]; !(ok && (!pw || string(next) == "pin" || string(next) == "passcode")) && string(next) != "failed" &&
		!(role && sessionWords[string(next)]) {
		return i
	}
	if role && !actorAccount(v) {
		return i // account settings, member list: words, not an account
	}
	rw.mask(vs, ve, kUser)
	return ve
}

// accountNouns name the account, or the person by their part, before an
// account's name (account tamsin.r temp password, officer percival.r
// logged in): the name is masked when it is shaped as an account
// (actorAccount) and a credential, a failure or a session follows it.
var accountNouns = wordSet(`account member officer instructor bidder tech technician operator nurse driver agent staff
	cashier clerk guard volunteer`)

// sessionWords start what an account does next in a log: it logs or
// signs in, or is given a temporary credential.
var sessionWords = wordSet(`logged signed temp temporary`)

// valueAfterWord masks the value that the word ending at i announces by
// itself, lw in lower case and last its key's last part, and returns its
// end, or i: a phrase quoted after a phrase's noun, words after a
// password's noun, what a login or an unlocking was done "with", the code
// an opening names, a password after "pass" and an account.
func (rw *rewriter) valueAfterWord(i int, lw, last []byte, toks *[5][2]int) int {
	if string(last) == "phrase" || string(last) == "passphrase" {
		if e := rw.quotedPhraseAfter(i); e > i {
			return e // enrollment phrase "my voice opens the line"
		}
	}
	if passwordNouns[string(last)] {
		if e := rw.wordsPhraseAfter(i); e > i {
			return e // voice password seven seven banana
		}
	}
	if loginFilter.may(lw) && loginVerbs[string(lw)] || unlockVerbs[string(lw)] {
		if e := rw.withCredential(i); e > i {
			return e // unlocked the call-taker console with ember-harbor-14
		}
	}
	if openVerbs[string(lw)] || unlockVerbs[string(lw)] {
		if e := rw.codeOpening(i); e > i {
			return e // the cabinet opens with 3-3-0-9
		}
	}
	if string(lw) == "pass" {
		return rw.passAfterAccount(i, toks) // login c.tregarthen pass x
	}
	return i
}

// passRoles are the accounts named by their role that "pass" follows
// (admin pass x), and passAccounts the words that name the account
// before it (login alice pass x).
var (
	passRoles    = wordSet(`admin administrator root supervisor sup superuser operator manager`)
	passAccounts = wordSet(`login user username account`)
)

// passAfterAccount masks the value after the word "pass" that ends at i,
// when what stands right before the word is an account or an endpoint:
// login c.tregarthen pass x, user ops@example.com pass x, admin pass x,
// ws://10.0.0.5:4455 pass x. Alone, "pass" is a ticket, a step or a
// verb (season pass 2026, pass 2 of 3): the account is what makes it a
// password's. The value is shaped like a password, or it is one word
// that ends its clause after a role (admin pass cutter).
func (rw *rewriter) passAfterAccount(i int, toks *[5][2]int) int {
	src := rw.src
	if i+1 >= len(src) || src[i] != ' ' || toks[1][1] == 0 {
		return i
	}
	vs, ve := i+1, i+1
	for ve < len(src) && !isSpace(src[ve]) && ve-vs <= 64 {
		ve++
	}
	v := trimSentence(src[vs:ve], ".,;:")
	if len(v) < 4 {
		return i
	}
	e := vs + len(v)
	p1 := bytes.TrimRight(src[toks[1][0]:toks[1][1]], ",;:")
	var b1, b2 [16]byte
	l1 := lowerInto(&b1, p1)
	role := l1 != nil && passRoles[string(l1)]
	account := false
	if toks[2][1] > 0 && (nameLike(p1) || actorName(p1)) {
		l2 := lowerInto(&b2, src[toks[2][0]:toks[2][1]])
		account = l2 != nil && (passAccounts[string(l2)] || accountNouns[string(l2)])
	}
	endpoint := bytes.Contains(p1, []byte("://")) || bytes.IndexByte(p1, '@') > 0
	if !role && !account && !endpoint {
		return i
	}
	ends := e == len(src) || !(src[e] == ' ' && e+1 < len(src) && isAlpha(src[e+1]))
	if !passwordShaped(v) && !(role && ends && allLetters(v)) {
		return i
	}
	rw.mask(vs, e, kSecret)
	return e
}

// formerWords name a credential's value before a change, in a parenthesis
// after its new value: changed to 2719 (was 1844), combination 0852 (old
// 7429).
var formerWords = wordSet(`was old previously formerly previous prev`)

// formerValues masks the value a line gives as the one before a secret it
// masks, since a change leaves the old value where the new one was used:
// x (was y), from y to x, old=y new=x. The former value is of the secret's
// kind (digits for a code's digits) and no word of prose.
func (rw *rewriter) formerValues() {
	src := rw.src
	for k, n := 0, len(rw.spans); k < n; k++ {
		sp := rw.spans[k]
		if sp.kind != kSecret {
			continue
		}
		secret := src[sp.start:sp.end]
		if vs, ve := formerAfter(src, sp.end); ve > vs && formerOf(src[vs:ve], secret) {
			rw.spans = append(rw.spans, span{start: vs, end: ve, kind: kSecret})
		}
		if vs, ve := formerBefore(src, sp.start); ve > vs && formerOf(src[vs:ve], secret) {
			rw.spans = append(rw.spans, span{start: vs, end: ve, kind: kSecret})
		}
	}
}

// formerAfter returns the bounds of the value that " (was y)" puts right
// after e, a word of formerWords first; or (e, e).
func formerAfter(src []byte, e int) (int, int) {
	if e+2 >= len(src) || src[e] != ' ' || src[e+1] != '(' {
		return e, e
	}
	ws, we := e+2, e+2
	for we < len(src) && isAlpha(src[we]) {
		we++
	}
	var b [16]byte
	if w := lowerInto(&b, src[ws:we]); w == nil || !formerWords[string(w)] {
		return e, e
	}
	vs := we
	if vs < len(src) && (src[vs] == ':' || src[vs] == '=') {
		vs++
	}
	for vs < len(src) && src[vs] == ' ' {
		vs++
	}
	ve := vs
	for ve < len(src) && ve-vs <= 64 && src[ve] != ')' && !isSpace(src[ve]) {
		ve++
	}
	if ve >= len(src) || src[ve] != ')' {
		return e, e
	}
	return vs, ve
}

// formerBefore returns the bounds of the value that "from y to " or
// "old=y new=" puts right before s; or (s, s).
func formerBefore(src []byte, s int) (int, int) {
	var pair [2]string // the words before the former value and before s
	var sep byte
	switch {
	case s >= 4 && string(src[s-4:s]) == " to ":
		pair, sep = [2]string{"from", "to"}, ' '
		s -= 3
	case s >= 5 && equalFold(src[s-5:s], " new=") || s >= 5 && equalFold(src[s-5:s], " new:"):
		pair, sep = [2]string{"old", "new"}, src[s-1]
		s -= 4
	default:
		return s, s
	}
	ve := s - 1
	vs := ve
	for vs > 0 && vs > ve-64 && !isSpace(src[vs-1]) && src[vs-1] != sep {
		vs--
	}
	if vs == ve || vs < len(pair[0])+1 || src[vs-1] != sep || !equalFold(src[vs-1-len(pair[0]):vs-1], pair[0]) ||
		vs-1-len(pair[0]) > 0 && isAlnum(src[vs-2-len(pair[0])]) {
		return s, s
	}
	return vs, ve
}

// formerOf reports whether v may be the value before secret: digits for
// digits (with the separators a code is written with), else a value that
// is no word of prose, at least four bytes long.
func formerOf(v, secret []byte) bool {
	if len(v) < 3 || len(v) > 64 {
		return false
	}
	if codeDigits(secret) {
		return codeDigits(v)
	}
	return len(v) >= 4 && !allLetters(v) && !proseWord(v)
}

// codeDigits reports whether v is a code's digits: at least one digit,
// and digits, dashes, spaces and '#' only.
func codeDigits(v []byte) bool {
	d := 0
	for _, c := range v {
		switch {
		case isDigit(c):
			d++
		case c == '-' || c == '#' || c == ' ':
		default:
			return false
		}
	}
	return d > 0
}

// unlockVerbs unlock a thing only a credential unlocks: what they are done
// "with" may be a password (openVerbs also open files and sessions).
var unlockVerbs = wordSet(`unlock unlocks unlocked`)

// openVerbs open a lock: what opens it "with" is its code, as what
// unlocks it is (unlockVerbs).
var openVerbs = wordSet(`open opens opened`)

// codeOpening masks the code after " with " at i, the end of a verb of
// opening (the box opens with 6-0-3-1, the gate unlocks with 4471#): a
// code's digits, three to twelve, in groups or with '#', that end their
// clause.
func (rw *rewriter) codeOpening(i int) int {
	src := rw.src
	if !phrasePrefix(src[i:], " with ") {
		return i
	}
	vs := i + len(" with ")
	ve := vs
	for ve < len(src) && ve-vs <= 16 && (isDigit(src[ve]) || src[ve] == '-' || src[ve] == '#') {
		ve++
	}
	for ve > vs && src[ve-1] == '-' {
		ve--
	}
	d := 0
	for _, c := range src[vs:ve] {
		d += btoi(isDigit(c))
	}
	if d < 3 || d > 12 || !clauseEndsAt(src, ve) {
		return i // opened with 1200 rows: a count
	}
	rw.mask(vs, ve, kSecret)
	return ve
}

// passwordNouns name a password itself, in the languages of
// announcedWords: a phrase of words may follow one with nothing between.
var passwordNouns = wordSet(`password passwd passphrase pw pwd passwort kennwort wachtwoord contraseña contrasena senha
	salasana haslo heslo parola`)

// wordsPhraseAfter masks the pass phrase of words after the space at i,
// the end of a password's noun (WLAN-Passwort granite basil fjord falcon,
// voice password seven seven banana): three to twelve words of small
// letters, three or more each, that end the clause, none of them a word
// of grammar, a state, a setting or the interface, nor shaped as a verb's
// or an adverb's form (-ed, -ing, -ly), which a log's own words about a
// password are (password reset requested for, password changed
// successfully); a word of two letters (in, an, de, al) ends the run, so
// that prose, in any language, is no phrase.
func (rw *rewriter) wordsPhraseAfter(i int) int {
	src := rw.src
	if i+1 >= len(src) || src[i] != ' ' {
		return i
	}
	n, k := 0, i
	for n < 12 && k < len(src) && src[k] == ' ' {
		s := k + 1
		e := s
		for e < len(src) && e-s <= 15 && src[e] >= 'a' && src[e] <= 'z' {
			e++
		}
		w := src[s:e] // small letters already
		if e-s < 3 || e < len(src) && isAlnum(src[e]) || plainWord(w) ||
			bytes.HasSuffix(w, []byte("ed")) || bytes.HasSuffix(w, []byte("ing")) || bytes.HasSuffix(w, []byte("ly")) {
			break
		}
		n, k = n+1, e
		if clauseEndsAt(src, k) && (k == len(src) || src[k] != ' ') {
			break
		}
	}
	if n < 3 || !clauseEndsAt(src, k) || k < len(src) && src[k] == ' ' && k+1 < len(src) && src[k+1] != '(' {
		return i
	}
	rw.mask(i+1, k, kSecret)
	return k
}

// itIs reports whether rest, after a clause's comma, goes on with a
// pronoun that names the credential the clause announced (the gate code
// to the pier office, it is 3318#): the announcement goes on to its
// connector.
func itIs(rest []byte) bool {
	return phrasePrefix(rest, " it is ") || phrasePrefix(rest, " it's ") || phrasePrefix(rest, " which is ") ||
		phrasePrefix(rest, " that is ")
}

// dashedWords reports whether v is words of small letters joined by
// dashes, as people choose a password (blue-wave-bus, ember-harbor-14,
// embers-and-oak): two to five parts of three letters or more, a word of
// grammar or a short joining word only inside, digits only last, and
// three parts or a number at least. A compound of prose (up-to-date,
// read-only, well-known) is none.
func dashedWords(v []byte) bool {
	n := bytes.Count(v, []byte("-")) + 1
	if n < 2 || n > 5 || len(v) > 48 {
		return false
	}
	number := false
	for k, p := range bytes.Split(v, []byte("-")) {
		switch {
		case k == n-1 && k > 0 && allDigits(p) && len(p) <= 4:
			number = true
		case k > 0 && k < n-1 && phraseConnectors[string(p)]:
		case !isLowerWord(p) || len(p) > 12 || plainWord(p) || k == 0 && joinPrefixes[string(p)]:
			return false
		}
	}
	return n >= 3 || number
}

// afterPreposition reports whether w, the word before a setting's word, is
// a preposition or a joining word, which makes the setting's word prose
// (PIN on file, password in the file): no setting of the credential.
func afterPreposition(w []byte) bool {
	var buf [16]byte
	lw := lowerInto(&buf, w)
	return lw != nil && (phraseConnectors[string(lw)] || prepositions[string(lw)])
}

// withCredential masks what a verb of logging in or unlocking, ending at
// i, was done "with" a few words later, when it is shaped as a password
// and ends the clause (logged in on the cart laptop with LutBox_2026,
// unlocked the console with ember-harbor-14). A method, a key's name or a
// protocol's version is no password's shape (logged in with SSO,
// connected with TLSv1.3 to the host).
func (rw *rewriter) withCredential(i int) int {
	src := rw.src
	k := spaceWordsAhead(src, i, func(k int) bool { return phrasePrefix(src[k:], " with ") })
	if k < 0 {
		return i
	}
	vs := k + len(" with ")
	ve := vs
	for ve < len(src) && ve-vs <= 64 && !isSpace(src[ve]) {
		ve++
	}
	v := trimSentence(src[vs:ve], ".,;")
	e := vs + len(v)
	if len(v) < 6 || !clauseEndsAt(src, e) || dottedDigits(v) || !(passwordShaped(v) && hasDigit(v) && hasLetter(v) || dashedWords(v)) {
		return i
	}
	rw.mask(vs, e, kSecret)
	return e
}

// spaceWordsAhead returns the first space from i on, at most six words of
// letters, digits and '-' after it, at which at holds; or -1. The words
// that say whose a credential is, or where it was used, stand there
// (the phrase for the night watch is "…", logged in on the cart laptop
// with …).
func spaceWordsAhead(src []byte, i int, at func(k int) bool) int {
	for k, words := i, 0; k < len(src) && src[k] == ' ' && words <= 6; words++ {
		if at(k) {
			return k
		}
		w := k + 1
		for w < len(src) && (isAlnum(src[w]) || src[w] == '-') {
			w++
		}
		if w == k+1 {
			return -1
		}
		k = w
	}
	return -1
}

// dottedDigits reports whether v holds a version's digits: a digit, a dot
// and a digit (TLSv1.3, 2.4.1).
func dottedDigits(v []byte) bool {
	for k := 1; k+1 < len(v); k++ {
		if v[k] == '.' && isDigit(v[k-1]) && isDigit(v[k+1]) {
			return true
		}
	}
	return false
}

// quotedNetworkBefore reports whether a quoted name, after a wireless
// network's word, stands right before s (wifi "RV-Skarv-Sci" key x): the
// word at s is then the named network's.
func quotedNetworkBefore(src []byte, s int) bool {
	if s < 3 || src[s-1] != ' ' || src[s-2] != '"' && src[s-2] != '\'' {
		return false
	}
	q := bytes.LastIndexByte(src[max(0, s-66):s-2], src[s-2])
	if q < 0 {
		return false
	}
	q += max(0, s-66)
	e := q
	for e > 0 && src[e-1] == ' ' {
		e--
	}
	b := e
	for b > 0 && isAlnum(src[b-1]) {
		b--
	}
	var buf [16]byte
	w := lowerInto(&buf, src[b:e])
	return e > b && e < q && w != nil && networkWords[string(w)]
}

// mixedWithMark reports whether v, eight bytes or more, mixes capitals,
// small letters and a mark that is no word's (StandbyRolling!): a
// password's shape without a digit. A bracket, a slash or a dot makes it
// a link's or a path's.
func mixedWithMark(v []byte) bool {
	var up, lo, mark bool
	for _, c := range v {
		switch {
		case c >= 'A' && c <= 'Z':
			up = true
		case c >= 'a' && c <= 'z':
			lo = true
		case strings.IndexByte("!@#$%^&*?+=~_", c) >= 0:
			mark = true
		case !isDigit(c) && c != '-':
			return false // a link's or a path's marks: ] ( / .
		}
	}
	return len(v) >= 8 && up && lo && mark
}

// quotedPhraseAfter masks the quoted words that follow a phrase's noun
// ending at i, right after it or at the end of the few words that say
// whose it is (confirmation phrase "harbour lantern seven", the phrase for
// the night watch is "blue heron over the breakwater"): two to twelve
// words of letters, the first in small letters, closed by the same
// quote. Quoted, a phrase may read as a sentence; a capitalised name of a
// status (reason phrase "Not Found") is none.
func (rw *rewriter) quotedPhraseAfter(i int) int {
	src := rw.src
	k := spaceWordsAhead(src, i, func(k int) bool { return k+1 < len(src) && (src[k+1] == '"' || src[k+1] == '\'') })
	if k < 0 {
		return i
	}
	q := src[k+1]
	vs := k + 2
	ve := vs
	n := 1
	for ve < len(src) && ve-vs <= 96 && src[ve] != q {
		c := src[ve]
		if c == ' ' {
			n++
		} else if !isAlpha(c) && c != '\'' && c != '-' {
			return i
		}
		ve++
	}
	if ve >= len(src) || src[ve] != q || n < 2 || n > 12 || src[vs] < 'a' || src[vs] > 'z' {
		return i
	}
	rw.mask(vs, ve, kSecret)
	return ve
}
