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
	{"${{", "}}"}, {"${", "}"}, {"$(", ")"}, {"{{", "}}"}, {"%(", ")"}, {"((", "))"}, {"#{", "}"}, {"[[", "]]"},
}

// refCalls are the calls and lookups that read a secret from somewhere
// else: the value is the name of the place, not the secret.
var refCalls = []string{
	"os.getenv(", "os.environ[", "os.environ.get(", "getenv(", "system.getenv(", "env[", "env.fetch(",
	"process.env.", "secrets.", "vars.", "env.", "environment.getenvironmentvariable(", "lookup(",
	"!ref ", "!sub ", "!vault", "!secret ", "!getatt ", "vault:", "secretref:", "valuefrom:", "file:",
}

// refEnd returns the end of the reference that starts src[i:], or -1.
func refEnd(src []byte, i int) int {
	if i >= len(src) {
		return -1
	}
	rest := src[i:min(len(src), i+maxRef)]
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
	switch c := rest[0]; {
	case c == '$':
		// $PASSWORD, $db_pass: an identifier of one case.
		// $PASSWORD, $db_pass, $token: an identifier of one case, with no
		// digit unless it is upper case or holds '_' (a password may start
		// with '$': $tr0ng is not a variable).
		e := 1
		up, lo, digit, under := false, false, false, false
		for e < len(rest) && isWord(rest[e]) {
			c := rest[e]
			up = up || c >= 'A' && c <= 'Z'
			lo = lo || c >= 'a' && c <= 'z'
			digit = digit || isDigit(c)
			under = under || c == '_'
			e++
		}
		if e >= 3 && (isAlpha(rest[1]) || rest[1] == '_') && !(up && lo) && (!digit || !lo || under) &&
			(e == len(rest) || !valueByte[rest[e]] || rest[e] == '.') {
			return i + e
		}
		return -1
	case c == '<':
		// <password>, <your-token-here>
		e := 1
		for e < len(rest) && e < 64 && (isWord(rest[e]) || rest[e] == '-' || rest[e] == ' ' || rest[e] == '.') {
			e++
		}
		if e > 2 && e < len(rest) && rest[e] == '>' {
			return i + e + 1
		}
		return -1
	}
	for _, call := range refCalls {
		if hasPrefixFold(rest, call) {
			return i + refTail(rest, len(call))
		}
	}
	return -1
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

// maskValue reports whether v is no secret at all: an empty or null
// literal, a mask (********, xxxx, [REDACTED]) or a boolean.
func maskValue(v []byte) bool {
	if len(v) == 0 {
		return true
	}
	switch string(lowerASCII(v)) { // nil, so no case, past 16 bytes
	case "null", "nil", "none", "true", "false", "yes", "no", "undefined", "redacted", "[redacted]",
		"<redacted>", "(redacted)", "hidden", "masked", "[hidden]", "[filtered]", "filtered", "empty", "unset", "omitted",
		"changeme", "change_me", "change-me", "placeholder",
		// The name of a field, as in secret_key=password: not its value.
		"password", "passwd", "secret", "token", "key":
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
	return false
}

// pathValue reports whether v names a file rather than holding a secret:
// it starts as a path does, or it is lower-case words joined by '/' (a
// secret's name in a store, prod/db/password), or a file name with an
// extension that keys, certificates and configuration files carry.
func pathValue(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	if v[0] == '/' || v[0] == '~' || bytes.HasPrefix(v, []byte("./")) || bytes.HasPrefix(v, []byte("../")) {
		return true
	}
	if bytes.IndexByte(v, '/') > 0 {
		for _, c := range v {
			if !(c >= 'a' && c <= 'z' || isDigit(c) || c == '/' || c == '-' || c == '_' || c == '.') {
				return false
			}
		}
		return true
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
	return maskValue(src[vs:ve]) || pathValue(src[vs:ve])
}
