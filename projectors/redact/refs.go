package redact

import "bytes"

// Values that stand in a credential's position but are not credentials:
// references to one (${DB_PASSWORD}, os.Getenv("TOKEN"), {{ .Values.x }},
// %(password)s, $PASSWORD), masks and empty literals, and file paths. They
// stay readable, since they say where a secret comes from and hold none.

// maxRef bounds the text a reference may span, so that an unclosed "${"
// costs a bounded look, not the rest of the message.
const maxRef = 256

// refOpeners are the openers of bracketed references and their closers.
var refOpeners = []struct{ open, close string }{
	{"${{", "}}"}, {"$${", "}"}, {"${", "}"}, {"%{", "}"}, {"$(", ")"}, {"{{", "}}"}, {"%(", ")"}, {"((", "))"}, {"#{", "}"}, {"[[", "]]"},
	{"%env(", ")%"}, {"`", "`"},
}

// refCalls are the calls and lookups that read a secret from somewhere
// else: the value is the name of the place, not the secret.
var refCalls = []string{
	"os.getenv(", "os.environ[", "os.environ.get(", "getenv(", "system.getenv(", "env[", "env.fetch(",
	"process.env.", "secrets.", "vars.", "env.", "environment.getenvironmentvariable(", "lookup(",
	"!ref ", "!sub ", "!vault", "!secret ", "!getatt ", "vault:", "secretref:", "valuefrom:", "file:",
	// The sources a setting reads its value from, by a prefix naming the
	// store: the environment, a keyring, a parameter store, 1Password.
	"env:", "keyring:", "keychain:", "ssm:", "op://",
	// The YAML tags that resolve a name elsewhere (Home Assistant's and
	// ESPHome's secrets file, the environment, an included file, a
	// blueprint's input, another stack's export): the name is a place.
	"!env_var ", "!env ", "!include ", "!input ", "!importvalue ", "!findinmap ",
}

// refFirst marks the bytes a reference may start with: refOpenFirst the
// first bytes of refOpeners, refCallFirst those of refCalls in either
// case, so that most values are refused by two table loads.
var refOpenFirst, refCallFirst = func() (o, c [256]bool) {
	for _, r := range refOpeners {
		o[r.open[0]] = true
	}
	for _, r := range refCalls {
		c[r[0]] = true
		if r[0] >= 'a' && r[0] <= 'z' {
			c[r[0]-'a'+'A'] = true
		}
	}
	return o, c
}()

// compositeEnd returns the length of the composite literal's type and
// brace that start rest (spanner.SessionPoolConfig{): a value a program
// builds, of a type its package names, a '.' before a capitalised name;
// or 0.
func compositeEnd(rest []byte) int {
	if !isAlpha(rest[0]) {
		return 0
	}
	e, dot := 1, -1
	for e < len(rest) && e < 128 && (isWord(rest[e]) || rest[e] == '.' && e+1 < len(rest) && isAlpha(rest[e+1])) {
		if rest[e] == '.' {
			dot = e
		}
		e++
	}
	if dot > 0 && isUpper(rest[dot+1]) && e < len(rest) && rest[e] == '{' {
		return e + 1
	}
	return 0
}

// refEnd returns the end of the reference that starts src[i:], or -1.
func refEnd(src []byte, i int) int {
	if i >= len(src) {
		return -1
	}
	rest := src[i:min(len(src), i+maxRef)]
	if refOpenFirst[rest[0]] {
		for _, o := range refOpeners {
			if bytes.HasPrefix(rest, []byte(o.open)) {
				if k := bytes.Index(rest[len(o.open):], []byte(o.close)); k >= 0 {
					e := len(o.open) + k + len(o.close)
					if o.open == "%(" && e < len(rest) && isAlpha(rest[e]) {
						e++ // %(password)s
					}
					return i + e
				}
				return -1
			}
		}
	}
	if e := compositeEnd(rest); e > 0 {
		return i + e
	}
	switch c := rest[0]; {
	case c == '$':
		// $PASSWORD, $db_pass: an identifier of one case.
		// $PASSWORD, $db_pass, $token: an identifier of one case, with no
		// digit unless it is upper case or holds '_' (a password may start
		// with '$': $tr0ng is not a variable).
		e := 1
		if len(rest) > 3 && rest[1] == ':' && rest[2] == ':' {
			e = 3 // $::password: a global of Tcl, Perl's main package
		}
		s := e
		up, lo, digit, under := false, false, false, false
		for e < len(rest) && isWord(rest[e]) {
			c := rest[e]
			up = up || c >= 'A' && c <= 'Z'
			lo = lo || c >= 'a' && c <= 'z'
			digit = digit || isDigit(c)
			under = under || c == '_'
			e++
		}
		if e >= s+2 && (isAlpha(rest[s]) || rest[s] == '_') && !(up && lo) && (!digit || !lo || under) &&
			(e == len(rest) || !valueByte[rest[e]] || rest[e] == '.') {
			if e < len(rest) && rest[e] == '{' {
				if k := bytes.IndexByte(rest[e:], '}'); k > 0 {
					return i + e + k + 1 // $ENV{X}: Perl's environment
				}
			}
			return i + e
		}
		return -1
	case c == '&' && len(rest) > 1 && isAlpha(rest[1]):
		// &http.Cookie{…}: the address of a value a program builds, whose
		// members carry their own names.
		e := 1
		for e < len(rest) && e < 128 && (isWord(rest[e]) || rest[e] == '.' && e+1 < len(rest) && isAlpha(rest[e+1])) {
			e++
		}
		if e < len(rest) && rest[e] == '{' {
			return i + e + 1
		}
		return -1
	case c == '%' && formatVerbEnd(rest) > 0:
		return i + formatVerbEnd(rest) // %q, %+v: a value a formatter writes in later
	case c == '<' || c == '%' || c == '{':
		// <password>, <your-token-here>, <masqué>, %TestPassword%,
		// {SumoAccessKey}: a placeholder of words.
		closer := byte('%')
		switch c {
		case '<':
			closer = '>'
		case '{':
			closer = '}'
		}
		e := 1
		for e < len(rest) && e < 64 && (isKeyByte(rest[e]) || rest[e] == ' ' && c == '<') {
			e++
		}
		if e > 2 && e < len(rest) && rest[e] == closer && (c != '{' || !isUpperName(rest[1:e])) {
			return i + e + 1 // {PLAIN} is a password scheme, not a placeholder
		}
		return -1
	}

	if refCallFirst[rest[0]] {
		for _, call := range refCalls {
			if hasPrefixFold(rest, call) {
				if c := call[len(call)-1]; c == ':' || c == '/' {
					return i + pathTail(rest, len(call)) // vault:kv/data/app#token
				}
				return i + refTail(rest, len(call))
			}
		}
	}
	if e := codeEnd(rest); e > 0 {
		return i + e
	}
	if e := typeLiteralEnd(rest); e > 0 {
		return i + e
	}
	if e := nameEnd(rest); e > 0 {
		return i + e
	}
	if e := cmdletEnd(rest); e > 0 {
		return i + e
	}
	return -1
}

// formatVerbEnd returns the end of the printf verb that starts rest (%s,
// %q, %+v, %#v, %5d, %T), or 0: a flag or a width, one letter of the
// verbs, then no letter or digit.
func formatVerbEnd(rest []byte) int {
	e := 1
	for e < len(rest) && e < 4 && (rest[e] == '+' || rest[e] == '#' || rest[e] == '-' || isDigit(rest[e])) {
		e++
	}
	if e >= len(rest) || bytes.IndexByte([]byte("sqvdTwxXfg"), rest[e]) < 0 || e+1 < len(rest) && isAlnum(rest[e+1]) {
		return 0
	}
	return e + 1
}

// cmdletVerbs are PowerShell's approved verbs (Get-Verb): a cmdlet's name
// is one of them, '-' and a noun.
var cmdletVerbs = wordSet(`Add Clear Close Copy Enter Exit Find Format Get Hide Join Lock Move New Open Optimize Pop Push Redo
	Remove Rename Reset Resize Search Select Set Show Skip Split Step Switch Undo Unlock Watch Backup Checkpoint Compare
	Compress Convert ConvertFrom ConvertTo Dismount Edit Expand Export Group Import Initialize Limit Merge Mount Out Publish
	Restore Save Sync Unpublish Update Approve Assert Build Complete Confirm Deny Deploy Disable Enable Install Invoke
	Register Request Restart Resume Start Stop Submit Suspend Uninstall Unregister Wait Debug Measure Ping Repair Resolve
	Test Trace Connect Disconnect Read Receive Send Write Block Grant Protect Revoke Unblock Unprotect Use`)

// cmdletEnd returns the end of the PowerShell cmdlet called at the start
// of rest ($pw = Read-Host -AsSecureString, $key = Get-Content key.txt),
// or -1: an approved verb, '-', a capitalised noun, then the end or a
// space. The value is what the command yields, not a credential; a quoted
// argument after it is judged on its own.
func cmdletEnd(rest []byte) int {
	k := bytes.IndexByte(rest[:min(len(rest), 16)], '-')
	if k < 2 || !isUpper(rest[0]) || !cmdletVerbs[string(rest[:k])] || k+1 >= len(rest) || !isUpper(rest[k+1]) {
		return -1
	}
	e := k + 1
	for e < len(rest) && e < 64 && isAlpha(rest[e]) {
		e++
	}
	if e < len(rest) && rest[e] != ' ' || e-k < 3 {
		return -1
	}
	return e
}

// placeholderWords are the words that make a value of words joined by '_'
// or '-' a placeholder for one (your_token_here, replace-me).
var placeholderWords = wordSet(`replace your here todo fixme placeholder insert fill`)

// nameEnd returns the end of the name at the start of rest, or -1: a
// constant's or variable's name in upper case, words of letters joined by
// '_' (FTP_PASS_FROM_ENV, DB_PASSWORD), which says where a value comes
// from; or a placeholder of lower-case words joined by '_' or '-' one of
// which is a placeholder's word (replace_me). A generated value has
// digits or both cases; a human one is seldom all words in capitals.
func nameEnd(rest []byte) int {
	e, parts, upper, lower, short := 0, 0, false, false, false
	for e < len(rest) && e < 64 && isAlpha(rest[e]) {
		s := e
		for e < len(rest) && isAlpha(rest[e]) {
			upper = upper || isUpper(rest[e])
			lower = lower || !isUpper(rest[e])
			e++
		}
		parts++
		short = short || e-s < 2
		if e+1 < len(rest) && (rest[e] == '_' || rest[e] == '-' && !upper) && isAlpha(rest[e+1]) {
			e++
			continue
		}
		break
	}
	if parts < 2 || upper && lower || e < len(rest) && valueByte[rest[e]] {
		return -1
	}
	if upper {
		if short {
			return -1
		}
		return e
	}
	mine, names := false, false
	for s := 0; s < e; {
		k := s
		for k < e && isAlpha(rest[k]) {
			k++
		}
		w := rest[s:k]
		if placeholderWords[string(w)] {
			return e
		}
		mine = mine || s == 0 && (string(w) == "my" || string(w) == "our")
		names = s > 0 && placeholderNouns[string(w)] // the last word's
		s = k + 1
	}
	if mine && names {
		// my-api-key, my-session: the example's own value, named last for
		// what it stands for (my-secret-garden is no such name).
		return e
	}
	return -1
}

// placeholderNouns name what a placeholder stands for, after my or our
// and last.
var placeholderNouns = wordSet(`key token secret password pass passwd pwd session cookie credential credentials`)

// codeEnd returns the end of the expression of code at the start of rest,
// or -1: a call (getpass(), trino.auth.BasicAuthentication(…)), a path of
// members followed by a call, an optional member or an index
// (req.headers.authorization?.split(…)), or a path whose last member
// names a credential (var.db_password): what it yields, not a value.
func codeEnd(rest []byte) int {
	k, parts, last := 0, 0, 0
	for k < len(rest) && k < 128 && (isAlpha(rest[k]) || rest[k] == '_') {
		s := k
		for k < len(rest) && isWord(rest[k]) {
			k++
		}
		parts, last = parts+1, s
		switch {
		case k+1 < len(rest) && rest[k] == '.' && isAlpha(rest[k+1]):
			k++
		case k+2 < len(rest) && (rest[k] == '?' && rest[k+1] == '.' || rest[k] == '-' && rest[k+1] == '>'):
			k += 2
		default:
			if k+1 < len(rest) && (rest[k] == '!' || rest[k] == '?') && rest[k+1] == '(' {
				k++ // fetch_env!(…), empty?(…): a call, as Elixir and Ruby name some
			}
			goto end
		}
	}
	return -1
end:
	switch {
	case k < len(rest) && (rest[k] == '(' && (parts > 1 || k >= 3 && allLetters(bytes.ReplaceAll(rest[:k], []byte("_"), nil))) || rest[k] == '[' && parts > 1):
		return refTail(rest, k+1)
	case parts > 1 && k < len(rest) && rest[k] == '?':
		return k
	case parts > 1 && (k == len(rest) || !valueByte[rest[k]]) && classifyKey(rest[last:k]) == kvSecret:
		return k
	case parts > 1 && compared(rest[k:]):
		return k
	case k < len(rest) && rest[k] == '{' && (parts > 1 || isUpper(rest[0]) || string(rest[:k]) == "struct") && literalOpens(rest[k+1:]):
		return k + 1 // MySession{, &http.Cookie{Name: …}, struct{}: a literal a program builds
	case k+2 < len(rest) && rest[k] == '.' && rest[k+1] == '(' && (rest[k+2] == '*' || isAlpha(rest[k+2])):
		return refTail(rest, k+2) // actual.(*gexec.Session): a type assertion
	}
	return -1
}

// literalOpens reports whether rest, after a literal's '{', goes on as
// one: closed at once, ended, or a field's name and ':' (Container{Name:
// x}), not as a password does (Secret{123}).
func literalOpens(rest []byte) bool {
	if len(rest) == 0 || rest[0] == '}' || rest[0] == '\n' {
		return true
	}
	k := 0
	for k < len(rest) && k < 64 && isWord(rest[k]) {
		k++
	}
	return k > 0 && isAlpha(rest[0]) && k < len(rest) && rest[k] == ':'
}

// typeLiteralEnd returns the end of a composite literal's type and its
// '{' at the start of rest ([]string{, map[codes.Code]bool{), or -1.
func typeLiteralEnd(rest []byte) int {
	if !bytes.HasPrefix(rest, []byte("[]")) && !bytes.HasPrefix(rest, []byte("map[")) {
		return -1
	}
	for k := 2; k < len(rest) && k < 96; k++ {
		switch c := rest[k]; {
		case c == '{':
			if k+1 == len(rest) || rest[k+1] == '"' || rest[k+1] == '\'' || rest[k+1] == '}' || literalOpens(rest[k+1:]) {
				return k + 1
			}
			return -1
		case !(isWord(c) || c == '.' || c == '*' || c == '[' || c == ']'):
			return -1
		}
	}
	return -1
}

// compared reports whether rest, after a path of members, compares it
// (user.role === 'manager', ctx.user.id != nil): an expression of code,
// whose value the program computes.
func compared(rest []byte) bool {
	rest = bytes.TrimLeft(rest[:min(len(rest), 6)], " ")
	for _, op := range []string{"===", "!==", "==", "!="} {
		if bytes.HasPrefix(rest, []byte(op)) {
			return true
		}
	}
	return false
}

// noteEnd returns the end of a note in brackets at vs ((not set), [none
// yet]): words and spaces, no value; 0 when there is none.
func noteEnd(src []byte, vs int) int {
	if vs >= len(src) || src[vs] != '(' && src[vs] != '[' {
		return 0
	}
	e, space := vs+1, false
	for e < len(src) && e-vs < 48 && (src[e] >= 'a' && src[e] <= 'z' || src[e] == ' ' || src[e] >= 0x80) {
		space = space || src[e] == ' '
		e++
	}
	if e < len(src) && space && (src[vs] == '(' && src[e] == ')' || src[vs] == '[' && src[e] == ']') {
		return e + 1
	}
	return 0
}

// placeholder reports whether v is a value's placeholder: the letter x,
// a zero or a star repeated for most of it (AKIAXXXXXXXXXXXXXXXX,
// pnu_XXXXXXXX, xoxb-xxxxxxxxx-xxxxxxxxxx).
func placeholder(v []byte) bool {
	n, alnum := 0, 0
	for _, c := range v {
		if c == 'x' || c == 'X' || c == '0' || c == '*' {
			n++
		}
		if isAlnum(c) || c == '*' {
			alnum++
		}
	}
	return n >= 8 && 10*n >= 6*alnum
}

// refTail returns the end of a call's argument or a lookup's path that
// starts at k: to the closing bracket of an open one, or the end of the
// dotted name.
func refTail(rest []byte, k int) int {
	depth := 0
	if k > 0 && (rest[k-1] == '(' || rest[k-1] == '[') {
		depth = 1
	}
	for k < len(rest) {
		c := rest[k]
		switch {
		case c == '(' || c == '[':
			depth++
		case c == ')' || c == ']':
			depth--
			if depth <= 0 {
				return k + 1
			}
		case depth == 0 && !(isWord(c) || c == '.' || c == '-'):
			return k
		}
		k++
	}
	return k
}

// pathTail returns the end of the path that a scheme's reference names
// from k (vault:kv/data/app#token, file:/run/secrets/db): word bytes and
// the separators of a path and its field.
func pathTail(rest []byte, k int) int {
	for k < len(rest) && (isWord(rest[k]) || rest[k] == '/' || rest[k] == '.' || rest[k] == '-' || rest[k] == '#') {
		k++
	}
	return k
}

// maskValue reports whether v is no secret at all: an empty or null
// literal, a mask (********, xxxx, [REDACTED]) or a boolean, in words of
// a state too (enabled, off).
func maskValue(v []byte) bool {
	if len(v) == 0 {
		return true
	}
	switch string(lowerASCII(v)) { // nil, so no case, past 16 bytes
	case "null", "nil", "none", "true", "false", "yes", "no", "on", "off", "enabled", "disabled", "undefined", "redacted", "[redacted]",
		"<redacted>", "(redacted)", "hidden", "masked", "[hidden]", "[filtered]", "filtered", "empty", "unset", "omitted",
		"changeme", "change_me", "change-me", "placeholder", "pass",
		// A type's name in a signature (secret_id: str).
		"str", "string", "int", "bool", "boolean", "bytes", "object", "optional",
		// The type of a public key, as ssh writes it before the key.
		"ssh-rsa", "ssh-ed25519", "ssh-dss",
		// The name of a field, as in secret_key=password: not its value.
		"password", "passwd", "secret", "token", "key":
		return true
	}
	if fieldName(v) || joinedProse(v) || elided(v) || angledWords(v) || placeholderHead(v) {
		return true
	}
	if len(v) >= 3 {
		same := true
		for _, c := range v {
			same = same && c == v[0]
		}
		if same && !isDigit(v[0]) {
			return true // ********, xxxxxxxx
		}
	}
	return placeholder(v)
}

// placeholderHeads start the values a template ships for its user to
// replace (change-me-in-production, replace_me_before_deploy).
var placeholderHeads = []string{"changeme", "change-me", "change_me", "replaceme", "replace-me", "replace_me"}

// placeholderHead reports whether v is a placeholder's head alone or
// followed by more words after '-' or '_'.
func placeholderHead(v []byte) bool {
	for _, h := range placeholderHeads {
		if len(v) > len(h) && hasPrefixFold(v, h) && (v[len(h)] == '-' || v[len(h)] == '_') {
			return true
		}
	}
	return false
}

// angledWords reports whether v is words of letters in angle brackets
// (<hidden>, <oculta>, <your token>): the placeholder a template or a
// masking tool writes in place of a value. A secret written in angle
// brackets holds a digit or a symbol.
func angledWords(v []byte) bool {
	if len(v) < 3 || len(v) > 42 || v[0] != '<' || v[len(v)-1] != '>' {
		return false
	}
	letters := 0
	for _, c := range v[1 : len(v)-1] {
		switch {
		case isAlpha(c) || c >= 0x80:
			letters++
		case c != '-' && c != '_' && c != ' ':
			return false
		}
	}
	return letters >= 2
}

// elided reports whether v is an example cut short: at most six bytes,
// a vendor's prefix or a word, then an ellipsis (AIza..., sk-…). No secret
// is that short; the ellipsis says the rest is left out.
func elided(v []byte) bool {
	return len(v) <= 6+3 && (bytes.HasSuffix(v, []byte("...")) || bytes.HasSuffix(v, []byte("…")))
}

// joinedProse reports whether v is a sentence written as one word
// (changeme-is-not-allowed): three words or more of small letters joined
// by '-' or '_', one of them a function word, which no generated pass
// phrase holds.
func joinedProse(v []byte) bool {
	n, function := 0, false
	for s := 0; s <= len(v); {
		e := s
		for e < len(v) && v[e] >= 'a' && v[e] <= 'z' {
			e++
		}
		if e == s || e < len(v) && v[e] != '-' && v[e] != '_' {
			return false
		}
		function = function || functionWords[string(v[s:e])]
		n, s = n+1, e+1
	}
	return n >= 3 && function
}

var functionWords = wordSet(`is are was be not no the a an to of`)

// fieldName reports whether v is the name of a credential's field or
// setting rather than its value: lower-case words joined by '_', one of
// them a credential word (password_column, db_password).
func fieldName(v []byte) bool {
	if bytes.IndexByte(v, '_') <= 0 || len(v) > 64 {
		return false
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c == '_') {
			return false
		}
	}
	for _, w := range bytes.Split(v, []byte("_")) {
		if credentialWords[string(w)] {
			return true
		}
	}
	return false
}

// pathValue reports whether v names a file rather than holding a secret:
// it starts as a path does, or it is lower-case words joined by '/' (a
// secret's name in a store, prod/db/password; digits and '/' alone are a
// date), or a file name with an extension that keys, certificates and
// configuration files carry.
func pathValue(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	if v[0] == '/' || v[0] == '~' || bytes.HasPrefix(v, []byte("./")) || bytes.HasPrefix(v, []byte("../")) ||
		bytes.HasPrefix(v, []byte("@/")) || bytes.HasPrefix(v, []byte("file:/")) || bytes.HasPrefix(v, []byte("@file:")) {
		return true // @/etc/x, @file:/run/x: a file included; file:///x: a file's URL
	}
	if k := bytes.Index(v, []byte(":/")); k > 0 && k < 16 && allLetters(v[:k]) && !bytes.HasPrefix(v[k:], []byte("://")) {
		return true // a map or a store by its type: hash:/etc/postfix/sasl_passwd
	}
	if bytes.IndexByte(v, '/') > 0 {
		letter := false
		for _, c := range v {
			if !(c >= 'a' && c <= 'z' || isDigit(c) || c == '/' || c == '-' || c == '_' || c == '.') {
				return false
			}
			letter = letter || c >= 'a'
		}
		return letter // 17/08/1994, 3/4: a date or a ratio, not a path
	}
	if d := bytes.LastIndexByte(v, '.'); d > 0 {
		switch string(lowerASCII(v[d+1:])) {
		case "key", "pem", "crt", "cer", "p12", "pfx", "jks", "txt", "json", "yaml", "yml", "gpg", "asc", "env",
			"conf", "cfg", "ini", "csr", "der", "keystore", "kdbx", "pub", "properties", "toml":
			return true
		}
	}
	return false
}

// notASecret reports whether the value at src[vs:ve] is a reference, a
// mask or a path.
func notASecret(src []byte, vs, ve int) bool {
	if e := refEnd(src, vs); e > 0 && e >= ve-1 {
		return true
	}
	return maskValue(src[vs:ve]) || pathValue(src[vs:ve]) || emphasised(src, vs, ve) || aside(src[vs:ve]) || globPattern(src[vs:ve])
}

// aside reports whether v is a word of prose in parentheses, an aside
// after the noun (a semaphore token (blocks)): small letters that read as
// a word. A password in parentheses has a digit, a capital or a symbol.
func aside(v []byte) bool {
	if len(v) < 4 || v[0] != '(' || v[len(v)-1] != ')' || !isLowerWord(v[1:len(v)-1]) {
		return false
	}
	cost, _ := runCost(v[1 : len(v)-1])
	return cost <= wordLimit
}

// globPattern reports whether v is a pattern that matches text, a '*' at
// each end around words (*I/O error*, *ERR max*reached*): what a test
// expects to read, not a value.
func globPattern(v []byte) bool {
	if len(v) < 4 || v[0] != '*' || v[len(v)-1] != '*' {
		return false
	}
	letters := 0
	for _, c := range v {
		if isAlpha(c) {
			letters++
		}
	}
	return bytes.IndexByte(v, ' ') > 0 && letters >= 3
}

// emphasised reports whether the value at src[vs:ve] ends a span of
// Markdown emphasis that opened before it (**Token Exchange**): words of
// prose, set in bold.
func emphasised(src []byte, vs, ve int) bool {
	v := src[vs:ve]
	for _, m := range []string{"**", "__"} {
		if w, ok := bytes.CutSuffix(v, []byte(m)); ok && len(w) > 0 && allLetters(w) && bytes.Contains(src[max(0, vs-64):vs], []byte(m)) {
			return true
		}
	}
	return false
}
