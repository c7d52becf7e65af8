package redact

import "bytes"

// Command lines: the value of a flag that names a secret or an account
// (--password s3cret, -u user:pass, -pS3cret, -a s3cret to redis-cli).
// --key=value is an assignment, handled by redactKV; the arguments of
// login commands are the positions pass's (loginCommands).

// Commands whose short flags -u, -U and -p carry an account and a password.
var credentialCommands = []string{"mysql", "mariadb", "sshpass", " login ", "mongo", "psql", "pg_dump", "pg_restore", "redis-cli", "keydb-cli", "smbclient"}

// flagContext is what a line says about its short flags.
type flagContext struct {
	credentials bool // a command of credentialCommands is on the line
	redis       bool // -a is redis-cli's password
	password    bool // a short -p or -P on the line carries a password: -u and -U carry its account
	// mysql: a MySQL or MariaDB client is on the line, and no sshpass: its
	// -p takes a password attached only (-pS3cret); "-p db" prompts for
	// one and names the database.
	mysql bool
}

// lineContext looks for the commands as they are typed: in lower case.
func lineContext(src []byte) flagContext {
	var fc flagContext
	for _, c := range credentialCommands {
		if bytes.Contains(src, []byte(c)) {
			fc.credentials = true
			break
		}
	}
	fc.redis = bytes.Contains(src, []byte("redis-cli")) || bytes.Contains(src, []byte("keydb-cli"))
	fc.password = passwordFlag(src)
	fc.mysql = (bytes.Contains(src, []byte("mysql")) || bytes.Contains(src, []byte("mariadb"))) && !bytes.Contains(src, []byte("sshpass"))
	return fc
}

// passwordFlag reports whether a short -p or -P of src, standing alone,
// carries a word shaped like a password (-P a7xq9z, not -p 5432 or -p
// ./dir): its account is then the value of the line's -u or -U.
func passwordFlag(src []byte) bool {
	for off := 0; off < len(src); {
		k := bytes.Index(src[off:], []byte(" -"))
		if k < 0 {
			return false
		}
		k += off + 2
		off = k
		if k+1 >= len(src) || src[k] != 'p' && src[k] != 'P' || src[k+1] != ' ' {
			continue
		}
		vs, ve, ok := flagValue(src, k+1)
		if v := src[vs:ve]; ok && len(v) >= 6 && credentialLike(v) && credentialShaped(v) && !portsOnly(v) &&
			!notASecretValue(v) && bytes.IndexByte(v, '/') < 0 {
			return true
		}
	}
	return false
}

func flagBoundary(c byte) bool {
	return c == ' ' || c == '\t' || c == '"' || c == '\'' || c == '(' || c == '['
}

func redactFlags(rw *rewriter) {
	src := rw.src
	var fc flagContext
	ctxDone := false
	for i := 0; i < len(src); i++ {
		if i = nextByte(src, i, '-'); i >= len(src) {
			return
		}
		if i > 0 && !flagBoundary(src[i-1]) {
			continue
		}
		nd := 1
		if i+1 < len(src) && src[i+1] == '-' {
			nd = 2
		}
		ks := i + nd
		ke := ks
		for ke < len(src) && isKeyByte(src[ke]) {
			ke++
		}
		if ke == ks || !isAlpha(src[ks]) {
			i = ke - 1
			continue
		}
		if !ctxDone {
			fc, ctxDone = lineContext(src), true
		}
		name := src[ks:ke]
		assignment := ke < len(src) && src[ke] == '='
		if nd == 1 && ke-ks > 1 && short(name[0]) && (fc.credentials || !assignment) && (classifyKey(name) == kvNone || !flagName(name)) && !joinedWords(name) {
			// -pS3cret, -uroot: a short flag with its value attached; a
			// flag named for a credential is read by its name (-Password,
			// -pw, -User).
			ve := ks + 1
			for ve < len(src) && !isSpace(src[ve]) && src[ve] != '"' && src[ve] != '\'' {
				if escapedBreak(src, ve) {
					break // an escaped line break or tab
				}
				ve++
			}
			if repl := shortValue(name[0], src[ks+1:ve], fc, true); repl != "" {
				rw.mask(ks+1, ve, kindOf(repl))
			}
			i = ve - 1
			continue
		}
		if nd == 1 && ke-ks == 1 && short(name[0]) && ke+1 < len(src) && (src[ke] == '\'' || src[ke] == '"') {
			// -p'S3cret': a short flag with its value attached, quoted.
			vs := ke + 1
			ve := quotedEnd(src, vs, src[ke])
			if repl := shortValue(name[0], src[vs:ve], fc, true); repl != "" {
				rw.mask(vs, ve, kindOf(repl))
			}
			i = ve
			continue
		}
		if assignment {
			i = ke // --key=value: an assignment, redactKV's
			continue
		}
		vs, ve, ok := flagValue(src, ke)
		if !ok {
			i = ke - 1
			continue
		}
		var repl string
		if nd == 1 && ke-ks == 1 {
			repl = shortValue(name[0], src[vs:ve], fc, false)
			if repl == Secret && !fc.credentials && proven(rw, vs, ve) {
				repl = "" // minisign -P <public key>: shaped like a secret, proven public
			}
		} else if repl = longValue(name, src[vs:ve]); repl == Secret && (vs == 0 || src[vs-1] != '"' && src[vs-1] != '\'') {
			if sentenceAfter(src, vs) {
				repl = "" // Error: --password requires a value: prose about the flag
			} else {
				ve = phraseEnd(src, vs, ve) // --password talent velvet potato deputy
			}
		}
		if repl != "" {
			rw.mask(vs, ve, kindOf(repl))
			i = ve - 1
		} else {
			i = ke - 1
		}
	}
}

// flagValue finds the value after a flag ending at ke: the next word, or
// the inside of a quoted one. A flag, a placeholder or nothing is no value.
func flagValue(src []byte, ke int) (vs, ve int, ok bool) {
	if ke >= len(src) || (src[ke] != ' ' && src[ke] != '\t') {
		return 0, 0, false
	}
	vs = ke
	for vs < len(src) && (src[vs] == ' ' || src[vs] == '\t') {
		vs++
	}
	if bytes.HasPrefix(src[vs:], []byte("<<< ")) {
		vs += 4 // --password <<< 'x': a here-string on the flag's input
	}
	if vs >= len(src) || src[vs] == '-' || src[vs] == '(' || isPlaceholder(src[vs:]) {
		return 0, 0, false // (Get-Secret …): a subexpression yields the value
	}
	if q := src[vs]; q == '"' || q == '\'' {
		ve = quotedEnd(src, vs+1, q)
		return vs + 1, ve, ve > vs+1
	}
	ve = vs
	for ve < len(src) && !isSpace(src[ve]) && src[ve] != '"' && src[ve] != '\'' {
		if escapedBreak(src, ve) {
			break // an escaped line break or tab
		}
		ve++
	}
	return vs, ve, ve > vs
}

// quotedEnd returns the end of the value quoted by q that starts at vs:
// its closing quote, or the end of its line.
func quotedEnd(src []byte, vs int, q byte) int {
	ve := vs
	for ve < len(src) && src[ve] != q && src[ve] != '\n' {
		ve++
	}
	return ve
}

// flagName reports whether name, after a single dash, can be a flag's
// name read by its words (-Password, -AdminPw2): no digit stands before a
// letter in it. -pz1m3VcMo8Pw is -p and its value, though its last
// letters spell a credential's word.
func flagName(name []byte) bool {
	digit := false
	for _, c := range name {
		if isDigit(c) {
			digit = true
		} else if digit && isAlpha(c) {
			return false
		}
	}
	return true
}

// joinedWords reports whether name is words of letters joined by '-': a
// long flag written with one dash (-passwd-expiry-time), not a short flag
// with its value attached.
func joinedWords(name []byte) bool {
	dash := false
	for k, c := range name {
		switch {
		case c == '-':
			dash = dash || k > 0
		case !isAlpha(c):
			return false
		}
	}
	return dash
}

func short(c byte) bool { return c == 'p' || c == 'P' || c == 'u' || c == 'U' || c == 'a' }

// portsOnly reports whether v is digits and ':' (a port mapping).
func portsOnly(v []byte) bool {
	for _, c := range v {
		if !isDigit(c) && c != ':' && c != '-' {
			return false
		}
	}
	return true
}

// notASecretValue reports whether the flag value v is a reference, a mask
// or a path.
func notASecretValue(v []byte) bool { return notASecret(v, 0, len(v)) }

// shortValue classifies the value v of a one-letter flag.
func shortValue(flag byte, v []byte, fc flagContext, attached bool) string {
	if len(v) == 0 || isPlaceholder(v) {
		return ""
	}
	switch flag {
	case 'p', 'P':
		// mysql -pS3cret, sshpass -p s3cret, sqlcmd -P s3cret; but mkdir
		// -p logs, ssh -p 2222, docker -p 5432:5432.
		if portsOnly(v) || v[0] == '/' || v[0] == '~' || v[0] == '.' || notASecretValue(v) {
			return ""
		}
		if flag == 'p' && !attached && fc.mysql {
			return "" // mysql -p appdb: a prompt, then the database
		}
		if flag == 'P' && (attached || !credentialLike(v)) {
			// -P is a password to sqlcmd and zip, a profile to mvn (-P prod-eu)
			return ""
		}
		if fc.credentials || credentialShaped(v) {
			return Secret
		}
	case 'a':
		if fc.redis && !attached {
			return Secret
		}
	case 'u', 'U':
		// curl -u user:pass, lftp -u user,pass, smbclient -U user%pass;
		// but go get -u example.com/mod/{a,b}: a module's path, whose
		// first part is a host.
		if k := bytes.IndexByte(v, '/'); k > 0 && bytes.IndexByte(v[:k], '.') > 0 && bytes.IndexAny(v, ":%@\\") < 0 {
			return ""
		}
		if c := bytes.IndexAny(v, ":,%"); c >= 0 {
			if notASecretValue(v) || notASecretValue(v[c+1:]) {
				return "" // user:$PASSWORD, username:password, <user:password>
			}
			return Secret
		}
		// Beside a password, an account of two letters is a product's
		// own (sqlcmd's sa), not a person's.
		if (fc.credentials || fc.password && !attached && len(v) > 2 && accountName(v) && !pathValue(v)) && !allDigits(v) && !roleAccount(v) {
			return User
		}
	}
	return ""
}

// longValue classifies the value v of a flag named name: a secret, an
// account (user:pass is a secret), or nothing.
func longValue(name, v []byte) string {
	switch classifyKey(name) {
	case kvSecret:
		if notASecretValue(v) {
			return ""
		}
		return Secret
	case kvProject:
		if projectID(v) {
			return Account
		}
	case kvAccount:
		return Account
	case kvUser:
		if c := bytes.IndexAny(v, ":,"); c >= 0 {
			if notASecretValue(v) || notASecretValue(v[c+1:]) {
				return ""
			}
			return Secret
		}
		if allDigits(v) && len(v) <= 5 || roleAccount(v) || notASecretValue(v) {
			return "" // --user $KEY_ID: a reference names no one
		}
		return User
	}
	return ""
}

func hasSuffixFold(s []byte, lit string) bool {
	return len(s) >= len(lit) && hasPrefixFold(s[len(s)-len(lit):], lit)
}

// redactSlashFlags reads the flags of Windows commands, written with a
// slash (tool.exe /remote-password x /debug): the value of one named for
// a secret, when it is no path and no flag, on a line that runs a
// program of Windows (a .exe, .cmd or .bat before the flag).
func redactSlashFlags(rw *rewriter) {
	src := rw.src
	program := -2 // where the first program of Windows ends (windowsProgram); -2: not looked for yet
	for off := 0; off < len(src); {
		k := bytes.IndexByte(src[off:], '/')
		if k < 0 {
			return
		}
		i := off + k
		off = i + 1
		if i == 0 || src[i-1] != ' ' && src[i-1] != '\t' {
			continue
		}
		ke := i + 1
		for ke < len(src) && ke-i <= 64 && isKeyByte(src[ke]) {
			ke++
		}
		if ke-i < 3 || !isAlpha(src[i+1]) || classifyKey(src[i+1:ke]) != kvSecret {
			continue
		}
		vs, ve, ok := flagValue(src, ke)
		if !ok || src[vs] == '/' || bytes.IndexByte(src[vs:ve], '/') >= 0 || notASecretValue(src[vs:ve]) {
			continue
		}
		if program == -2 {
			program = windowsProgram(src) // once per text: each flag would read the line again
		}
		if program < 0 || program > i {
			continue
		}
		rw.mask(vs, ve, kSecret)
		off = ve
	}
}

// windowsProgram returns where the first name of a program of Windows in
// src ends (a name ending in .exe, .cmd or .bat, then a space), or -1.
func windowsProgram(src []byte) int {
	end := -1
	for _, ext := range []string{".exe ", ".EXE ", ".cmd ", ".bat "} {
		if k := bytes.Index(src, []byte(ext)); k >= 0 && (end < 0 || k+len(ext) < end) {
			end = k + len(ext)
		}
	}
	return end
}
