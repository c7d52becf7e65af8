package redact

import (
	"bytes"
	"maps"
	"slices"
	"strings"
)

// Credential-bearing positions that hold no '=' or ':' after the name: a
// keyword or directive and its value (password X, requirepass X,
// IDENTIFIED BY 'X', <password>X</password>), netrc's login and password,
// user/password@database (sqlplus, Oracle JDBC), pgpass's five fields,
// "process 1234" and cloud account ids named by the words before them. One
// scan looks at the start of each word; a word costs a table lookup unless
// its first letter starts one of the words below.

// specialWords are the words this pass reads besides the names of
// credentials.
var specialWords = []string{"process", "auth", "basicauth", "credentials", "isql", "http-basic", "add_user", "adduser", "change_password",
	"set_password", "net", "htpasswd", "by", "login", "logon", "signin", "superuser", "account", "subscription", "subscriptions",
	"tenant", "project", "directory", "register", "user-create", "useradd", "pw"}

// The hashers' other names (mkpasswd, slappasswd, hash-password,
// mosquitto_passwd, passwd) hold "pa", which the credentials' triggers
// start with: a word is read when any two letters of it start a trigger,
// and a trigger of its own first letters would let more words of prose
// through (has, more, slow).

// humanSecret reports whether the key names a secret that a person
// chose (a password, a pass phrase, a PIN, an answer) by one of its words,
// rather than a generated one (a token, a key, a salt), whose name is
// prose more often: its value is what it is, words and spaces included.
func humanSecret(key []byte) bool {
	var words [16][2]int
	n := keyWords(&words, key)
	for k := range n {
		w := lowerASCII(key[words[k][0]:words[k][1]])
		if humanWords[string(w)] || glued(w) && !bytes.HasSuffix(w, []byte("token")) && !bytes.HasSuffix(w, []byte("secret")) && !bytes.HasSuffix(w, []byte("nonce")) {
			return true
		}
	}
	return false
}

// humanWords are the words of humanSecret, in the languages of
// credentialWords.
var humanWords = wordSet(`password passwd pwd pw pass passphrase passcode pin mnemonic phrase words answer answers response code codes
	kennwort passwort passe contrasena contraseña contrasenya clave senha wachtwoord losenord lösenord salasana
	haslo hasło heslo jelszo jelszó passord adgangskode sifre şifre parol пароль 密码 パスワード 비밀번호`)

// generatedKey reports whether the key names generated material (a key, a
// token, a salt), which no sentence is: by its last word that names
// either kind (private_key_passphrase is a person's).
func generatedKey(key []byte) bool {
	var words [16][2]int
	n := keyWords(&words, key)
	gen := false
	for k := range n {
		w := lowerASCII(key[words[k][0]:words[k][1]])
		if generatedWords[string(w)] {
			gen = true
		} else if humanWords[string(w)] {
			gen = false
		}
	}
	return gen
}

var generatedWords = wordSet(`key keys token tokens salt nonce signature sig apikey hmac cookie session sessionid csrf xsrf`)

// sentence reports whether v is words of lower-case letters and spaces,
// two or more: prose (put your unique phrase here), not a generated
// secret.
func sentence(v []byte) bool {
	sp := 0
	for _, c := range v {
		if c == ' ' {
			sp++
		} else if c < 'a' || c > 'z' {
			return false
		}
	}
	return sp > 0
}

// credentialWord reports whether the lower-case word w, used as a keyword
// before a value, names a credential: the key rules say so and it is not
// one of the names that are prose or ids more often than keywords.
func credentialWord(w []byte, keys *keyCache) bool {
	switch string(w) {
	case "key", "auth", "credentials": // read as a directive, or an account pair
		return false
	}
	if len(w) > 4 && w[0] == 'n' && w[1] == 'o' && keys.classify(w[2:]) == kvSecret {
		return false // nopass, nopassword: the absence of one, a flag
	}
	if k := bytes.LastIndexByte(w, '-'); k > 0 && k+1 < len(w) && allLetters(w[k+1:]) && keys.classify(w[k+1:]) != kvSecret {
		// A word joined to the credential word by a hyphen makes a
		// compound that names something else (password-protected,
		// token-based, secret-free): db-password names a password.
		return false
	}
	return !refusedKeyword[string(w)] && keys.classify(w) == kvSecret
}

func redactPositions(rw *rewriter) {
	src := rw.src
	netrc := -2       // unknown; then -1 (no netrc entry) or the offset of "machine"/"default"
	var wbuf [65]byte // the word, in lower case
	// A pgpass line has four colons: without them, pgpass is not called.
	colons := bytes.Count(src, []byte(":")) >= 4
	tpairs := &triggerTable.pairs // loaded once, not at every byte of a word
	for i := 0; i < len(src); i++ {
		c := src[i]
		if i > 0 && (isWord(src[i-1]) || src[i-1] == '-') || !isKeyByte(c) && c != '*' && c != '<' {
			continue
		}
		if i > 0 && (src[i-1] == '.' || src[i-1] == '/' || src[i-1] == '\\' || src[i-1] == '!') {
			// A word inside a path or a dotted name is no keyword, nor
			// is a YAML tag (!secret name: a reference to a secret) or
			// a negated name, but /subscriptions/<id> names an account.
			e := i
			for e < len(src) && e-i <= 16 && isWord(src[e]) {
				e++
			}
			if src[i-1] == '/' && e < len(src) && src[e] == '/' {
				if n := cloudPath(rw, i, e); n > 0 {
					i = n - 1
					continue
				}
			}
			i = max(e, i+1) - 1
			continue
		}
		if c == '*' {
			if !colons {
				continue
			}
			if n := pgpass(rw, i); n > 0 {
				i = n - 1
			}
			continue
		}
		if c == '<' {
			if isPlaceholder(src[i:]) {
				continue
			}
			if e := refEnd(src, i); e > i && bytes.IndexByte(src[i:e], ' ') > 0 {
				i = e - 1 // <from secret store>: a placeholder's words are no keywords
				continue
			}
			if e := xmlSecret(rw, i); e > 0 {
				i = e - 1
			}
			continue
		}
		// The word: letters, digits, '_', '-', '.'; trig is set when it
		// holds the first two letters of a credential trigger.
		e := i
		var trig uint32
		for e < len(src) && e-i <= 64 && isKeyByte(src[e]) {
			if e+1 < len(src) {
				trig |= tpairs[src[e]] & letterBit[src[e+1]]
			}
			if src[e] >= 0x80 {
				trig = 1
			}
			e++
		}
		if e == i || e-i > 64 {
			i = e
			continue
		}
		if e < len(src) && (src[e] == ':' || src[e] == '/' || src[e] == '@') {
			if n := userPassAt(rw, i, e); n > 0 {
				i = n - 1
				continue
			}
			if src[e] == ':' && colons {
				if n := pgpass(rw, i); n > 0 {
					i = n - 1
					continue
				}
			}
			if src[e] == '/' {
				if n := cloudPath(rw, i, e); n > 0 {
					i = n - 1
					continue
				}
			}
		}
		if isDigit(c) || c == '*' || e >= len(src) || src[e] != ' ' && src[e] != '\t' || !isAlpha(c) || trig == 0 || src[e-1] == '.' {
			i = e - 1
			continue
		}
		w := wbuf[:e-i]
		for k, b := range src[i:e] {
			w[k] = lower(b)
		}
		if netrc == -2 && (string(w) == "login" || string(w) == "account" || string(w) == "password" || string(w) == "passwd") {
			netrc = netrcStart(src) // looked for once, and only where it counts
		}
		vs := e
		for vs < len(src) && vs-e < 3 && (src[vs] == ' ' || src[vs] == '\t') {
			vs++
		}
		var n int
		switch {
		case string(w) == "process":
			n = processID(rw, vs)
		case w[0] == 'n' && string(w) == "net":
			if phrasePrefix(src[vs:], "user ") {
				n = accountArgs(rw, vs+5, true)
			}
		case netrc >= 0 && i > netrc && (string(w) == "login" || string(w) == "account"):
			n = netrcValue(rw, vs, User)
		case netrc >= 0 && i > netrc && (string(w) == "password" || string(w) == "passwd"):
			n = netrcValue(rw, vs, Secret)
		case string(w) == "by" && identifiedBefore(src, i):
			n = quotedSecret(rw, vs)
		case string(w) == "password" && phrasePrefix(src[vs:], "for "):
			// SET PASSWORD FOR 'bob'@'%' = 'x'
			if k := bytes.Index(src[vs:min(len(src), vs+96)], []byte("= ")); k >= 0 {
				n = quotedSecret(rw, vs+k+2)
			}
		case afterFlag(src, i):
			// -e DB_PASSWORD: the flag's value, a name
		case string(w) == "subscription" || string(w) == "tenant" || string(w) == "account" || string(w) == "project" ||
			string(w) == "directory" || string(w) == "subscriptions":
			n = cloudID(rw, string(w), vs)
		case hasherOf(src, i, w) != nil:
			n = hasherArgs(rw, vs, hasherOf(src, i, w))
		case isAccountVerb(w) && !(netrc >= 0 && i > netrc):
			if holdsGateLiteral(w) && credentialWord(w, rw.keys) {
				n = keywordValue(rw, w, vs) // password X
			} else if string(w) == "auth" {
				n = accountPair(rw, vs) // stats auth admin:X
			}
			if n == 0 {
				n = accountArgs(rw, vs, accountVerbs[string(verbOf(w))])
			}
			if n == 0 && string(w) == "auth" && passwordShaped(src[vs:valueWord(src, vs)]) {
				n = keywordValue(rw, w, vs) // smtp auth X: a word shaped like a password
			}
		case string(w) == "community" && !rw.namesSNMP():
			// MySQL Community Server, the community package: a
			// community is SNMP's password only where SNMP is named.
		case holdsGateLiteral(w) && (credentialWord(w, rw.keys) || string(w) == "key" && directive(src, i)):
			n = keywordValue(rw, w, vs)
		case string(w) == "auth" || string(w) == "basicauth" || string(w) == "credentials":
			n = accountPair(rw, vs)
		}
		if n > 0 {
			i = n - 1
		} else {
			i = e - 1
		}
	}
}

// isAccountVerb reports whether the command word w is one of accountVerbs.
func isAccountVerb(w []byte) bool {
	_, ok := accountVerbs[string(verbOf(w))]
	return ok
}

// verbOf returns the verb of a command word: http-basic.REPO is
// http-basic's. Only that verb names something after a dot: net.Conn is a
// qualified name in prose, not the net command.
func verbOf(w []byte) []byte {
	if d := bytes.IndexByte(w, '.'); d > 0 && string(w[:d]) == "http-basic" {
		return w[:d]
	}
	return w
}

// netrcStart returns the offset of the first netrc entry of src ("machine
// HOST", "default login"), or -1.
func netrcStart(src []byte) int {
	if k := indexWord(src, "machine "); k >= 0 {
		return k
	}
	if k := indexWord(src, "default login "); k >= 0 {
		return k
	}
	return -1
}

// indexWord returns the index of the lower-case literal lit in src where
// it starts a word, ignoring case, or -1.
func indexWord(src []byte, lit string) int {
	for off := 0; off < len(src); {
		k := indexFold(src[off:], lit)
		if k < 0 {
			return -1
		}
		k += off
		if k == 0 || !isWord(src[k-1]) {
			return k
		}
		off = k + 1
	}
	return -1
}

// valueWord returns the end of the unquoted value at vs: up to whitespace
// or a quote.
func valueWord(src []byte, vs int) int {
	e := vs
	for e < len(src) && e-vs < 256 && !isSpace(src[e]) && src[e] != '"' && src[e] != '\'' && src[e] != '<' {
		if escapedBreak(src, e) {
			break // an escaped line break or tab
		}
		e++
	}
	return e
}

func netrcValue(rw *rewriter, vs int, repl string) int {
	src := rw.src
	if vs >= len(src) || isPlaceholder(src[vs:]) {
		return 0
	}
	q := byte(0)
	if src[vs] == '"' || src[vs] == '\'' {
		q = src[vs]
		vs++
	}
	ve := valueWord(src, vs)
	if q != 0 {
		ve = vs
		for ve < len(src) && ve-vs < 256 && src[ve] != q {
			ve++
		}
	}
	if ve <= vs || notASecret(src, vs, ve) {
		return 0
	}
	rw.mask(vs, ve, kindOf(repl))
	return ve
}

// directive reports whether the word at i starts its line, after
// indentation: a configuration directive (key X under a server's block),
// where a word that is prose elsewhere names what follows it.
func directive(src []byte, i int) bool {
	for i > 0 && (src[i-1] == ' ' || src[i-1] == '\t') {
		i--
	}
	return i == 0 || src[i-1] == '\n'
}

// keywordValue redacts the value after a keyword that names a credential,
// when the value is one: quoted after a password keyword, or a word shaped
// like a credential (a digit, punctuation or mixed case), at least six
// bytes long, that is not an English word, a reference, a mask or a path.
func keywordValue(rw *rewriter, w []byte, vs int) int {
	src := rw.src
	if vs >= len(src) || isPlaceholder(src[vs:]) {
		return 0
	}
	if q := src[vs]; q == '\'' || q == '"' || q == '`' {
		ve := vs + 1
		for ve < len(src) && ve-vs < 256 && src[ve] != q && src[ve] != '\n' {
			ve++
		}
		if ve >= len(src) || src[ve] != q || ve == vs+1 || notASecret(src, vs+1, ve) {
			return 0
		}
		if v := src[vs+1 : ve]; !humanSecret(w) && !(credentialShaped(v) && credentialLike(v) && len(v) >= 8 && bytes.IndexByte(v, ' ') < 0) {
			return 0
		}
		rw.mask(vs+1, ve, kSecret)
		return ve + 1
	}
	if src[vs] == '-' || startsAssignment(src[vs:]) {
		return 0 // a flag or the next assignment, not a value
	}
	if hasPrefixFold(src[vs:], "key ") && bytes.HasSuffix(w, []byte("key")) {
		return keywordValue(rw, w, vs+4) // pre-shared-key key X: the noun again
	}
	// A sentence's punctuation after the value is not part of it.
	v := trimSentence(src[vs:valueWord(src, vs)], ".,;")
	ve := vs + len(v)
	if linkText(v) {
		return 0 // [Token Passthrough](#token-passthrough): a link's title
	}
	if passDirectives[string(w)] && len(v) > 0 && !notASecret(src, vs, ve) && !directiveProse(v) {
		rw.mask(vs, ve, kSecret) // no prose says requirepass: its value is what it is
		return ve
	}
	if len(v) < 6 || !credentialLike(v) || notASecret(src, vs, ve) || v[len(v)-1] == ':' || bytes.Contains(v, []byte("://")) {
		return 0 // a URL says where something is (community repository](https://…)), not what
	}
	if lw := lowerASCII(v); lw != nil && englishWords[string(lw)] {
		return 0
	}
	if allDigits(v) && len(v) < 8 {
		return 0
	}
	rw.mask(vs, ve, kSecret)
	return ve
}

// passDirectives are the credential words that are only ever the name of
// a server's password directive, never a word of prose: whatever follows
// them is the password, a plain word included (requirepass kettlebell).
var passDirectives = wordSet(`requirepass masterauth masterpassword bindpw rootpw storepass keypass srcstorepass deststorepass keystorepass`)

// directiveProse reports whether v, after a directive's name, is a word
// of the sentence that names the directive (requirepass is off, the
// requirepass option) rather than its value: a function word, a word of
// two letters or less, or a word of settings and states.
func directiveProse(v []byte) bool {
	lw := lowerASCII(v)
	return len(v) <= 2 || lw != nil && (grammarWords[string(lw)] || settingWords[string(lw)] || directiveWords[string(lw)])
}

// directiveWords name a directive or its state in prose.
var directiveWords = wordSet(`option options directive directives setting settings parameter parameters value values flag flags
	config configuration line entry off none unset empty set`)

// accountPair masks the account:password pair among the two words at vs,
// after a word that announces credentials (stats auth admin:s3cret, basic
// auth user ops:s3cret). The password must not be a number (a port) or a
// path.
func accountPair(rw *rewriter, vs int) int {
	src := rw.src
	for s, k := vs, 0; s < len(src) && k < 2; k++ {
		e := valueWord(src, s)
		if c := bytes.IndexByte(src[s:e], ':'); c > 0 && s+c+1 < e {
			if v := src[s+c+1 : e]; accountName(src[s:s+c]) && !allDigits(v) && v[0] != '/' && !notASecret(src, s+c+1, e) {
				rw.mask(s, s+c, kUser)
				rw.mask(s+c+1, e, kSecret)
				return e
			}
		}
		for s = e; s < len(src) && src[s] == ' '; s++ {
		}
	}
	return 0
}

// quotedSecret redacts the quoted literal at vs (IDENTIFIED BY 'x').
func quotedSecret(rw *rewriter, vs int) int {
	src := rw.src
	if vs >= len(src) || (src[vs] != '\'' && src[vs] != '"') {
		return 0
	}
	q := src[vs]
	ve := vs + 1
	for ve < len(src) && ve-vs < 256 && src[ve] != q {
		ve++
	}
	if ve >= len(src) || ve == vs+1 || notASecret(src, vs+1, ve) {
		return 0
	}
	rw.mask(vs+1, ve, kSecret)
	return ve + 1
}

// identifiedBefore reports whether "by" at i follows IDENTIFIED, directly
// or through WITH <plugin>.
func identifiedBefore(src []byte, i int) bool {
	return indexFold(src[max(0, i-48):i], "identified ") >= 0
}

// processID redacts the id after "process" (Killed process 48813, strace:
// Process 1234 attached), not a count (process 3 of 12, process 12
// files): an id has three digits at least.
func processID(rw *rewriter, vs int) int {
	src := rw.src
	e := vs
	for e < len(src) && e-vs < 10 && isDigit(src[e]) {
		e++
	}
	if e-vs < 3 || e < len(src) && (isWord(src[e]) || src[e] == '.' && e+1 < len(src) && isDigit(src[e+1])) || phrasePrefix(src[e:], " of ") {
		return 0
	}
	rw.mask(vs, e, kPID)
	return e
}

// xmlSecret redacts the text of an element named for a credential:
// <password>X</password>.
func xmlSecret(rw *rewriter, i int) int {
	src := rw.src
	e := elementEnd(src, i)
	if e < 0 {
		return 0
	}
	w := src[i+1 : e]
	if string(lowerASCII(w)) == "key" {
		return plistValue(rw, e+1)
	}
	if rw.keys.classify(w) != kvSecret { // any length: <private-key-password>
		return 0
	}
	vs := e + 1
	ve := vs
	for ve < len(src) && ve-vs < 256 && src[ve] != '<' && src[ve] != '\n' {
		ve++
	}
	if ve == vs || ve == len(src) || src[ve] != '<' || notASecret(src, vs, ve) {
		// An element's text ends at a tag: text that runs to the line's
		// end follows a word in angle brackets, a template's (send
		// "UNLOCK <pin>" to the lock).
		return 0
	}
	rw.mask(vs, ve, kSecret)
	return ve
}

// plistValue reads a property list's pair from vs, after <key>: the
// element's text names the value of the element that follows
// (<key>Password</key><string>…</string>), which is masked when the name
// names a credential.
func plistValue(rw *rewriter, vs int) int {
	src := rw.src
	ve := vs
	for ve < len(src) && ve-vs < 64 && src[ve] != '<' {
		ve++
	}
	if ve+6 >= len(src) || !bytes.HasPrefix(src[ve:], []byte("</key>")) || rw.keys.classify(src[vs:ve]) != kvSecret {
		return 0
	}
	k := ve + len("</key>")
	for k < len(src) && isSpace(src[k]) {
		k++
	}
	if k >= len(src) || src[k] != '<' {
		return 0
	}
	if e := elementEnd(src, k); e > 0 {
		s := e + 1
		t := s
		for t < len(src) && t-s < 256 && src[t] != '<' {
			t++
		}
		if t > s && !notASecret(src, s, t) {
			rw.mask(s, t, kSecret)
			return t
		}
	}
	return 0
}

// elementEnd returns the index of the '>' that closes the element name
// opened by the '<' at src[i] (<password>), or -1.
func elementEnd(src []byte, i int) int {
	e := i + 1
	for e < len(src) && e-i <= 32 && isKeyByte(src[e]) {
		e++
	}
	if e >= len(src) || src[e] != '>' || e == i+1 {
		return -1
	}
	return e
}

// hasElement reports whether src holds a '<' that opens an element name
// and is not one of our placeholders: where xmlSecret can start.
func hasElement(src []byte) bool {
	for off := 0; ; {
		k := bytes.IndexByte(src[off:], '<')
		if k < 0 {
			return false
		}
		k += off
		if !isPlaceholder(src[k:]) && elementEnd(src, k) >= 0 {
			return true
		}
		off = k + 1
	}
}

// hasPgpassRun reports whether a run of src that pgpass reads as one line
// (no space, '"' or ')') holds four colons or more. It reads the bytes
// between two colons from the second back, to the nearest byte that ends
// a run: most texts have fewer than four colons, or words between them.
func hasPgpassRun(src []byte) bool {
	if bytes.Count(src, []byte{':'}) < 4 {
		return false
	}
	n := 0
	for prev := 0; ; {
		k := bytes.IndexByte(src[prev:], ':')
		if k < 0 {
			return false
		}
		k += prev
		for j := k - 1; j >= prev; j-- {
			if c := src[j]; isSpace(c) || c == '"' || c == ')' {
				n = 0
				break
			}
		}
		if n++; n == 4 {
			return true
		}
		prev = k + 1
	}
}

// userPassAt redacts user/password@database (sqlplus, expdp, rman, Oracle
// JDBC thin) from the word at i, which ends at e before a '/'. A path or a
// package at a version (actions/checkout@v4) is no account.
func userPassAt(rw *rewriter, i, e int) int {
	src := rw.src
	if src[e] != '/' || (i > 0 && (src[i-1] == '/' || src[i-1] == '.')) || !accountName(src[i:e]) {
		return 0
	}
	ps := e + 1
	pe := ps
	q := byte(0)
	if ps < len(src) && src[ps] == '"' {
		q = '"'
		ps++
		pe = ps
		for pe < len(src) && pe-ps < 128 && src[pe] != '"' {
			pe++
		}
		if pe >= len(src) {
			return 0
		}
	} else {
		for pe < len(src) && pe-ps < 128 && !isSpace(src[pe]) && src[pe] != '/' && src[pe] != '@' && src[pe] != '"' && src[pe] != '\'' {
			if escapedBreak(src, pe) {
				break // an escaped line break or tab
			}
			pe++
		}
	}
	at := pe
	if q != 0 {
		at++
	}
	if pe == ps || at >= len(src) || src[at] != '@' || at+1 >= len(src) {
		return 0
	}
	h := src[at+1:]
	hEnd := 0
	for hEnd < len(h) && hEnd < 32 && (isWord(h[hEnd]) || h[hEnd] == '-') {
		hEnd++
	}
	switch {
	case h[0] == '/' || h[0] == '(':
		// @//host:1521/SVC, @(DESCRIPTION=…)
	case hEnd > 0 && isAlpha(h[0]) && !versionLike(h[:hEnd]) && !notAHost[string(lowerASCII(h[:hEnd]))] &&
		!(hEnd >= 7 && allHexBytes(h[:hEnd]) && hasDigit(h[:hEnd])): // owner/repo@<commit>
	default:
		return 0
	}
	if isPlaceholder(src[ps:]) {
		return 0
	}
	rw.mask(i, e, kUser)
	rw.mask(ps, pe, kSecret)
	return pe
}

// pgpass redacts the account and the password of a pgpass line,
// host:port:database:user:password, whose port is a number or '*'.
func pgpass(rw *rewriter, i int) int {
	src := rw.src
	if i > 0 && src[i-1] == ':' {
		return 0 // the tail of a longer run of colons (a fingerprint's 56:FB:C0:AC), not a line's start
	}
	var colons [4]int
	n := 0
	e := i
	for e < len(src) && e-i < 512 && !isSpace(src[e]) && src[e] != '"' && src[e] != ')' {
		if src[e] == ':' {
			if n == 4 {
				return 0
			}
			colons[n] = e
			n++
		}
		e++
	}
	if n != 4 || colons[3]+1 >= e {
		return 0
	}
	port := src[colons[0]+1 : colons[1]]
	if !(allDigits(port) && len(port) <= 5 || string(port) == "*") || colons[2]+1 >= colons[3] {
		return 0
	}
	if !accountName(src[colons[2]+1:colons[3]]) && string(src[colons[2]+1:colons[3]]) != "*" {
		return 0
	}
	if string(src[colons[2]+1:colons[3]]) != "*" {
		rw.mask(colons[2]+1, colons[3], kUser)
	}
	rw.mask(colons[3]+1, e, kSecret)
	return e
}

// cloudPathWords name a cloud resource path whose next segment is an
// account, subscription, tenant or project id. Each ends in 's', which
// gatePositions relies on.
var cloudPathWords = []string{"subscriptions", "projects", "tenants", "accounts", "organizations", "folders", "billingaccounts"}

func cloudPath(rw *rewriter, i, e int) int {
	src := rw.src
	w := lowerASCII(src[i:e])
	ok := false
	for _, p := range cloudPathWords {
		ok = ok || string(w) == p
	}
	if !ok {
		return 0
	}
	vs := e + 1
	ve := vs
	for ve < len(src) && ve-vs < 64 && (isWord(src[ve]) || src[ve] == '-') {
		ve++
	}
	v := src[vs:ve]
	if !(guidShaped(v) || projectID(v) || allDigits(v) && len(v) >= 6) {
		return 0
	}
	rw.mask(vs, ve, kAccount)
	return ve
}

// cloudID redacts the id that follows a word naming a cloud account,
// subscription, tenant or project (account 123456789012, subscription
// "…", tenant: …, Directory (tenant) ID: …, set project my-proj-123456),
// skipping a few connecting words and punctuation.
func cloudID(rw *rewriter, word string, vs int) int {
	src := rw.src
	k := vs
	for steps := 0; k < len(src) && steps < 4; steps++ {
		for k < len(src) && k-vs < 32 && (src[k] == ' ' || src[k] == '"' || src[k] == '\'' || src[k] == '(' || src[k] == ')' || src[k] == ':' || src[k] == '#') {
			k++
		}
		e := k
		for e < len(src) && e-k < 64 && (isWord(src[e]) || src[e] == '-') {
			e++
		}
		v := src[k:e]
		switch lv := string(lowerASCII(v)); {
		case lv == "id" || lv == "tenant" || lv == "number" || lv == "is" || lv == "no":
			k = e
			continue
		case guidShaped(v) && word != "account":
		case word == "account" && allDigits(v) && len(v) == 12:
		case word == "project" && projectID(v):
		default:
			return 0
		}
		if e < len(src) && (isWord(src[e]) || src[e] == '.') {
			return 0
		}
		rw.mask(k, e, kAccount)
		return e
	}
	return 0
}

// guidShaped reports whether v is a GUID: 8-4-4-4-12 hexadecimal digits.
func guidShaped(v []byte) bool {
	if len(v) != 36 {
		return false
	}
	for k, c := range v {
		if k == 8 || k == 13 || k == 18 || k == 23 {
			if c != '-' {
				return false
			}
		} else if !isHex(c) {
			return false
		}
	}
	return true
}

// afterFlag reports whether the word at i is the value of a flag (-e NAME,
// --env NAME).
func afterFlag(src []byte, i int) bool {
	if i < 3 || src[i-1] != ' ' {
		return false
	}
	k := i - 2
	for k > 0 && i-k < 24 && (isWord(src[k]) || src[k] == '-' && src[k-1] != ' ' && src[k-1] != '-') {
		k--
	}
	return src[k] == '-' && k+1 < i-1 && (k == 0 || src[k-1] == ' ' || src[k-1] == '-')
}

// credentialLike reports whether a word after a credential keyword reads
// as a credential: letters with digits, mixed case (a capital after the
// first letter), or punctuation that names and words do not hold; the
// question or exclamation mark that ends a sentence does not count.
// Lower-case words joined by '-', '_' or '.' (get-secret-value) are names.
func credentialLike(v []byte) bool {
	for len(v) > 1 && (v[len(v)-1] == '?' || v[len(v)-1] == '!') && isAlpha(v[len(v)-2]) {
		v = v[:len(v)-1]
	}
	var up, lo, di, punct bool
	for k, c := range v {
		switch {
		case c >= 'A' && c <= 'Z':
			up = up || k > 0
		case c >= 'a' && c <= 'z' || c >= 0x80: // a byte of a non-ASCII letter (geändert) is a letter
			lo = true
		case isDigit(c):
			di = true
		case c == '-' || c == '_' || c == '.':
		default:
			punct = true
		}
	}
	return punct || up && lo || di && (up || lo) || di && len(v) >= 8
}

// credentialTriggers are literals that every credential word holds: with
// specialWords, the keyword prefilter of this pass. A word that holds the
// first two letters of none of them is not looked at further; a word with
// a byte of a non-ASCII letter always is (пароль).
var credentialTriggers = func() []string {
	t := []string{"pass", "pw", "secret", "token", "key", "auth", "cred", "sig", "sid", "pin", "otp",
		"csrf", "xsrf", "sess", "cookie", "connectionstring", "answer", "response", "code", "phrase",
		"munity"} // community: "co" starts too many words to be a trigger
	for _, w := range slices.Sorted(maps.Keys(credentialWords)) {
		covered := strings.IndexFunc(w, func(r rune) bool { return r >= 0x80 }) >= 0
		for _, l := range t {
			covered = covered || strings.Contains(w, l)
		}
		if !covered {
			t = append(t, w) // nonce, kennwort, clave, …
		}
	}
	return t
}()

// nonASCIICredentials are the credential words that hold a non-ASCII
// letter, each with the offset of its first non-ASCII byte: gatePositions
// looks for them whole.
var nonASCIICredentials = func() (out []nonASCIIWord) {
	for _, w := range slices.Sorted(maps.Keys(credentialWords)) {
		if k := strings.IndexFunc(w, func(r rune) bool { return r >= 0x80 }); k >= 0 {
			out = append(out, nonASCIIWord{[]byte(w), k})
		}
	}
	return out
}()

// nonASCIIWord is a word and the offset of its first non-ASCII byte.
type nonASCIIWord struct {
	w []byte
	k int
}

// holdsNonASCIICredential reports whether src holds one of
// nonASCIICredentials. Each is looked for only where src has its first
// non-ASCII byte, so that a text costs one pass, not one a word.
func holdsNonASCIICredential(src []byte) bool {
	for p, c := range src {
		if c < 0x80 {
			continue
		}
		for _, n := range nonASCIICredentials {
			if n.w[n.k] == c && p >= n.k && bytes.HasPrefix(src[p-n.k:], n.w) {
				return true
			}
		}
	}
	return false
}

// triggerTable indexes the triggers and the special words.
var triggerTable = newPrefixTable(append(slices.Clone(credentialTriggers), specialWords...))

// prefixTable indexes literals of lower-case letters (two at least) by
// their first two letters, in either case: pairs[c0] has bit c1-'a' when
// a literal starts with c0 c1, byFirst[c0] lists those that start with c0.
type prefixTable struct {
	pairs   [256]uint32
	byFirst [256][]string
	// thirds[a][b] has the letterBit of the third byte of each literal
	// that starts with the letters a and b (0 for 'a'), in either case,
	// and anyThird for one whose third byte is no letter or that has
	// none.
	thirds [26][26]uint32
}

// anyThird is the bit of thirds that lets any third byte through.
const anyThird = 1 << 26

func newPrefixTable(lits []string) *prefixTable {
	t := &prefixTable{}
	for _, l := range lits {
		for _, c := range []byte{l[0], l[0] - 32} {
			t.pairs[c] |= 1 << (lower(l[1]) - 'a')
			t.byFirst[c] = append(t.byFirst[c], l)
		}
		third := uint32(anyThird)
		if len(l) > 2 && letterBit[l[2]] != 0 {
			third = letterBit[l[2]]
		}
		if a, b := lower(l[0])-'a', lower(l[1])-'a'; a < 26 && b < 26 {
			t.thirds[a][b] |= third
		}
	}
	return t
}

// thirdMay reports whether a literal of t may start at src[k], whose
// first two bytes pairs lets through: whether the byte after them may be
// its third. Most pairs of prose that start a literal go on with a byte
// that no literal has third after them.
func (t *prefixTable) thirdMay(src []byte, k int) bool {
	a, b := lower(src[k])-'a', lower(src[k+1])-'a'
	if a >= 26 || b >= 26 {
		return true // thirds knows only literals that start with two letters
	}
	m := t.thirds[a][b]
	return m&anyThird != 0 || k+2 < len(src) && m&letterBit[src[k+2]] != 0
}

// letterBit[c] is bit lower(c)-'a' for a letter c, 0 for other bytes.
var letterBit = func() (t [256]uint32) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = 1 << (c - 'a')
		t[c-32] = 1 << (c - 'a')
	}
	return t
}()

// accountVerbs announce an account and its password as the arguments
// after them, past flags, a subcommand or a file: rabbitmqctl add_user
// USER PASS, htpasswd -b FILE USER PASS, isql DSN USER PASS, net user USER
// PASS, poetry config http-basic.REPO USER PASS, steamcmd +login USER
// PASS, emqx ctl admins passwd USER PASS, doveadm auth test USER PASS.
// After a command made for it (true) any word is the password, the last
// of three arguments; after a verb that is prose too, the first word after
// an account that is shaped like a password.
var accountVerbs = map[string]bool{"add_user": true, "adduser": true, "change_password": true, "set_password": true,
	"isql": true, "htpasswd": true, "http-basic": true, "net": true, "mosquitto_passwd": true,
	"login": false, "logon": false, "signin": false, "passwd": false, "password": false, "auth": false, "superuser": false,
	"register": false, "user-create": false, "useradd": false}

// accountArgs masks the account and the password among the arguments
// from vs, after a verb of accountVerbs (strict: made for it).
func accountArgs(rw *rewriter, vs int, strict bool) int {
	src := rw.src
	var args [3][2]int
	n := 0
	flag := false // the word before was a flag: after a verb that is prose too, this word is its value
	for i, k := vs, 0; i < len(src) && k < 8 && n < len(args); k++ {
		for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
			i++
		}
		s := i
		if i < len(src) && (src[i] == '\'' || src[i] == '"') {
			for i++; i < len(src) && i-s < 256 && src[i] != src[s]; i++ {
			}
			i++
		} else {
			// A quote ends a word that a string holds ("msg":"password
			// reset requested").
			for i < len(src) && i-s < 256 && !isSpace(src[i]) && src[i] != '"' && src[i] != '\'' {
				if escapedBreak(src, i) {
					break // an escaped line break or tab
				}
				i++
			}
		}
		if s == i || i > len(src) || strings.IndexByte("|;&+#<>", src[s]) >= 0 || !strict && src[s] == '(' || linkText(src[s:i]) {
			break // a pipe, a comment; after a verb of prose, a remark in parentheses; a link's title
		}
		isFlag := src[s] == '-' || src[s] == '/' && i-s < 10 && bytes.IndexByte(src[s+1:i], '/') < 0
		if !isFlag && !(flag && !strict) {
			args[n], n = [2]int{s, i}, n+1 // not a flag, nor a Windows switch (/add)
		}
		flag = isFlag
	}
	for k := 0; k+1 < n; k++ {
		if strict && k+2 < n {
			continue // DSN USER PASS, FILE USER PASS
		}
		a, ps, pe := args[k], args[k+1][0], args[k+1][1]
		quoted := src[ps] == '\'' || src[ps] == '"'
		if quoted {
			ps, pe = ps+1, pe-1
		}
		acct := src[a[0]:a[1]]
		if pe <= ps || !accountName(acct) && !(bytes.IndexByte(acct, '@') > 0 && accountName(acct[:bytes.IndexByte(acct, '@')])) ||
			!strict && (proseWord(acct) || settingWords[string(lowerASCII(acct))]) || // Password scheme SSHA256
			notASecret(src, ps, pe) || !strict && !quoted && (!passwordShaped(src[ps:pe]) || alnumCount(src[ps:pe]) < 4) {
			continue
		}
		rw.mask(a[0], a[1], kUser)
		rw.mask(ps, pe, kSecret)
		return pe
	}
	return 0
}

// linkText reports whether the word v ends the text of a Markdown link,
// "](" and its target after it: the words before are the link's title,
// which no credential runs across.
func linkText(v []byte) bool {
	k := bytes.Index(v, []byte("]("))
	return k > 0 && isAlpha(v[k-1])
}

// trimSentence returns v without the punctuation of the sentence or the
// syntax around it at its end: bytes of punct, and a closing bracket or
// quote that v did not open ("given}" in {… is given}, "login`" in
// `gcloud auth login`; "(redacted)" keeps its).
func trimSentence(v []byte, punct string) []byte {
	for len(v) > 0 {
		c := v[len(v)-1]
		open := strings.IndexByte(")]}`\"'", c)
		if strings.IndexByte(punct, c) < 0 && (open < 0 || bytes.IndexByte(v[:len(v)-1], "([{`\"'"[open]) >= 0) {
			break
		}
		v = v[:len(v)-1]
	}
	return v
}

// alnumCount counts the letters and digits of v: after a verb of prose a
// word needs four to be a password, not an operator or a format's verb
// (scale = 0, got %q).
func alnumCount(v []byte) int {
	n := 0
	for _, c := range v {
		if isAlnum(c) {
			n++
		}
	}
	return n
}

// proseWord reports whether w is a word of a sentence rather than an
// account's name: a function word, or an English ending (failed, using).
func proseWord(w []byte) bool {
	lw := lowerASCII(w)
	if englishFilter.may(lw) && englishWords[string(lw)] && !roleAccounts[string(lw)] || credentialFilter.may(lw) && credentialWords[string(lw)] {
		return true
	}
	for _, suffix := range englishSuffixes {
		if len(lw) >= len(suffix)+3 && lw[len(lw)-1] == suffix[len(suffix)-1] && bytes.HasSuffix(lw, []byte(suffix)) {
			return true
		}
	}
	return false
}

// passwordShaped reports whether a word reads as a password rather than a
// name, a number, an address, an assignment or a path: credentialLike, and
// neither an address (10.0.0.1, alice@host, https://…), key=value nor a
// version. An '@' or '=' that ends it is a symbol (otte653@).
func passwordShaped(v []byte) bool {
	v = trimSentence(v, ".,;:") // the sentence's, not the word's
	if len(v) == 0 || !credentialLike(v) || bytes.ContainsAny(v[:len(v)-1], "@=") || bytes.Contains(v, []byte("://")) || v[0] == 'v' && len(v) > 1 && isDigit(v[1]) {
		return false
	}
	for _, c := range v {
		if !isDigit(c) && c != '.' && c != ':' {
			return true
		}
	}
	return false
}

// Calls that pass a credential: a setter named for one (setPassword("x"),
// setKey('x'), settings.password.set("x")), a credential's name and its value (define('DB_PASSWORD',
// 'x'), System.setProperty("X_TOKEN", "x")), and the account and password
// of a login or a connection (logIn("u", "x"), BasicAuthentication("u",
// "x"), new PDO('mysql:host=db', 'u', 'x'), mysqli_connect('db', 'u', 'x')).
func redactCalls(rw *rewriter) {
	src := rw.src
	for off := 0; off < len(src); {
		k := bytes.IndexByte(src[off:], '(')
		if k < 0 {
			return
		}
		p := off + k
		off = p + 1
		var args [3][2]int // the insides of the quoted arguments; zero for another
		n := callArgs(src, p+1, &args)
		ns := p
		for ns > 0 && p-ns < 64 && isWord(src[ns-1]) {
			ns--
		}
		name := src[ns:p]
		quoted := func(k int) bool { return k < n && args[k][1] > 0 }
		arg := func(k int) []byte { return src[args[k][0]:args[k][1]] }
		switch {
		case !quoted(0):
		case quoted(1) && isSecretKey(rw.keys.classify(arg(0))) && !(generatedKey(arg(0)) && sentence(arg(1))) && !maskValue(arg(1)) &&
			!notASecret(src, args[1][0], args[1][1]):
			rw.mask(args[1][0], args[1][1], kSecret)
		case setterName(name) || isSecretKey(rw.keys.classify(setMember(src, ns, name))):
			if !notASecret(src, args[0][0], args[0][1]) {
				rw.mask(args[0][0], args[0][1], kSecret) // but setKey("${KEY}"), WithAPIKey("AIza...")
			}
		case quoted(1) && !quoted(2) && loginName(name):
			rw.mask(args[0][0], args[0][1], kUser)
			rw.mask(args[1][0], args[1][1], kSecret)
		case quoted(2) && quoted(1) && (bytes.Contains(arg(0), []byte("=")) ||
			!bytes.ContainsAny(arg(0), " ") && (bytes.Contains(arg(0), []byte(":")) || indexFold(name, "connect") >= 0)):
			// The account and the password are literals, after a
			// connection string, a DSN or a host (which holds no space):
			// fmt.Println("Cache:", c.L1, "bytes") prints a label and
			// values.
			rw.mask(args[1][0], args[1][1], kUser) // a DSN or a host, the account, the password
			rw.mask(args[2][0], args[2][1], kSecret)
		}
	}
}

// setMember returns the member a setter method sets, the word before
// ".set" when name, starting at ns, is a setter of a value
// (settings.password.set("x"), cfg.Token.Set("x")); nil for another call.
func setMember(src []byte, ns int, name []byte) []byte {
	switch string(name) {
	case "set", "Set", "setValue", "SetValue", "update", "put":
	default:
		return nil
	}
	if ns < 2 || src[ns-1] != '.' {
		return nil
	}
	ms := ns - 1
	for ms > 0 && ns-ms < 64 && isWord(src[ms-1]) {
		ms--
	}
	return src[ms : ns-1]
}

// callArgs finds the arguments of a call from i, after its '(': the
// bounds of the inside of each quoted one, zero for another; at most
// len(args).
func callArgs(src []byte, i int, args *[3][2]int) int {
	n := 0
	for n < len(args) && i < len(src) {
		for i < len(src) && src[i] == ' ' {
			i++
		}
		if i >= len(src) {
			break
		}
		if q := src[i]; q == '\'' || q == '"' {
			e := i + 1
			for e < len(src) && e-i < 256 && src[e] != q && src[e] != '\n' {
				e++
			}
			if e >= len(src) || src[e] != q || e == i+1 {
				break
			}
			args[n] = [2]int{i + 1, e}
			i = e + 1
		} else {
			for s := i; i < len(src) && i-s < 64 && src[i] != ',' && src[i] != ')'; i++ {
			}
		}
		n++
		for i < len(src) && src[i] == ' ' {
			i++
		}
		if i >= len(src) || src[i] != ',' {
			break
		}
		i++
	}
	return n
}

// gateCalls reports whether src may hold a call with a quoted argument.
func gateCalls(src []byte, _ features) bool {
	return bytes.IndexByte(src, '\'') >= 0 || bytes.IndexByte(src, '"') >= 0
}

func isSecretKey(c kvClass) bool { return c == kvSecret || c == kvAuth }

// setterName reports whether a function's name sets a credential:
// set, with, use or put, then the credential's name (setApiKey).
func setterName(name []byte) bool {
	for _, v := range []string{"set", "with", "use", "put"} {
		if len(name) > len(v) && hasPrefixFold(name, v) && (isUpper(name[len(v)]) || name[len(v)] == '_') {
			return isSecretKey(classifyKey(bytes.TrimLeft(name[len(v):], "_")))
		}
	}
	return false
}

// loginName reports whether a function's name logs in or authenticates:
// logIn, signin, login_user, BasicAuthentication, HTTPBasicAuth.
func loginName(name []byte) bool {
	for _, w := range []string{"login", "logon", "signin", "auth", "credential"} {
		if indexFold(name, w) >= 0 {
			return true
		}
	}
	return false
}

// gateLiterals are the literals one of which a word must hold for the
// keyword branch of redactPositions to replace anything: the credential
// triggers (credentialWord needs one) and the special words, with
// "identified " for "by", which counts only after it.
var gateLiterals = func() []string {
	l := append([]string(nil), credentialTriggers...)
	for _, w := range specialWords {
		if w == "by" {
			w = "identified "
		}
		l = append(l, w)
	}
	return l
}()

var gateTable = newPrefixTable(gateLiterals)

// gatePositions reports whether redactPositions may replace anything in
// src, a test that costs a table lookup a byte: an XML element needs a
// '<' that opens one and is no placeholder, a pgpass line (from a word
// or a '*') four colons in one run, user/password@db
// a '/' and an '@', a cloud resource path a plural before a '/'
// (subscriptions/), and a keyword one of gateLiterals.
func gatePositions(src []byte, f features) bool {
	if bytes.IndexByte(src, '<') >= 0 && hasElement(src) {
		return true
	}
	// pgpass, from a word or a '*', needs four colons in one run.
	if f&fColon != 0 && hasPgpassRun(src) {
		return true
	}
	if f&fSlash != 0 {
		if f&fAt != 0 {
			return true
		}
		for off := 0; ; {
			k := bytes.IndexByte(src[off:], '/')
			if k < 0 {
				break
			}
			k += off
			// Every cloud path word is a plural: most '/' follow no 's'.
			if k > 0 && lower(src[k-1]) == 's' {
				for _, p := range cloudPathWords {
					if k >= len(p) && hasPrefixFold(src[k-len(p):k], p) {
						return true
					}
				}
			}
			off = k + 1
		}
	}
	if f&fNonASCII != 0 && holdsNonASCIICredential(src) {
		return true
	}
	// The pair test reads each byte once, carried from one step to the
	// next, so that a byte costs two table loads and no bounds check.
	skip := 0
	var prev byte
	pairs := &gateTable.pairs // loaded once, not at every byte
	for n, c := range src {
		pair := pairs[prev] & letterBit[c]
		prev = c
		if pair == 0 || n <= skip { // no literal starts with a NUL: pair is 0 at n == 0
			continue
		}
		k := n - 1
		if !gateTable.thirdMay(src, k) {
			continue
		}
		for _, s := range gateTable.byFirst[src[k]] {
			if s[1] != lower(src[k+1]) || !hasPrefixFold(src[k:], s) {
				continue
			}
			// The keyword is the run of key bytes around the literal,
			// unless it is too long or one that credentialWord refuses.
			i, e := k, k
			for i > 0 && k-i <= 64 && isKeyByte(src[i-1]) {
				i--
			}
			for e < len(src) && e-i <= 64 && isKeyByte(src[e]) {
				e++
			}
			if e-i > 64 || !refusedKeyword[string(lowerASCII(src[i:e]))] || e-i == 3 && equalFold(src[i:e], "key") && directive(src, i) {
				return true // (key, refused as a word, is read as a directive)
			}
			skip = e // resume with the pair that starts at src[e]
			break
		}
	}
	return false
}

// holdsGateLiteral reports whether the lower-case word w holds one of
// gateLiterals, as every keyword gatePositions lets through does.
// Every literal starts with two lower-case letters, so a pair of w that
// gateTable refuses starts none of them: most words cost a table load a
// byte rather than one scan a literal.
func holdsGateLiteral(w []byte) bool {
	for k := 0; k+1 < len(w); k++ {
		if gateTable.pairs[w[k]]&letterBit[w[k+1]] == 0 {
			continue
		}
		for _, l := range gateTable.byFirst[w[k]] {
			if bytes.HasPrefix(w[k:], []byte(l)) {
				return true
			}
		}
	}
	return bytes.IndexFunc(w, func(r rune) bool { return r >= 0x80 }) >= 0
}

// refusedKeyword holds the words that hold a credential trigger but are
// prose or ids more often than keywords: credentialWord refuses them, and
// no other keyword case reads them.
var refusedKeyword = map[string]bool{"key": true, "sig": true, "sid": true, "pin": true, "otp": true, "pass": true,
	"session": true, "sessions": true, "cookie": true, "cookies": true, "signature": true,
	"secrets": true, "tokens": true, "passwords": true, "keys": true}

// hasher is a command that hashes or stores the password it is given, as
// its manual documents: the flags whose value is the password, the flags
// that take another value, and whether its first argument is the password.
type hasher struct {
	secretFlags, valueFlags []string
	positional              bool
}

// hashers are the commands that take a password to hash it or store it,
// by the word that names them; "passwd" is openssl's subcommand and "pw"
// doveadm's (the words before them say so: hasherOf).
var hashers = map[string]*hasher{
	"passwd":        {valueFlags: []string{"-salt", "-in", "-table"}, positional: true},                                                  // openssl passwd [-6] [-salt S] PASS
	"mkpasswd":      {valueFlags: []string{"-m", "--method", "-S", "--salt", "-R", "--rounds", "-P", "--password-fd"}, positional: true}, // mkpasswd [-m M] PASS [SALT]
	"slappasswd":    {secretFlags: []string{"-s"}, valueFlags: []string{"-h", "-c", "-o", "-T"}},                                         // slappasswd -s PASS
	"hash-password": {secretFlags: []string{"--plaintext", "-p"}, valueFlags: []string{"--algorithm", "-a", "--salt", "-s"}},             // caddy hash-password --plaintext PASS
	"pw":            {secretFlags: []string{"-p"}, valueFlags: []string{"-s", "-u", "-r", "-t"}},                                         // doveadm pw -p PASS
}

// hasherOf returns the hasher the word w (lower case) at src[i] names, or
// nil: openssl's passwd and doveadm's pw only after their command.
func hasherOf(src []byte, i int, w []byte) *hasher {
	h := hashers[string(w)]
	switch {
	case h == nil:
		return nil
	case string(w) == "passwd":
		if !bytes.HasSuffix(src[:i], []byte("openssl ")) {
			return nil
		}
	case string(w) == "pw":
		if !bytes.HasSuffix(src[:i], []byte("doveadm ")) {
			return nil
		}
	}
	return h
}

// hasherArgs masks the password among the arguments of the hasher h that
// start at vs: a secret flag's value, or the first argument that is no
// flag nor another flag's value. A value quoted is masked inside its
// quotes. It returns the password's end, or 0.
func hasherArgs(rw *rewriter, vs int, h *hasher) int {
	src := rw.src
	for i, k := vs, 0; i < len(src) && k < 12; k++ {
		for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
			i++
		}
		s, e := argBounds(src, i)
		if e == s || strings.IndexByte("|;&#<>", src[s]) >= 0 {
			return 0
		}
		arg := src[s:e]
		if arg[0] != '-' {
			if !h.positional {
				return 0
			}
			return maskArg(rw, s, e)
		}
		name := arg
		if eq := bytes.IndexByte(arg, '='); eq > 0 {
			name = arg[:eq]
			if slices.Contains(h.secretFlags, string(name)) {
				return maskArg(rw, s+eq+1, e)
			}
			i = e
			continue
		}
		switch {
		case slices.Contains(h.secretFlags, string(name)):
			for e < len(src) && (src[e] == ' ' || src[e] == '\t') {
				e++
			}
			vs, ve := argBounds(src, e)
			if ve == vs {
				return 0
			}
			return maskArg(rw, vs, ve)
		case slices.Contains(h.valueFlags, string(name)):
			for e < len(src) && (src[e] == ' ' || src[e] == '\t') {
				e++
			}
			_, e = argBounds(src, e)
		}
		i = e
	}
	return 0
}

// argBounds returns the bounds of the shell argument at src[i]: a quoted
// string with its quotes, or the word up to a space; (i, i) at the end.
func argBounds(src []byte, i int) (int, int) {
	if i >= len(src) {
		return i, i
	}
	if q := src[i]; q == '\'' || q == '"' {
		if k := bytes.IndexByte(src[i+1:min(len(src), i+257)], q); k >= 0 {
			return i, i + k + 2
		}
		return i, i
	}
	e := i
	for e < len(src) && e-i < 256 && !isSpace(src[e]) {
		e++
	}
	return i, e
}

// maskArg masks the argument src[s:e] as a secret, inside its quotes when
// it has them, unless it is a placeholder or a reference; it returns e,
// or 0.
func maskArg(rw *rewriter, s, e int) int {
	src := rw.src
	if q := src[s]; (q == '\'' || q == '"') && e-s >= 2 && src[e-1] == q {
		s, e = s+1, e-1
	}
	if e <= s || isPlaceholder(src[s:]) || refEnd(src, s) > 0 || notASecret(src, s, e) {
		return 0
	}
	rw.mask(s, e, kSecret)
	return e
}
