package redact

import (
	"bytes"
	"regexp"
	"strings"
)

// PEM blocks.

var pemBegin = []byte("-----BEGIN ")

var litPEMBegin = newLit(string(pemBegin))

func gatePEM(src []byte, f features) bool { return litPEMBegin.in(src, f) }

// redactPEM replaces every PEM block, from its BEGIN line to its END line
// (or to the end of the message when the END line was cut off), because a
// partial key is still a key.
func redactPEM(rw *rewriter) {
	src := rw.src
	for off := 0; off < len(src); {
		i := bytes.Index(src[off:], pemBegin)
		if i < 0 {
			return
		}
		start := off + i
		if e := publicPEMEnd(src, start); e > 0 {
			off = e // a public key or a certificate: nothing secret
			continue
		}
		end := len(src)
		if j := bytes.Index(src[start+len(pemBegin):], []byte("-----END ")); j >= 0 {
			e := start + len(pemBegin) + j + len("-----END ")
			if k := bytes.Index(src[e:], []byte("-----")); k >= 0 {
				end = e + k + 5
			} else {
				end = len(src)
			}
		}
		rw.mask(start, end, kPrivateKey)
		off = end
	}
}

// Stack traces: keep the message line, drop the frames.

func gateStack(src []byte, f features) bool {
	return stackHint(src, f) && stackCutPossible(src, f)
}

// The literals the stack-trace gates look for. Each search is made only
// when the text has the literal's features.
var (
	litTraceback     = newLit("Traceback (most recent call last)")
	litTracebackOpen = newLit("Traceback (")
	litGoroutine     = newLit("goroutine ")
	litAtSpace       = newLit("at ")
	litAtPlus        = newLit("at+")
	stackMarkerLits  = func() (out []lit) {
		for _, m := range stackMarkers {
			out = append(out, newLit(string(m)))
		}
		return out
	}()
	jvmFileLits = []lit{newLit(".java:"), newLit(".kt:"), newLit(".scala:"), newLit("(Native"), newLit("(Unknown")}
	escapedLits = []lit{newLit(`\tat `), newLit(`\n  File `), newLit(`\n    at `)}
)

// stackCutPossible reports whether redactStack can find a cut in src: each
// of its markers is looked for literally, and a JVM frame needs "at"
// followed by a space or '+', and an opening parenthesis. A message with a
// tab or a line break but no frame costs these searches, not the regular
// expressions.
func stackCutPossible(src []byte, f features) bool {
	if litTraceback.in(src, f) || litGoroutine.in(src, f) {
		return true
	}
	for _, m := range stackMarkerLits {
		if m.in(src, f) {
			return true
		}
	}
	return f&fParen != 0 && bytes.IndexByte(src, '(') >= 0 && (litAtSpace.in(src, f) || litAtPlus.in(src, f))
}

// stackHint reports whether src looks like it may hold a stack trace.
func stackHint(src []byte, f features) bool {
	if f&fNewline != 0 && bytes.IndexByte(src, '\n') >= 0 || f&fTab != 0 && bytes.IndexByte(src, '\t') >= 0 ||
		litGoroutine.in(src, f) || litTracebackOpen.in(src, f) {
		return true
	}
	if f&fParen != 0 && bytes.IndexByte(src, '(') >= 0 {
		for _, l := range jvmFileLits {
			if l.in(src, f) {
				return true
			}
		}
	}
	if f&fBackslash != 0 && bytes.IndexByte(src, '\\') >= 0 {
		for _, l := range escapedLits {
			if l.in(src, f) {
				return true
			}
		}
	}
	return false
}

// An inline JVM frame: "at pkg.Class.method(File.java:42)". The capture
// starts at "at" so that the text before the first frame survives.
var jvmFrame = regexp.MustCompile(`(?:^|[\s:;,+])at[ +][\w$.<>/]+\((?:[\w$.-]*:\d+|Native[ +]Method|Unknown[ +]Source)\)`)

// findJVMFrame returns jvmFrame.FindIndex(src), running the expression
// from the first place a match can start: every match starts at a "at"
// followed by a space or '+', and preceded by the start of the text or by
// one of [\s:;,+] where the match starts. The expression's cost grows with
// the length of its input.
func findJVMFrame(src []byte) []int {
	for off := 0; ; {
		k := bytes.Index(src[off:], []byte("at"))
		if k < 0 {
			return nil
		}
		q := off + k
		if q+2 < len(src) && (src[q+2] == ' ' || src[q+2] == '+') && (q == 0 || jvmBoundary(src[q-1])) {
			// From q-1, the boundary byte: '^' can match there, but a
			// boundary byte is no 'a', so no new match starts there.
			start := max(q-1, 0)
			loc := jvmFrame.FindIndex(src[start:])
			if loc == nil {
				return nil
			}
			return []int{start + loc[0], start + loc[1]}
		}
		off = q + 1
	}
}

// jvmBoundary reports whether c is in jvmFrame's [\s:;,+] (\s is
// [\t\n\f\r ]).
func jvmBoundary(c byte) bool {
	switch c {
	case '\t', '\n', '\f', '\r', ' ', ':', ';', ',', '+':
		return true
	}
	return false
}

// Frame markers, raw and as they appear JSON-escaped inside another log
// line.
var stackMarkers = [][]byte{
	[]byte("\n\tat "), []byte("\n    at "), []byte("\n  at "), []byte("\n\t... "), []byte("\n  File \""), []byte("\tat "),
	[]byte(`\n\tat `), []byte(`\tat `), []byte(`\n    at `), []byte(`\n  File \"`),
}

var goroutineHead = regexp.MustCompile(`goroutine \d+ \[`)

var tracebackHead = []byte("Traceback (most recent call last)")

// redactStack cuts a message at its first stack frame and appends <STACK>.
// A Python traceback keeps its last line, which carries the exception.
func redactStack(rw *rewriter) {
	src := rw.src
	cut := -1
	keepLast := false
	consider := func(i int) {
		if i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	// A Python traceback's header line names what follows: it stays.
	tb := bytes.Index(src, tracebackHead)
	if tb >= 0 {
		tb += len(tracebackHead)
		if tb < len(src) && src[tb] == ':' {
			tb++
		}
		if len(bytes.TrimSpace(src[tb:])) > 0 {
			consider(tb)
			keepLast = true
		}
	}
	if loc := goroutineHead.FindIndex(src); loc != nil {
		consider(loc[0])
	}
	for _, m := range stackMarkers {
		consider(bytes.Index(src, m))
	}
	if loc := findJVMFrame(src); loc != nil {
		i := loc[0]
		if i < len(src) && src[i] != 'a' {
			i++
		}
		consider(i)
	}
	if cut < 0 {
		return
	}
	if keepLast && cut != tb {
		keepLast = false
	}
	start := cut
	for start > 0 && isSpace(src[start-1]) {
		start--
	}
	repl := " " + Stack
	if start == 0 {
		repl = Stack
	}
	if keepLast {
		last := bytes.TrimRight(src[cut:], " \t\r\n")
		if j := bytes.LastIndexByte(last, '\n'); j >= 0 {
			line := bytes.TrimLeft(last[j+1:], " \t")
			if len(line) > 0 && !bytes.HasPrefix(line, []byte("File \"")) {
				// The exception line stays, and the other passes read it.
				ls := cut + len(last) - len(line)
				rw.cut(start, ls, repl+" ")
				rw.cut(ls+len(line), len(src), "")
				return
			}
		}
	}
	rw.cut(start, len(src), repl)
}

// SQL literals.

// sqlNeeds are the bigrams of the keywords sqlWord looks for.
var sqlNeeds = [...]features{bigramsOf("select"), bigramsOf("insert"), bigramsOf("update"), bigramsOf("delete"), bigramsOf("where")}

func gateSQL(src []byte, f features) bool {
	if len(src) < 10 {
		return false
	}
	keyword := false
	for _, n := range sqlNeeds {
		keyword = keyword || f&n == n
	}
	if !keyword || !sqlWord(src) {
		return false
	}
	if sqlGate(src, ' ') {
		return true
	}
	// URL-encoded statements (query strings, injection attempts).
	return bytes.IndexByte(src, '+') >= 0 && sqlGate(src, '+')
}

// sqlHead marks the first letters of the leading keywords of SQL, in
// either case.
var sqlHead = func() (t [256]bool) {
	for _, c := range "siudwSIUDW" {
		t[c] = true
	}
	return t
}()

// sqlWord reports whether a word of src that starts at least five bytes
// before its end begins with select, insert, update, delete or where: one
// pass finds it, and the statement is confirmed only for the rare message
// that has one.
func sqlWord(src []byte) bool {
	for w := 0; w+5 <= len(src); w++ {
		c := src[w]
		if !sqlHead[c] || w > 0 && isAlpha(src[w-1]) {
			continue
		}
		var kw string
		switch c | 0x20 {
		case 's':
			kw = "select"
		case 'i':
			kw = "insert"
		case 'u':
			kw = "update"
		case 'd':
			kw = "delete"
		default:
			kw = "where"
		}
		if hasPrefixFold(src[w:], kw) {
			return true
		}
	}
	return false
}

func sqlGate(src []byte, sp byte) bool {
	kw := func(s string) bool {
		if sp != ' ' {
			s = strings.ReplaceAll(s, " ", string(sp))
		}
		return indexFold(src, s) >= 0
	}
	return (kw("select ") && kw(" from ")) || kw("insert into") ||
		(kw("update ") && kw(" set ")) || kw("delete from") ||
		((kw(" where ") || hasPrefixFold(src, "where"+string(sp))) && (bytes.IndexByte(src, '=') >= 0 || kw(" in (") || kw(" like ")))
}

// sqlStart returns where the SQL statement of src begins: the first of
// its leading keywords (select, insert, update, delete, where) that starts
// a word and that the statement's shape follows (sqlShape), with spaces or
// '+' between words; 0 when none does. The literals are read from there,
// so that an apostrophe of the prose before a statement (a name's, a
// possessive's, a wrapping quote) does not pair with the statement's own
// quotes, and the numbers before it (a timestamp, a pid) stay for the
// other passes. A statement that a quote opens is read from that quote.
func sqlStart(src []byte) int {
	// Where each shape's last word stands, looked for once and only when
	// a keyword asks: a keyword's shape follows it when that word stands
	// after it. A text without '+' has no statement of '+'-joined words.
	shapes := [2]sqlShapes{newSQLShapes(src, ' '), newSQLShapes(src, '+')}
	plus := bytes.IndexByte(src, '+') >= 0
	for w := 0; w+5 <= len(src); w++ {
		if c := src[w]; !sqlHead[c] || w > 0 && isWord(src[w-1]) {
			continue
		}
		if shapes[0].follow(w) || plus && shapes[1].follow(w) {
			if w > 0 && src[w-1] == '\'' {
				// A statement in quotes, whose own quotes are doubled
				// (EXECUTE 'UPDATE t SET pw = ''x'''): read from the first.
				return w - 1
			}
			return w
		}
	}
	return 0
}

// sqlShapes finds where the words that follow a statement's keyword last
// stand in a text, with sp between words: from, set, '=', in (, like.
// Each is looked for once, when first asked (last: -2 until then, -1
// where none stands).
type sqlShapes struct {
	src  []byte
	sp   byte
	last [5]int
}

const (
	shapeFrom = iota
	shapeSet
	shapeEq
	shapeIn
	shapeLike
)

// sqlShapeWords are the words of the shapes, with ' ' between words.
var sqlShapeWords = [5]string{" from ", " set ", "=", " in (", " like "}

func newSQLShapes(src []byte, sp byte) sqlShapes {
	return sqlShapes{src: src, sp: sp, last: [5]int{-2, -2, -2, -2, -2}}
}

// at returns where the shape's word k last stands, or -1.
func (sh *sqlShapes) at(k int) int {
	if sh.last[k] == -2 {
		w := sqlShapeWords[k]
		if sh.sp != ' ' {
			w = strings.ReplaceAll(w, " ", string(sh.sp))
		}
		sh.last[k] = lastIndexFold(sh.src, w)
	}
	return sh.last[k]
}

// follow reports whether the text at w starts with a statement's leading
// keyword, separated by the shapes' separator, that the rest of the
// statement's shape follows: the shapes sqlGate looks for anywhere in a
// text.
func (sh *sqlShapes) follow(w int) bool {
	s, sp := sh.src[w:], sh.sp
	head := func(k string) bool {
		return len(s) > len(k) && hasPrefixFold(s, k) && s[len(k)] == sp
	}
	switch {
	case head("select"):
		return sh.at(shapeFrom) > w
	case head("insert"):
		return hasPrefixFold(s[7:], "into")
	case head("update"):
		return sh.at(shapeSet) > w
	case head("delete"):
		return hasPrefixFold(s[7:], "from")
	case head("where"):
		return sh.at(shapeEq) > w || sh.at(shapeIn) > w || sh.at(shapeLike) > w
	}
	return false
}

// lastIndexFold returns the index of the last instance of lit (no capital
// letters) in s in any ASCII case, or -1.
func lastIndexFold(s []byte, lit string) int {
	f := lit[0]
	for i := len(s) - len(lit); i >= 0; i-- {
		if lower(s[i]) == f && hasPrefixFold(s[i:], lit) {
			return i
		}
	}
	return -1
}

// redactSQL replaces quoted string literals with <STR> and free-standing
// number literals with <NUM> in a message that contains a SQL statement.
func redactSQL(rw *rewriter) {
	src := rw.src
	for i := sqlStart(src); i < len(src); i++ {
		c := src[i]
		if c == '\'' {
			j := i + 1
			for j < len(src) {
				if src[j] == '\'' {
					if j+1 < len(src) && src[j+1] == '\'' {
						j += 2
						continue
					}
					break
				}
				j++
			}
			if j >= len(src) {
				// Unterminated literal: the rest is its value.
				rw.mask(i, len(src), kStr)
				return
			}
			rw.mask(i, j+1, kStr)
			i = j
			continue
		}
		if isDigit(c) && (i == 0 || !(isWord(src[i-1]) || src[i-1] == '.' || src[i-1] == '$' || src[i-1] == '<')) {
			j := i
			for j < len(src) && (isDigit(src[j]) || src[j] == '.') {
				j++
			}
			if j < len(src) && (isWord(src[j]) || src[j] == '>') {
				i = j
				continue
			}
			if i > 0 && src[i-1] == '-' && (i == 1 || !isWord(src[i-2])) {
				rw.mask(i-1, j, kNum)
			} else {
				rw.mask(i, j, kNum)
			}
			i = j - 1
		}
	}
}

// publicPEMLabels are the PEM block types that hold nothing secret.
var publicPEMLabels = []string{"PUBLIC KEY", "RSA PUBLIC KEY", "CERTIFICATE", "TRUSTED CERTIFICATE", "X509 CRL",
	"CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST", "PGP PUBLIC KEY BLOCK", "PGP SIGNATURE", "SSH2 PUBLIC KEY"}

// publicPEMEnd returns the end of the public PEM block (a public key, a
// certificate, a signature) whose BEGIN line starts at i: after its END
// line, or, when that was cut off, after the base64 body that follows (its
// lines, raw or escaped in a string), not over the text after it; 0 when
// the block at i is of another type.
func publicPEMEnd(src []byte, i int) int {
	ls := i + len(pemBegin)
	if ls > len(src) || !bytes.HasPrefix(src[i:], pemBegin) {
		return 0
	}
	le := bytes.Index(src[ls:min(len(src), ls+40)], []byte("-----"))
	if le < 0 {
		return 0
	}
	label := src[ls : ls+le]
	public := false
	for _, l := range publicPEMLabels {
		public = public || string(label) == l
	}
	if !public {
		return 0
	}
	// The END line comes before the next block's BEGIN line: looked for
	// there only, so that a text of BEGIN lines is read once.
	end, rest := []byte("-----END "+string(label)+"-----"), src[ls+le:]
	if n := bytes.Index(rest, pemBegin); n >= 0 {
		rest = rest[:n]
	}
	if k := bytes.Index(rest, end); k >= 0 {
		return ls + le + k + len(end)
	}
	k := ls + le + len("-----")
	for k < len(src) {
		switch c := src[k]; {
		case isAlnum(c) || c == '+' || c == '/' || c == '=' || c == ' ' || c == '\t' || c == '\r' || c == '\n':
			k++
		case escapedBreak(src, k):
			k += escapeLen(src, k)
		default:
			return k
		}
	}
	return k
}
