package redact

import (
	"bytes"
	"strings"
)

// referenceSuffixes end the name of a setting that says where a credential
// is kept, not what it is (password.ref, password_file, --password-stdin).
var referenceSuffixes = wordSet(`ref reference file path env stdin source command cmd`)

// credentialsReferenced reports whether every credential src names is
// kept elsewhere, and it names at least one: a setting named for a
// credential whose value is a reference (${DB_PASSWORD}, env:X, a vault
// path, a YAML tag), a mask or a placeholder, or one whose name says where
// the credential is read from (--password-stdin, password_file). The
// account beside such credentials is a configuration's account name and
// half of no credential the line exposes: it is kept. A credential word
// followed by anything else (a literal, a word) answers no.
func credentialsReferenced(src []byte, keys *keyCache) bool {
	if !referenceHint(src) {
		return false // no reference, mask or placeholder, and no setting that names where one is read
	}
	var wbuf [65]byte
	found := false
	for i := 0; i < len(src); i++ {
		if !isKeyByte(src[i]) || i > 0 && isKeyByte(src[i-1]) {
			continue
		}
		e := i
		for e < len(src) && e-i <= 64 && isKeyByte(src[e]) {
			e++
		}
		if e-i > 64 {
			i = e
			continue
		}
		ws, we := i, e
		i = e
		if !mayHoldGateLiteral(src[ws:we]) && !(we-ws == 3 && equalFold(src[ws:we], "pin")) {
			continue // no credential's word in it: one look at its letter pairs
		}
		w := wbuf[:0]
		for _, c := range src[ws:we] {
			w = append(w, lower(c))
		}
		if !holdsGateLiteral(w) && !pinWord(w) {
			continue
		}
		if k := bytes.LastIndexAny(w, "._-"); k > 0 && referenceSuffixes[string(w[k+1:])] {
			if p := bytes.TrimRight(w[:k], "._-"); len(p) > 0 && keys.classify(lastPart(p)) == kvSecret {
				found = true // password.ref=env:X, --password-stdin
				continue
			}
		}
		if !credentialWord(w, keys) && !pinWord(w) || ws > 0 && (src[ws-1] == '{' || src[ws-1] == '$' || src[ws-1] == ':' && ws > 1 && src[ws-2] == 'v') {
			continue // ${DB_PASSWORD}, env:DB_PASSWORD: a reference's own name
		}
		vs := we
		if vs < len(src) && (src[vs] == '"' || src[vs] == '\'') {
			vs++ // "password": …
		}
		sep := false
		for vs < len(src) && (src[vs] == ' ' || src[vs] == '\t' || src[vs] == '=' || src[vs] == ':') && vs-we < 8 {
			sep = sep || src[vs] != ' ' && src[vs] != '\t'
			vs++
		}
		if vs < len(src) && (src[vs] == '"' || src[vs] == '\'') {
			vs++
		}
		if vs >= len(src) || vs == we {
			continue
		}
		ve := valueEnd(src, vs)
		switch {
		case src[vs] == '!' && ve > vs+1 && isAlpha(src[vs+1]):
			found = true // !vault path, !secret name: a YAML tag
		case refEnd(src, vs) > 0 || isPlaceholder(src[vs:]) || src[vs] == '<' && bytes.IndexByte(src[vs:min(len(src), vs+24)], '>') > 0:
			found = true
		case ve > vs && maskValue(src[vs:ve]):
			found = found || sep || ve-vs >= 3 && src[vs] == '*'
		default:
			// A literal (password=hunter2), or a word after the credential's
			// word (password reset requested): prose, or the credential.
			return false
		}
		i = max(i, ve)
	}
	return found
}

// pinWord reports whether the lower-case w is "pin" or "passcode": the
// code's words that credentialWord leaves to the passes that read a code.
func pinWord(w []byte) bool { return string(w) == "pin" || string(w) == "passcode" }

// referenceHint reports whether src holds what a credential kept
// elsewhere is written with: a byte that starts a reference, a mask or a
// YAML tag ($ { % * !), a placeholder in angle brackets (not an e-mail
// address there), or a word of referenceSuffixes after '.', '_' or '-'.
// It is the one look credentialsReferenced takes at most texts.
func referenceHint(src []byte) bool {
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '$', '{', '%', '*', '!':
			return true
		case '<':
			if k := bytes.IndexByte(src[i+1:min(len(src), i+42)], '>'); k > 0 && isAlpha(src[i+1]) && bytes.IndexByte(src[i+1:i+1+k], '@') < 0 {
				return true
			}
			continue
		case '.', '_', '-':
		default:
			continue
		}
		if i+3 >= len(src) {
			continue
		}
		switch lower(src[i+1]) {
		case 'r', 'f', 'p', 'e', 's', 'c':
		default:
			continue
		}
		e := i + 1
		for e < len(src) && e-i <= 10 && isAlpha(src[e]) {
			e++
		}
		var buf [16]byte
		if w := lowerInto(&buf, src[i+1:e]); w != nil && referenceSuffixes[string(w)] && (e == len(src) || !isWord(src[e])) {
			return true
		}
	}
	return false
}

// mayHoldGateLiteral reports whether w, in any case, may hold a literal of
// gateTable: a pair of its bytes starts one, read as gatePositions reads
// them, or it holds a byte of another script.
func mayHoldGateLiteral(w []byte) bool {
	pairs := &gateTable.pairs
	for k := 0; k+1 < len(w); k++ {
		if w[k] >= 0x80 || pairs[w[k]]&letterBit[w[k+1]] != 0 {
			return true
		}
	}
	return len(w) > 0 && w[len(w)-1] >= 0x80
}

// lastPart returns the last part of a dotted, dashed or underscored name.
func lastPart(w []byte) []byte {
	if k := bytes.LastIndexAny(w, "._-"); k >= 0 {
		return w[k+1:]
	}
	return w
}

// exposedRoleAccounts masks, in a text that exposes a secret, the
// accounts a pass kept for being named for a role (svc_inventory,
// reader, nw_builder): beside a password in the clear, the account is
// the other half of the credential. The accounts every installation has (root, admin,
// roleAccounts) stay: they are public, as a default port is.
func (rw *rewriter) exposedRoleAccounts() {
	for _, r := range rw.roles {
		rw.spans = append(rw.spans, span{start: r[0], end: r[1], kind: kUser})
	}
	rw.exposedHandles()
}

// exposedHandles masks, in a text that exposes a secret, the accounts its
// people are named by: a handle of an initial or a short prefix, a dot
// and a family name (witness j.marchetti, officer=ofc.pemberton4417),
// anywhere; a name with a number after a word that introduces an account
// (for counter2, changed by cbellweather4, login cucumb1). Beside a
// credential in the clear, who uses it is its other half.
func (rw *rewriter) exposedHandles() {
	src := rw.src
	handleByte := func(c byte) bool { return isAlnum(c) || c == '.' || c == '_' || c == '-' }
	for i := 0; i < len(src); {
		// A handle holds a dot or a digit: the scan jumps to the next one
		// and reads the token around it.
		k := i
		for k < len(src) && src[k] != '.' && !isDigit(src[k]) {
			k++
		}
		if k == len(src) {
			return
		}
		s, e := k, k
		for s > i && handleByte(src[s-1]) {
			s--
		}
		for e < len(src) && handleByte(src[e]) {
			e++
		}
		i = e + 1
		for e > s && src[e-1] == '.' {
			e-- // the sentence's full stop
		}
		if e-s < 4 || !isAlnum(src[s]) || s > 0 && strings.IndexByte("./\\@:-_", src[s-1]) >= 0 ||
			e < len(src) && strings.IndexByte("(@:/\\=", src[e]) >= 0 ||
			e+1 < len(src) && src[e] == ' ' && (src[e+1] == '=' || src[e+1] == ':') {
			continue
		}
		// A handle inside a range masked already joins it (write).
		if v := src[s:e]; dottedHandle(v) || numberedHandle(v) && introducesAccount(src, s) {
			rw.spans = append(rw.spans, span{start: s, end: e, kind: kUser})
		}
	}
}

// dottedHandle reports whether v is a person's handle: an initial, a dot
// and a family name of four letters or more that is no word of prose
// (j.marchetti, s.okafor); a given name of four letters or more, a dot
// and more letters (gwyn.roberts, priya.cast); or a prefix of up to four
// letters, a dot, a family name and digits (ofc.pemberton4417). A
// logger's or a setting's name (sms.gateway, db.host) has none of these
// shapes, unless its first part is a given name.
func dottedHandle(v []byte) bool {
	d := bytes.IndexByte(v, '.')
	if d < 1 || !allLetters(v[:d]) || !isLowerName(v[:d]) {
		return false
	}
	rest := v[d+1:]
	k := 0
	for k < len(rest) && rest[k] >= 'a' && rest[k] <= 'z' {
		k++
	}
	if k < 1 || k > 20 || k < len(rest) && !allDigits(rest[k:]) {
		return false
	}
	switch {
	case d == 1:
		return k >= 4 && !proseWord(rest[:k])
	case d <= 12 && capitalisedGiven(v[:d]):
		return true
	}
	return d <= 4 && k >= 4 && k < len(rest) && !proseWord(rest[:k])
}

// capitalisedGiven reports whether w, in lower case, is a given name of
// givenNameList once capitalised.
func capitalisedGiven(w []byte) bool {
	var buf [16]byte
	if len(w) < 4 || len(w) > len(buf) {
		return false
	}
	copy(buf[:], w)
	buf[0] -= 'a' - 'A'
	return givenName(buf[:len(w)])
}

// numberedHandle reports whether v is three to sixteen lower-case letters
// and one to four digits that read as an account (counter2, harbor1): not
// a word of prose with a count.
func numberedHandle(v []byte) bool {
	k := 0
	for k < len(v) && v[k] >= 'a' && v[k] <= 'z' {
		k++
	}
	return k >= 3 && k <= 16 && len(v)-k >= 1 && len(v)-k <= 4 && allDigits(v[k:])
}

// accountIntroducers name the account after them: for x, by x, login x,
// admin: x.
var accountIntroducers = wordSet(`for by login user admin operator as account`)

// introducesAccount reports whether the word before s, past one space or
// a colon and a space, introduces an account.
func introducesAccount(src []byte, s int) bool {
	k := s
	if k > 0 && src[k-1] == ' ' {
		k--
	}
	if k > 0 && src[k-1] == ':' {
		k--
	}
	if k == s {
		return false
	}
	ws := k
	for ws > 0 && isAlpha(src[ws-1]) {
		ws--
	}
	var buf [16]byte
	w := lowerInto(&buf, src[ws:k])
	return w != nil && accountIntroducers[string(w)]
}

// keptRole records src[s:e], an account kept for being named for a role,
// unless every installation has it (roleAccounts).
func (rw *rewriter) keptRole(s, e int) {
	v := rw.src[s:e]
	if lv := lowerASCII(v); lv != nil && roleAccounts[string(lv)] {
		return
	}
	rw.roles = append(rw.roles, [2]int{s, e})
}

// keepConfigAccounts drops the accounts masked in a key's value (user=x,
// "user": "x", User Id=x, user 'x') when every credential of the text is
// kept elsewhere (credentialsReferenced): the configuration's account of
// a credential the text does not hold. afterPasses calls it only when no
// secret of the text is masked (a credential in the clear, or another
// secret: the account is half of what the text exposes). An account
// given to a flag (--username jdoe) is the person who logs in, and stays
// masked.
func (rw *rewriter) keepConfigAccounts() {
	users := false
	for _, sp := range rw.spans {
		users = users || sp.kind == kUser
	}
	if !users {
		return
	}
	n := 0
	for _, sp := range rw.spans {
		if sp.kind == kUser && rw.accountKeyBefore(sp.start) && rw.referenced() {
			continue
		}
		rw.spans[n] = sp
		n++
	}
	rw.spans = rw.spans[:n]
}

// accountKeyBefore reports whether a key that names an account (user,
// username, login, uid, User Id), not written as a flag, ends right before
// the value at s, after its '=', ':', quote or space.
func (rw *rewriter) accountKeyBefore(s int) bool {
	src := rw.src
	k := s
	for k > 0 && s-k < 4 && (src[k-1] == ' ' || src[k-1] == '=' || src[k-1] == ':' || src[k-1] == '"' || src[k-1] == '\'') {
		k--
	}
	if k == s {
		return false
	}
	e := k
	for k > 0 && e-k < 32 && (isKeyByte(src[k-1]) || src[k-1] == ' ' && e-k == 2 && k >= 5 && equalFold(src[k-5:k-1], "user")) {
		k-- // User Id
	}
	if k == e || k > 0 && src[k-1] == '-' {
		return false
	}
	var buf [32]byte
	w := buf[:0]
	for _, c := range src[k:e] {
		if c != ' ' {
			w = append(w, lower(c))
		}
	}
	return rw.keys.classify(w) == kvUser
}
