package redact

import (
	"bytes"
	"slices"
	"sync"
)

// Typed placeholders. Each replaces one class of sensitive value, so that
// messages differing only in those values still group into one pattern.
const (
	IP         = "<IP>"          // IPv4/IPv6 address, with port, CIDR or zone
	MAC        = "<MAC>"         // hardware address
	Email      = "<EMAIL>"       // e-mail address
	Secret     = "<SECRET>"      // password, token, key, signature, cookie, session id
	PrivateKey = "<PRIVATE_KEY>" // PEM block
	Host       = "<HOST>"        // host or node name
	Pod        = "<POD>"         // Kubernetes pod name
	Container  = "<CONTAINER>"   // container id
	PID        = "<PID>"         // process or thread id
	User       = "<USER>"        // user or account name
	Card       = "<CARD>"        // payment card number
	Account    = "<ACCOUNT>"     // cloud account id
	Str        = "<STR>"         // SQL string literal
	Num        = "<NUM>"         // SQL number literal
	Stack      = "<STACK>"       // dropped stack-trace frames
	Hex        = "<HEX>"         // long hexadecimal digest or id
)

// Redactor replaces sensitive values in log messages with typed
// placeholders. It keeps scratch buffers between calls, so reuse one per
// goroutine; it is not safe for concurrent use.
type Redactor struct {
	a, b  []byte
	rw    rewriter // reused so that passes do not allocate
	keys  keyCache
	extra []Detector
	spans [][2]int
}

// A Detector finds secrets that the redactor's own rules may miss, such as
// a catalogue of vendor token formats. Spans appends to dst the byte
// ranges [start, end) of msg that are secrets and returns the extended
// slice; it must cost time linear in msg and must not keep msg.
type Detector interface {
	Spans(dst [][2]int, msg []byte) [][2]int
}

// New returns a Redactor. The extra detectors, when given, run on each
// message after the redactor's own passes, on their output, and what they
// find is replaced with Secret: they only add to what the rules replace.
func New(extra ...Detector) *Redactor { return &Redactor{extra: extra} }

// stage is one rewriting pass. It runs only on a text that holds at least
// one of the features any (unless any is 0), all of the features all, and
// passes gate (unless it is nil), a cheap test that the pass can match at
// all; when exact is set, the features alone decide and gate is not
// called. The features are
// found for all passes in one scan. Most messages fail most of these tests
// and are never copied.
type stage struct {
	any, all features
	exact    bool // gate holds exactly when the features do
	gate     func(src []byte, f features) bool
	apply    func(rw *rewriter)
}

// features is a set of the bytes, or classes of bytes, that the passes
// look for, and of the pairs of adjacent bytes (bigrams) that their
// literals hold: one linear scan of a text (scanFeatures) finds them all,
// so that a pass whose trigger is absent costs a bit test, and a literal
// is searched for only in a text that holds all its bigrams.
//
// Features only ever rule a pass or a search out: a gate given a feature
// still looks at the text, and an exact pass finds no trigger in a text
// that lacks it. So a superset of the features of a text is always safe.
type features uint64

const (
	fDigit features = 1 << iota
	fNewline
	fTab
	fBackslash
	fParen        // (
	fG            // g: goroutine
	fDash         // -
	fColon        // :
	fSlash        // /
	fEquals       // =
	fAt           // @
	fDot          // .
	fLowerU       // u: "user "
	fLowerP       // p: "passw"
	fLowerA       // a: "arn:"
	fSQLHead      // s, i, u, d, w in either case: the first letter of a SQL keyword
	nByteFeatures = iota
)

// featureOf maps a byte to the features it carries.
var featureOf = func() (t [256]features) {
	for c := '0'; c <= '9'; c++ {
		t[c] |= fDigit
	}
	t['\n'] |= fNewline
	t['\t'] |= fTab
	t['\\'] |= fBackslash
	t['('] |= fParen
	t['g'] |= fG
	t['-'] |= fDash
	t[':'] |= fColon
	t['/'] |= fSlash
	t['='] |= fEquals
	t['@'] |= fAt
	t['.'] |= fDot
	t['u'] |= fLowerU
	t['p'] |= fLowerP
	t['a'] |= fLowerA
	for _, c := range "siudwSIUDW" {
		t[c] |= fSQLHead
	}
	return t
}()

// The bigrams scanFeatures marks, one feature each: the first byte and the
// second, where a letter stands for both its cases and a space also for
// '+' (the space of URL-encoded text), so that the case-insensitive
// phrases and keywords have them too. They are the rarer bigrams of the
// phrases (hosts.go), SQL keywords and the gates' literals. A bigram with
// first byte 'W' is any word byte followed by the second.
var bigramDefs = []string{
	// phrases: user, pid, thread, lwp, password for, publickey for, sudo:,
	// (to, /home/, /Users/, \Users\, name[
	"us", "er", "r ", "id", "d ", "th", "hr", "lw", "wp", "sw", "wo", "pu", "ck", "su", "ud", "o:", "(t",
	"/h", "ho", "/u", "\\u", "W[",
	// SQL keywords: select, insert, update, delete, where
	"se", "el", "ct", "in", "ns", "rt", "up", "pd", "at", "de", "et", "wh", "he",
	// literals: passw, goroutine, Traceback, ://, arn:, -----BEGIN, .java:, (Native, (Unknown
	"pa", "go", "tr", ":/", "//", "n:", "--", ".j", "(n", "(u",
}

// bigramFirst[c] has the features of the bigrams whose first byte is c,
// bigramSecond[c] those whose second byte is c: a bigram is in a text
// when a byte with it in bigramFirst is followed by one with it in
// bigramSecond.
var bigramFirst, bigramSecond = func() (first, second [256]features) {
	if nByteFeatures+len(bigramDefs) > 64 {
		panic("redact: too many bigrams")
	}
	expand := func(c byte) []byte {
		switch {
		case c >= 'a' && c <= 'z':
			return []byte{c, c - 32}
		case c == ' ':
			return []byte{' ', '+'}
		}
		return []byte{c}
	}
	for k, d := range bigramDefs {
		bit := features(1) << (nByteFeatures + k)
		firsts := expand(d[0])
		if d[0] == 'W' {
			firsts = nil
			for c := 0; c < 256; c++ {
				if isWord(byte(c)) {
					firsts = append(firsts, byte(c))
				}
			}
		}
		for _, c := range firsts {
			first[c] |= bit
		}
		for _, c := range expand(d[1]) {
			second[c] |= bit
		}
	}
	return first, second
}()

// bigramMask is the set of all bigram features.
const bigramMask = ^features(0) &^ (1<<nByteFeatures - 1)

// scanTable folds the byte features into the bigram tables, so that a
// byte costs two loads: after[c] is bigramFirst[c] with every byte
// feature, at[c] bigramSecond[c] with the features of c, and
// after[prev]&at[c] holds both the features of c and the bigrams that
// prev and c make.
var scanTable = func() (t [256]struct{ after, at features }) {
	for c := range t {
		t[c].after = bigramFirst[c] | ^bigramMask
		t[c].at = bigramSecond[c] | featureOf[c]
	}
	return t
}()

// scanFeatures returns the features of src.
func scanFeatures(src []byte) features {
	var f features
	prev := ^bigramMask
	for _, c := range src {
		e := &scanTable[c]
		f |= prev & e.at
		prev = e.after
	}
	return f
}

// bigramsOf returns the bigram features of s: those a text holding s, in
// any case and with '+' for its spaces, must have.
func bigramsOf(s string) features { return scanFeatures([]byte(s)) & bigramMask }

var stages = []stage{
	{all: fDash, gate: gatePEM, apply: redactPEM},
	{any: fNewline | fTab | fBackslash | fParen | fG, gate: gateStack, apply: redactStack},
	{any: fSQLHead, gate: gateSQL, apply: redactSQL},
	{all: fColon | fSlash, gate: gateURL, apply: redactURL},
	{any: fEquals | fColon, exact: true, gate: gateKV, apply: redactKV},
	{gate: gatePositions, apply: redactPositions},
	{any: fDash, exact: true, gate: gateFlags, apply: redactFlags},
	{any: fLowerU | fLowerP, gate: gatePositional, apply: redactPositional},
	{apply: redactTokens},
	{any: fAt, exact: true, gate: gateEmail, apply: redactEmail},
	// An IPv4 address has dots, an IPv6 one colons, a MAC address one of
	// colons, dashes or dots.
	{any: fColon | fDot | fDash, apply: redactAddrs},
	{any: fDot | fDash | fColon, exact: true, gate: gateHosts, apply: redactHosts},
	{gate: gatePhrases, apply: redactPhrases},
	{all: fLowerA | fColon, gate: gateARN, apply: redactARN},
	{any: fDigit, exact: true, gate: gateDigits, apply: redactCards},
}

// wants reports whether a text with features f passes the feature tests of
// s.
func (s *stage) wants(f features) bool {
	return (s.any == 0 || f&s.any != 0) && f&s.all == s.all
}

// placeholderFeatures are the features a pass can add to a text. Every
// byte of its output is a byte of its input or of a placeholder, and the
// stack-trace pass adds a space: so the new features are those of the
// placeholders and the bigrams that '<', '>' or a space can make with any
// neighbour.
var placeholderFeatures = func() features {
	f := bigramSecond['<'] | bigramFirst['>'] | bigramFirst[' '] | bigramSecond[' ']
	for _, p := range []string{IP, MAC, Email, Secret, PrivateKey, Host, Pod, Container, PID, User, Card, Account, Str, Num, Stack, Hex} {
		f |= scanFeatures([]byte(p))
	}
	return f
}()

// lit is a literal that a gate looks for, with its features: a text whose
// features lack them cannot hold it, and is not searched.
type lit struct {
	s []byte
	f features
}

func newLit(s string) lit { return lit{[]byte(s), scanFeatures([]byte(s))} }

// in reports whether src, whose features are (a superset of) f, holds l.
func (l lit) in(src []byte, f features) bool {
	return f&l.f == l.f && bytes.Contains(src, l.s)
}

// Append appends the redacted form of msg to dst and returns the extended
// buffer. msg is not modified and may alias nothing in dst.
func (r *Redactor) Append(dst, msg []byte) []byte {
	cur := msg
	useA := true
	feat := scanFeatures(cur)
	// After a rewrite, feat is a superset of the features of cur (see
	// placeholderFeatures), made exact again only when a pass it does not
	// rule out needs them.
	stale := false
	for i := range stages {
		s := &stages[i]
		if !s.wants(feat) {
			continue
		}
		if stale && (s.any|s.all != 0 || s.gate != nil) {
			feat, stale = scanFeatures(cur), false
			if !s.wants(feat) {
				continue
			}
		}
		if s.gate != nil && !s.exact && !s.gate(cur, feat) {
			continue
		}
		var out []byte
		if useA {
			out = r.a[:0]
		} else {
			out = r.b[:0]
		}
		rw := &r.rw
		// Field by field: a struct copy would take the bulk write barrier.
		rw.src, rw.out, rw.last, rw.changed, rw.keys = cur, out, 0, false, &r.keys
		s.apply(rw)
		if !rw.changed {
			continue
		}
		res := rw.finish()
		if useA {
			r.a = res
		} else {
			r.b = res
		}
		cur = res
		useA = !useA
		feat |= placeholderFeatures
		stale = true
	}
	if len(r.extra) > 0 {
		buf := &r.a
		if !useA {
			buf = &r.b
		}
		cur = r.detect(cur, buf)
	}
	return append(dst, cur...)
}

var pool = sync.Pool{New: func() any { return New() }}

// AppendRedacted appends the redacted form of msg to dst, using a pooled
// Redactor.
func AppendRedacted(dst, msg []byte) []byte {
	r := pool.Get().(*Redactor)
	dst = r.Append(dst, msg)
	pool.Put(r)
	return dst
}

// String returns the redacted form of s.
func String(s string) string {
	return string(AppendRedacted(nil, []byte(s)))
}

// rewriter builds the output of one pass: src with some ranges replaced.
// Ranges must be replaced in increasing, non-overlapping order.
type rewriter struct {
	src     []byte
	out     []byte
	last    int
	changed bool
	keys    *keyCache // the Redactor's, or nil
}

func (rw *rewriter) replace(start, end int, repl string) {
	if start < rw.last || end < start {
		return
	}
	rw.out = append(rw.out, rw.src[rw.last:start]...)
	rw.out = append(rw.out, repl...)
	rw.last = end
	rw.changed = true
}

func (rw *rewriter) finish() []byte {
	return append(rw.out, rw.src[rw.last:]...)
}

// Byte classes.

const (
	cDigit = 1 << iota
	cAlpha
	cHex
	cUnder
	cToken // - + / = .
)

var class = func() (t [256]uint8) {
	for c := '0'; c <= '9'; c++ {
		t[c] = cDigit | cHex
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = cAlpha
		t[c-32] = cAlpha
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] |= cHex
		t[c-32] |= cHex
	}
	t['_'] = cUnder
	for _, c := range "-+/=." {
		t[c] = cToken
	}
	return t
}()

func isDigit(c byte) bool { return class[c]&cDigit != 0 }
func isAlpha(c byte) bool { return class[c]&cAlpha != 0 }
func isAlnum(c byte) bool { return class[c]&(cDigit|cAlpha) != 0 }
func isWord(c byte) bool  { return class[c]&(cDigit|cAlpha|cUnder) != 0 }
func isHex(c byte) bool   { return class[c]&cHex != 0 }
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 32
	}
	return c
}

// indexFold returns the index of the ASCII lower-case literal lit in s,
// ignoring ASCII case, or -1.
func indexFold(s []byte, lit string) int {
	if len(lit) == 0 {
		return 0
	}
	f := lit[0]
	F := f
	if f >= 'a' && f <= 'z' {
		F = f - 32
	}
	for i := 0; i+len(lit) <= len(s); i++ {
		c := s[i]
		if c != f && c != F {
			continue
		}
		if hasPrefixFold(s[i:], lit) {
			return i
		}
	}
	return -1
}

// hasPrefixFold reports whether s starts with the lower-case literal lit,
// ignoring ASCII case.
func hasPrefixFold(s []byte, lit string) bool {
	if len(s) < len(lit) {
		return false
	}
	for j := 0; j < len(lit); j++ {
		if lower(s[j]) != lit[j] {
			return false
		}
	}
	return true
}

// isPlaceholder reports whether s starts with one of our placeholders, so
// that later passes leave earlier replacements alone.
func isPlaceholder(s []byte) bool {
	if len(s) < 3 || s[0] != '<' {
		return false
	}
	for i := 1; i < len(s) && i < 16; i++ {
		c := s[i]
		if c == '>' {
			return i > 1
		}
		if !(c >= 'A' && c <= 'Z') && c != '_' {
			return false
		}
	}
	return false
}

func gateHosts(src []byte, _ features) bool {
	return bytes.IndexByte(src, '.') >= 0 || bytes.IndexByte(src, '-') >= 0 || bytes.IndexByte(src, ':') >= 0
}
func gateEmail(src []byte, _ features) bool { return bytes.IndexByte(src, '@') >= 0 }

var litScheme, litARN = newLit("://"), newLit("arn:")

func gateURL(src []byte, f features) bool { return litScheme.in(src, f) }
func gateARN(src []byte, f features) bool { return litARN.in(src, f) }
func gateDigits(src []byte, _ features) bool {
	return bytes.IndexAny(src, "0123456789") >= 0
}
func gateKV(src []byte, _ features) bool {
	return bytes.IndexByte(src, '=') >= 0 || bytes.IndexByte(src, ':') >= 0
}

// detect replaces what the extra detectors find in msg with Secret, into
// *buf (which msg does not alias), and returns the result: msg itself when
// they find nothing.
func (r *Redactor) detect(msg []byte, buf *[]byte) []byte {
	r.spans = r.spans[:0]
	for _, d := range r.extra {
		r.spans = d.Spans(r.spans, msg)
	}
	if len(r.spans) == 0 {
		return msg
	}
	slices.SortFunc(r.spans, func(a, b [2]int) int { return a[0] - b[0] })
	out := (*buf)[:0]
	last := 0
	for _, sp := range r.spans {
		s, e := max(sp[0], last), min(sp[1], len(msg))
		if e <= s {
			continue
		}
		out = append(out, msg[last:s]...)
		out = append(out, Secret...)
		last = e
	}
	*buf = append(out, msg[last:]...)
	return *buf
}
