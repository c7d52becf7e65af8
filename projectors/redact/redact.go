package redact

import (
	"bytes"
	"hash/maphash"
	"slices"
	"sync"
	"unsafe"

	"github.com/toolcanon/toolcanon/canonical"
)

// The placeholders that canonical.Placeholders writes for each class of
// masked value, and Stack, which replaces dropped stack-trace frames.
const (
	IP         = "<IP>"          // IPv4/IPv6 address, with port, CIDR or zone
	MAC        = "<MAC>"         // hardware address
	Email      = "<EMAIL>"       // e-mail address
	Secret     = "<SECRET>"      // password, token, key, signature, cookie, session id
	ID         = "<ID>"          // a generated value that its context does not prove public
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
	Stack      = "<STACK>"       // dropped stack-trace frames: not a value, never a handle
)

// The kinds the passes name, short.
const (
	kIP, kMAC, kEmail, kSecret, kID                = canonical.KindIP, canonical.KindMAC, canonical.KindEmail, canonical.KindSecret, canonical.KindID
	kPrivateKey, kHost, kPod                       = canonical.KindPrivateKey, canonical.KindHost, canonical.KindPod
	kContainer, kPID, kUser, kCard                 = canonical.KindContainer, canonical.KindPID, canonical.KindUser, canonical.KindCard
	kAccount, kStr, kNum                           = canonical.KindAccount, canonical.KindStr, canonical.KindNum
	kStack                          canonical.Kind = "STACK" // a literal cut, not a masked value
)

// Redactor masks sensitive values in log messages. It keeps scratch
// buffers between calls, so reuse one per goroutine; it is not safe for
// concurrent use.
type Redactor struct {
	spans []span
	keep  [][2]int
	rw    rewriter
	keys  keyCache
	extra []Detector
	ext   [][2]int
	memo  memo
}

// memo keeps, for the messages a Redactor has read, the ranges its passes
// masked (see Remember). A message is found by its hash and checked byte
// for byte: of two messages of one hash, one is remembered.
type memo struct {
	seed        maphash.Seed
	at          map[uint64]int32 // a message's hash: its entry
	entries     []memoEntry
	text        []byte // the messages
	spans       []span // their ranges
	used, limit int    // bytes taken, of at most limit
	looked, hit int    // messages looked for, and found, in this window
	skip        int    // messages to let pass before looking again
}

// The memo looks for messages in windows of window messages: after a
// window that found fewer than one in hitRatio, it lets skipAfter
// messages pass unlooked for, as a text that does not repeat its messages
// would pay for the looking on top of their reading.
const window, hitRatio, skipAfter = 1024, 32, 4096

// memoEntry is a remembered message: its bytes in memo.text and its
// ranges in memo.spans.
type memoEntry struct{ text, spans [2]int32 }

// Message bytes beyond which a message is not remembered: long messages
// repeat less, and would take the room of many short ones.
const maxRememberedMessage = 4 << 10

// spanBytes is what a remembered range takes, and entryBytes what a
// remembered message takes besides its bytes and its ranges (its entry and
// its place in the map).
const spanBytes, entryBytes = int(unsafe.Sizeof(span{})), 32

// Remember makes r keep the ranges its own passes mask in the messages it
// reads, up to about maxBytes of messages and ranges in all, so that a
// message met again is masked without being read again: a service's log
// repeats many of its messages word for word. The output is the same
// bytes, and the Masker is called for the same values in the same order,
// as without it; the extra detectors read every message every time. A
// message longer than 4 KiB is not kept. After 1,024 messages of which
// fewer than one in 32 were found again, the next 4,096 are read without
// being looked for: a text that does not repeat its messages pays little
// for the memo. Remember(0) stops it; Forget drops what r keeps. r keeps
// the messages' bytes, secrets included, until then: call Forget when the
// text they came from is done.
func (r *Redactor) Remember(maxBytes int) {
	if maxBytes <= 0 {
		r.memo = memo{}
		return
	}
	r.Forget()
	if r.memo.at == nil {
		r.memo.at, r.memo.seed = make(map[uint64]int32), maphash.MakeSeed()
	}
	r.memo.limit = maxBytes
}

// Forget drops the messages and ranges r keeps (see Remember); r goes on
// remembering new ones, in as many bytes as Remember gave.
func (r *Redactor) Forget() {
	m := &r.memo
	clear(m.at)
	clear(m.text)
	clear(m.spans)
	m.entries, m.text, m.spans, m.used = m.entries[:0], m.text[:0], m.spans[:0], 0
	m.looked, m.hit, m.skip = 0, 0, 0
}

// look returns msg's hash and true when the memo looks for msg, and
// keeps it after its reading (keep): it is on, msg is short enough, and
// no stretch of skipped messages runs.
func (m *memo) look(msg []byte) (uint64, bool) {
	if m.limit == 0 || len(msg) > maxRememberedMessage {
		return 0, false
	}
	if m.looked == window {
		if m.hit*hitRatio < m.looked {
			m.skip = skipAfter
		}
		m.looked, m.hit = 0, 0
	}
	if m.skip > 0 {
		m.skip--
		return 0, false
	}
	m.looked++
	return maphash.Bytes(m.seed, msg), true
}

// find appends to dst[:0] the ranges remembered for msg, of hash h, and
// reports whether there were.
func (m *memo) find(dst []span, h uint64, msg []byte) ([]span, bool) {
	i, ok := m.at[h]
	if !ok {
		return dst, false
	}
	e := m.entries[i]
	if !bytes.Equal(m.text[e.text[0]:e.text[1]], msg) {
		return dst, false
	}
	m.hit++
	return append(dst[:0], m.spans[e.spans[0]:e.spans[1]]...), true
}

// keep remembers spans as the ranges masked in msg, of hash h, if there
// is room and no other message of that hash is remembered.
func (m *memo) keep(h uint64, msg []byte, spans []span) {
	cost := len(msg) + entryBytes + len(spans)*spanBytes
	if m.used+cost > m.limit {
		return
	}
	if _, taken := m.at[h]; taken {
		return
	}
	e := memoEntry{text: [2]int32{int32(len(m.text)), int32(len(m.text) + len(msg))},
		spans: [2]int32{int32(len(m.spans)), int32(len(m.spans) + len(spans))}}
	m.text = append(m.text, msg...)
	m.spans = append(m.spans, spans...)
	m.at[h] = int32(len(m.entries))
	m.entries = append(m.entries, e)
	m.used += cost
}

// A Detector finds secrets that the redactor's own rules may miss, such as
// a catalogue of vendor token formats. Spans appends to dst the byte
// ranges [start, end) of msg that are secrets and returns the extended
// slice; it must cost time linear in msg and must not keep msg.
type Detector interface {
	Spans(dst [][2]int, msg []byte) [][2]int
}

// New returns a Redactor. The extra detectors, when given, run on each
// message besides the redactor's own passes, and what they find is masked
// as a secret: they only add to what the passes mask.
func New(extra ...Detector) *Redactor { return &Redactor{extra: extra} }

// span is a range of the message that a pass masks, as a value of kind,
// or cuts (kind kStack), writing lit in its place.
type span struct {
	start, end int
	kind       canonical.Kind
	lit        string
}

// stage is one pass. It runs only on a text that holds at least
// one of the features any (unless any is 0), all of the features all, and
// passes gate (unless it is nil), a cheap test that the pass can match at
// all. The features are found for all passes in one scan.
type stage struct {
	any, all features
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
	fNonASCII     // a byte of a non-ASCII character
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
	for c := 0x80; c < 0x100; c++ {
		t[c] |= fNonASCII
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
	// a UNC path: \\host\share
	"\\\\",
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
	{any: fEquals | fColon, apply: redactKV},
	{all: fParen, gate: gateCalls, apply: redactCalls},
	{gate: gatePositions, apply: redactPositions},
	{any: fDash, apply: redactFlags},
	{all: fSlash, apply: redactSlashFlags},
	{any: fAt, apply: redactEmail},
	// An IPv4 address has dots, an IPv6 one colons, a MAC address one of
	// colons, dashes or dots.
	{any: fColon | fDot | fDash, apply: redactAddrs},
	{any: fDot | fDash | fColon, apply: redactHosts},
	{gate: gatePhrases, apply: redactPhrases},
	{gate: gateHandles, apply: redactHandles},
	{all: fLowerA | fColon, gate: gateARN, apply: redactARN},
	{any: fDigit, apply: redactCards},
	{any: fDigit, apply: redactPhones},
	{all: fDigit, any: fDash | fDot, apply: redactNorthAmerican},
	{apply: redactPersons},
	{any: fAt, apply: redactAddressNames},
	// A code's noun is one of announceStarts: the governed pass reads
	// what the announcement's gate lets through.
	{gate: gateAnnounced, apply: func(rw *rewriter) { redactAnnounced(rw); rw.last = 0; redactGoverned(rw) }},
	{gate: gateStdin, apply: redactStdin},
	{any: fDigit, gate: gateKeypad, apply: redactKeypad},
	{apply: redactHumanShaped},
	// Last, so that a value the passes above name keeps their kind.
	{apply: redactGenerated},
}

// wants reports whether a text with features f passes the feature tests of
// s.
func (s *stage) wants(f features) bool {
	return (s.any == 0 || f&s.any != 0) && f&s.all == s.all
}

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

// Append appends the redacted form of msg to dst, each masked value
// written as its placeholder (<SECRET>, <IP>, …), and returns the extended
// buffer. msg is not modified.
func (r *Redactor) Append(dst, msg []byte) []byte {
	return r.AppendMasked(dst, msg, canonical.Placeholders)
}

// AppendMasked appends the redacted form of msg to dst, each masked value
// written by m (nil: canonical.Placeholders), and returns the extended
// buffer. A well-formed handle in msg (<KIND:xxxxxxxx>) is copied as it
// is: it is never masked again, but it proves nothing about its
// neighbours. msg is not modified.
//
// Every pass reads msg as it is and only names the ranges it masks; the
// output is written once, with overlapping ranges joined.
func (r *Redactor) AppendMasked(dst, msg []byte, m canonical.Masker) []byte {
	m = canonical.MaskerOf(m)
	h, looked := r.memo.look(msg)
	if looked {
		var found bool
		if r.spans, found = r.memo.find(r.spans, h, msg); found {
			return r.finish(dst, msg, m)
		}
	}
	feat := scanFeatures(msg)
	rw := &r.rw
	rw.src, rw.spans, rw.keys, rw.feat, rw.public, rw.refs, rw.snmp = msg, r.spans[:0], &r.keys, feat, rw.public[:0], 0, 0
	rw.roles = rw.roles[:0]
	st := stages // loaded once, not again after every pass
	for i := range st {
		s := &st[i]
		if !s.wants(feat) || s.gate != nil && !s.gate(msg, feat) {
			continue
		}
		rw.last = 0
		s.apply(rw)
	}
	rw.afterPasses()
	r.spans, rw.src = rw.spans, nil
	if looked {
		r.memo.keep(h, msg, r.spans)
	}
	return r.finish(dst, msg, m)
}

// finish appends msg to dst with the ranges of r.spans, the passes', and
// those of r's extra detectors masked by m.
func (r *Redactor) finish(dst, msg []byte, m canonical.Masker) []byte {
	for _, d := range r.extra {
		r.ext = d.Spans(r.ext[:0], msg)
		for _, sp := range r.ext {
			if s, e := max(sp[0], 0), min(sp[1], len(msg)); s < e {
				r.spans = append(r.spans, span{start: s, end: e, kind: kSecret})
			}
		}
	}
	return r.write(dst, msg, m)
}

// afterPasses reads the masks every pass made, as a whole: a pass phrase
// widened over its words, the values before masked secrets, the names
// e-mail addresses spell, the accounts a configuration keeps.
func (rw *rewriter) afterPasses() {
	rw.extendTitlePhrases()
	// Whether a secret is masked, read once: the steps below add one only
	// beside another (formerValues).
	secret := slices.ContainsFunc(rw.spans, func(sp span) bool { return sp.kind == kSecret })
	if secret {
		rw.exposedRoleAccounts()
	}
	rw.formerValues()
	rw.downLevelNames()
	rw.namesAddressesSpell()
	if !secret {
		rw.keepConfigAccounts()
	}
}

// write appends msg to dst with the ranges of r.spans masked by m.
func (r *Redactor) write(dst, msg []byte, m canonical.Masker) []byte {
	if len(r.spans) == 0 {
		return append(dst, msg...)
	}
	r.keep = appendHandles(r.keep[:0], msg)
	slices.SortStableFunc(r.spans, func(a, b span) int { return a.start - b.start })
	last := 0
	for i := 0; i < len(r.spans); {
		sp := r.spans[i]
		// Join the ranges that overlap this one. A secret stays a secret
		// whatever else it holds.
		for i++; i < len(r.spans) && r.spans[i].start < sp.end; i++ {
			o := r.spans[i]
			sp.end = max(sp.end, o.end)
			if sp.kind != kStack && (o.kind == kSecret || o.kind == kPrivateKey) && sp.kind != kPrivateKey {
				sp.kind = o.kind
			}
		}
		if sp.start < last {
			continue
		}
		dst = append(dst, msg[last:sp.start]...)
		dst = r.emit(dst, msg, sp, m)
		last = sp.end
	}
	return append(dst, msg[last:]...)
}

// emit appends what stands for the masked range sp of msg: its literal, or
// what m writes for it, the handles inside it copied as they are.
func (r *Redactor) emit(dst, msg []byte, sp span, m canonical.Masker) []byte {
	if sp.kind == kStack {
		return append(dst, sp.lit...)
	}
	s := sp.start
	for _, h := range r.keep {
		if h[1] <= s || h[0] >= sp.end {
			continue
		}
		if h[0] > s {
			dst = m.AppendMask(dst, sp.kind, msg[s:h[0]])
		}
		dst = append(dst, msg[max(h[0], s):min(h[1], sp.end)]...)
		s = min(h[1], sp.end)
	}
	if s < sp.end {
		dst = m.AppendMask(dst, sp.kind, msg[s:sp.end])
	}
	return dst
}

// appendHandles appends the ranges of the handles in msg to dst.
func appendHandles(dst [][2]int, msg []byte) [][2]int {
	for off := 0; off < len(msg); {
		k := bytes.IndexByte(msg[off:], '<')
		if k < 0 {
			break
		}
		if i, n := canonical.IndexHandle(msg[off+k : min(len(msg), off+k+canonical.MaxHandleLen)]); i == 0 {
			dst = append(dst, [2]int{off + k, off + k + n})
			off += k + n
			continue
		}
		off += k + 1
	}
	return dst
}

var pool = sync.Pool{New: func() any { return New() }}

// AppendRedacted appends the redacted form of msg to dst, with
// placeholders, using a pooled Redactor.
func AppendRedacted(dst, msg []byte) []byte { return AppendMasked(dst, msg, nil) }

// AppendMasked appends the redacted form of msg to dst, each masked value
// written by m (nil: placeholders), using a pooled Redactor.
func AppendMasked(dst, msg []byte, m canonical.Masker) []byte {
	r := pool.Get().(*Redactor)
	dst = r.AppendMasked(dst, msg, m)
	pool.Put(r)
	return dst
}

// String returns the redacted form of s, with placeholders.
func String(s string) string {
	return string(AppendRedacted(nil, []byte(s)))
}

// rewriter collects the ranges one pass masks in src, in increasing,
// non-overlapping order.
type rewriter struct {
	src   []byte
	spans []span
	last  int       // end of the pass's last range
	keys  *keyCache // the Redactor's, or nil
	feat  features  // of src; 0: not known
	// public are the ranges proofs made public (see proven).
	public [][2]int
	// roles are the accounts kept for being named for a role (see
	// exposedRoleAccounts).
	roles [][2]int
	// refs caches credentialsReferenced(src), snmp whether src names
	// SNMP: 0 not known, 1 yes, -1 no.
	refs, snmp int8
}

// namesSNMP reports whether the text names SNMP, read once per text.
func (rw *rewriter) namesSNMP() bool {
	if rw.snmp == 0 {
		rw.snmp = -1
		if indexFold(rw.src, "snmp") >= 0 {
			rw.snmp = 1
		}
	}
	return rw.snmp > 0
}

// referenced reports whether every credential of the text is kept
// elsewhere (credentialsReferenced), computed once per text.
func (rw *rewriter) referenced() bool {
	if rw.refs == 0 {
		rw.refs = -1
		if credentialsReferenced(rw.src, rw.keys) {
			rw.refs = 1
		}
	}
	return rw.refs > 0
}

// mask marks src[start:end] as a value of kind k.
func (rw *rewriter) mask(start, end int, k canonical.Kind) {
	if start < rw.last || end <= start {
		return
	}
	rw.spans = append(rw.spans, span{start: start, end: end, kind: k})
	rw.last = end
}

// cut replaces src[start:end] with the literal lit.
func (rw *rewriter) cut(start, end int, lit string) {
	if start < rw.last || end < start || end == start && lit == "" {
		return
	}
	rw.spans = append(rw.spans, span{start: start, end: end, kind: kStack, lit: lit})
	rw.last = end
}

// Byte classes.

const (
	cDigit = 1 << iota
	cAlpha
	cHex
	cUnder
	cToken // - + / = .
	cDash  // -
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
	t['-'] |= cDash
	return t
}()

func isDigit(c byte) bool { return class[c]&cDigit != 0 }
func isAlpha(c byte) bool { return class[c]&cAlpha != 0 }
func isAlnum(c byte) bool { return class[c]&(cDigit|cAlpha) != 0 }
func isWord(c byte) bool  { return class[c]&(cDigit|cAlpha|cUnder) != 0 }
func isHex(c byte) bool   { return class[c]&cHex != 0 }
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func lower(c byte) byte   { return lowerTable[c] }

// lowerTable maps each ASCII capital to its small letter and every other
// byte to itself: lower is one load, and no branch.
var lowerTable = func() (t [256]byte) {
	for c := range t {
		t[c] = byte(c)
		if c >= 'A' && c <= 'Z' {
			t[c] = byte(c) + 32
		}
	}
	return t
}()

// indexFold returns the index of the ASCII lower-case literal lit in s,
// ignoring ASCII case, or -1.
//
// The candidates, the bytes equal to lit's first in either case, are found
// with IndexByte, one search for each case, so that the bytes between them
// are not looked at one by one; each search goes on from where it stopped,
// and a text costs one pass for each case.
func indexFold(s []byte, lit string) int {
	if len(lit) == 0 {
		return 0
	}
	end := len(s) - len(lit) + 1 // where a match can no longer start
	f := lit[0]
	F := f
	if f >= 'a' && f <= 'z' {
		F = f - 32
	}
	// nf and nF are the next f and F at or after i (end: none).
	nf, nF := -1, -1
	if F == f {
		nF = end
	}
	for i := 0; i < end; i++ {
		if nf < i {
			nf = nextByteBefore(s, i, end, f)
		}
		if nF < i {
			nF = nextByteBefore(s, i, end, F)
		}
		if i = min(nf, nF); i >= end {
			return -1
		}
		if hasPrefixFold(s[i:], lit) {
			return i
		}
	}
	return -1
}

// nextByteBefore returns the index of the first c in s[i:end], or end.
func nextByteBefore(s []byte, i, end int, c byte) int {
	if k := bytes.IndexByte(s[i:end], c); k >= 0 {
		return i + k
	}
	return end
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

// isPlaceholder reports whether s starts with a placeholder (<SECRET>)
// or a handle (<SECRET:k7Qp2xA9>): a value that is masked already.
func isPlaceholder(s []byte) bool {
	if len(s) < 3 || s[0] != '<' {
		return false
	}
	for i := 1; i < len(s) && i <= canonical.MaxKindLen+1; i++ {
		switch c := s[i]; {
		case c == '>':
			return i > 1
		case c == ':':
			_, _, _, ok := canonical.ParseHandle(s)
			return ok
		case !(c >= 'A' && c <= 'Z') && c != '_':
			return false
		}
	}
	return false
}

var litScheme, litARN = newLit("://"), newLit("arn:")

func gateURL(src []byte, f features) bool { return litScheme.in(src, f) }
func gateARN(src []byte, f features) bool { return litARN.in(src, f) }

// kindOf returns the kind of the placeholder p (<SECRET>: SECRET).
func kindOf(p string) canonical.Kind { return canonical.Kind(p[1 : len(p)-1]) }

// downLevelNames widens each masked account that is one part of a
// Windows down-level logon name, DOMAIN\account (or DOMAIN\\account in
// an escaped string), over the other part: the account is the name after
// the backslash, which a pass that stops at the backslash would leave
// (logged on as CORP\jsmith, /user:CORP\svc_backup). A domain is a
// NetBIOS name: a word of at most 15 letters, digits, '-' or '_' that
// starts its token, of capitals as logs print it, or of any case when the
// account starts with no escape's letter (domainBefore), so that a path's
// folders (C:\Users\x) and a setting before an escaped line break
// (user=alice\npass=x) are none.
func (rw *rewriter) downLevelNames() {
	src := rw.src
	for k := range rw.spans {
		sp := &rw.spans[k]
		if sp.kind != kUser {
			continue
		}
		if b := backslashes(src, sp.end); b > 0 && domainBefore(src, sp.start, sp.end, sp.end+b) {
			if e := accountEnd(src, sp.end+b); e > sp.end+b {
				sp.end = e
			}
			continue
		}
		for b := 1; b <= 2 && sp.start-b > 0; b++ {
			if backslashes(src, sp.start-b) != b {
				continue
			}
			ds := sp.start - b
			for ds > 0 && ds > sp.start-b-15 && (isAlnum(src[ds-1]) || src[ds-1] == '-' || src[ds-1] == '_') {
				ds--
			}
			if ds < sp.start-b && domainBefore(src, ds, sp.start-b, sp.start) {
				sp.start = ds
			}
			break
		}
	}
}

// backslashes returns how many backslashes (one, or two of an escaped
// one) stand at i and are followed by no third; 0 when none.
func backslashes(src []byte, i int) int {
	n := 0
	for i+n < len(src) && src[i+n] == '\\' {
		n++
	}
	if n > 2 {
		return 0
	}
	return n
}

// netbiosName reports whether src[s:e] is a down-level domain's name: 1 to
// 15 capitals (letters of any case when anyCase), digits, '-' or '_', one
// letter at least, at the start of its token (after a space, a quote, '=',
// ':', '(' or the text's start).
func netbiosName(src []byte, s, e int, anyCase bool) bool {
	if e-s < 1 || e-s > 15 {
		return false
	}
	letter := false
	for _, c := range src[s:e] {
		if !(isUpper(c) || anyCase && isLower(c)) && !isDigit(c) && c != '-' && c != '_' {
			return false
		}
		letter = letter || isAlpha(c)
	}
	if s == 0 {
		return letter
	}
	switch src[s-1] {
	case ' ', '\t', '"', '\'', '=', ':', '(', '[':
		return letter
	}
	return false
}

// domainBefore reports whether src[s:e] is a down-level domain whose
// account starts at a, after one or two backslashes: a name of capitals
// before any account that is not an escaped control character, or a name
// of any case before one that starts with no letter of an escape
// (contoso\\jsmith; alice\\nbob and alice\\tbob are escapes).
func domainBefore(src []byte, s, e, a int) bool {
	if netbiosName(src, s, e, false) {
		return !escaped(src, a)
	}
	return a < len(src) && !escapeLetter[src[a]] && netbiosName(src, s, e, true)
}

// escapeLetter marks the letters and digits that follow a backslash in an
// escape of C, JSON or a shell.
var escapeLetter = func() (t [256]bool) {
	for _, c := range "abefnrtuvx01234567" {
		t[c] = true
	}
	return t
}()

// escaped reports whether the backslash before i escapes a control
// character rather than ending a domain: n, r or t followed by no
// lower-case letter, digit, '.' or '_' (ADMIN\nPASS=x; CORP\nancy is an
// account).
func escaped(src []byte, i int) bool {
	if i >= len(src) || src[i] != 'n' && src[i] != 'r' && src[i] != 't' {
		return false
	}
	return i+1 >= len(src) || !(isLower(src[i+1]) || isDigit(src[i+1]) || src[i+1] == '.' || src[i+1] == '_')
}

// accountEnd returns the end of the account name that starts at i: a
// letter or digit, then letters, digits, '.', '-', '_' or a final '$' (a
// machine account), at most 64 bytes; i when none starts there.
func accountEnd(src []byte, i int) int {
	if i >= len(src) || !isAlnum(src[i]) {
		return i
	}
	e := i
	for e < len(src) && e-i < 64 && (isAlnum(src[e]) || src[e] == '.' || src[e] == '-' || src[e] == '_') {
		e++
	}
	for e > i && (src[e-1] == '.' || src[e-1] == '-') {
		e--
	}
	if e < len(src) && src[e] == '$' {
		e++
	}
	return e
}
