package redact

import (
	"bytes"
	"encoding/base64"
	"math"
	"slices"
	"strings"

	"github.com/toolcanon/toolcanon/canonical"
)

// The generated-value pass: every candidate value whose characters look
// randomly generated is masked, wherever it stands, unless its context
// proves it public (see proofs). A candidate is a maximal run of value
// bytes (letters, digits and _ - . + / = % ~); an '=' followed by more
// value bytes ends it (key=value), as do white space, quotes, brackets,
// ':', ',', ';', '@', '?', '&' and '#', the separators of JSON, URLs,
// logfmt and headers. A candidate whose parts are separated by '/', '.'
// or '+' (a path, a host, a file, URL-encoded words) is judged part by
// part when one part is a word or it is a path of four parts or more.

// valueByte marks the bytes of a candidate value.
var valueByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = isAlnum(byte(c))
	}
	for _, c := range "_-.+/=%~" {
		t[c] = true
	}
	return t
}()

// minGenerated is the fewest letters and digits a generated value has:
// shorter ones cannot be told from names by their characters.
const minGenerated = 12

func redactGenerated(rw *rewriter) {
	src := rw.src
	// The public PEM blocks (certificates, public keys), whose bodies are
	// kept: found first, and only in a text that holds one.
	var public [][2]int
	for off := 0; rw.feat == 0 || rw.feat&fDash != 0; {
		k := bytes.Index(src[off:], pemBegin)
		if k < 0 {
			break
		}
		if e := publicPEMEnd(src, off+k); e > 0 {
			public = append(public, [2]int{off + k, e})
			off = e
		} else {
			off += k + len(pemBegin)
		}
	}
	for i := 0; i < len(src); {
		if !valueByte[src[i]] {
			i++
			continue
		}
		// key=value holds two candidates; a trailing '=' is base64 padding.
		j := i + 1
		for j < len(src) && valueByte[src[j]] && (src[j] != '=' || j+1 == len(src) || !valueByte[src[j+1]] || src[j+1] == '=') {
			j++
		}
		if j-i < minGenerated {
			i = j + 1
			continue
		}
		s, e := i, j
		for s < e && (src[s] == '/' || src[s] == '.' || src[s] == '-' || src[s] == '=' || src[s] == '~' || src[s] == '+') {
			s++
		}
		for e > s && (src[e-1] == '.' || src[e-1] == '-' || src[e-1] == '/' || src[e-1] == '+') {
			e--
		}
		for len(public) > 0 && public[0][1] <= s {
			public = public[1:]
		}
		if e-s >= minGenerated && (len(public) == 0 || s < public[0][0] || vendorKey(src[s:e])) {
			judge(rw, i, j)
		}
		i = j + 1
	}
	dropPublic(rw)
}

// judge masks the candidate src[i:j], or the parts of it that are
// generated, unless a proof keeps them.
func judge(rw *rewriter, i, j int) {
	src := rw.src
	s, e := i, j
	for s < e && (src[s] == '/' || src[s] == '.' || src[s] == '-' || src[s] == '=' || src[s] == '~' || src[s] == '+') {
		s++
	}
	for e > s && (src[e-1] == '.' || src[e-1] == '-' || src[e-1] == '/' || src[e-1] == '+') {
		e--
	}
	if e-s < minGenerated {
		return
	}
	t := src[s:e]
	if vendorKey(t) {
		rw.mask(s, e, kSecret)
		return
	}
	slashes, seps := 0, 0
	for _, c := range t {
		if c == '/' {
			slashes++
		}
		if c == '/' || c == '.' || c == '+' {
			seps++
		}
	}
	if seps == 0 || slashes < 3 && !hasWordPart(t) {
		// Judged whole; a base64 digest may start with '/' or '+'.
		if !generated(t) || proven(rw, s, e) || s > i && proven(rw, i, e) {
			return
		}
		if seps == 0 || !partProven(rw, s, e) {
			rw.mask(s, e, generatedKind(rw, s))
			return
		}
	} else if len(t) >= 24 && bytes.IndexByte(t, '.') < 0 && proven(rw, s, e) {
		return // a proven base64 value with separators in it: an ssh key
	}
	for ps := s; ps < e; {
		pe := ps
		for pe < e && src[pe] != '/' && src[pe] != '.' && src[pe] != '+' {
			pe++
		}
		if p := src[ps:pe]; len(p) >= minGenerated && (vendorKey(p) || generated(p) && !proven(rw, ps, pe)) {
			k := kSecret
			if !vendorKey(p) {
				k = generatedKind(rw, s)
			}
			rw.mask(ps, pe, k)
		}
		ps = pe + 1
	}
}

// partProven reports whether a part of src[s:e] between '/', '.' and '+'
// is proven public (trace-id/span;o=1): then the parts are judged one by
// one.
func partProven(rw *rewriter, s, e int) bool {
	src := rw.src
	for ps := s; ps < e; {
		pe := ps
		for pe < e && src[pe] != '/' && src[pe] != '.' && src[pe] != '+' {
			pe++
		}
		if pe-ps >= minGenerated && proven(rw, ps, pe) {
			return true
		}
		ps = pe + 1
	}
	return false
}

// dropPublic drops the masks of ids, users, hosts and other identifiers
// that lie inside a range a proof made public (the comment of a public
// key): a secret stays a secret.
func dropPublic(rw *rewriter) {
	if len(rw.public) == 0 {
		return
	}
	out := rw.spans[:0]
	for _, sp := range rw.spans {
		inside := false
		for _, p := range rw.public {
			inside = inside || sp.start >= p[0] && sp.end <= p[1]
		}
		if !inside || sp.kind == kSecret || sp.kind == kPrivateKey || sp.kind == kStack {
			out = append(out, sp)
		}
	}
	rw.spans = out
}

// hasWordPart reports whether one of the parts of t between '/', '.' and
// '+' (a space in a URL) is a word: letters only, at least four, read as
// a word.
func hasWordPart(t []byte) bool {
	var buf [32]byte
	for s := 0; s < len(t); {
		e := s
		for e < len(t) && t[e] != '/' && t[e] != '.' && t[e] != '+' {
			e++
		}
		if p := t[s:e]; len(p) >= 4 && len(p) <= len(buf) && allLetters(p) {
			for k, c := range p {
				buf[k] = lower(c)
			}
			if wordCost(buf[:len(p)]) <= wordLimit {
				return true
			}
		}
		s = e + 1
	}
	return false
}

func allLetters(b []byte) bool {
	for _, c := range b {
		if !isAlpha(c) {
			return false
		}
	}
	return true
}

// generatedKind is the kind of a generated value at s: a secret when the
// key or word before it names a credential or an authorization scheme,
// an id otherwise.
func generatedKind(rw *rewriter, s int) canonical.Kind {
	src := rw.src
	k := s
	for k > 0 && s-k < 4 && (src[k-1] == ' ' || src[k-1] == '=' || src[k-1] == ':' || src[k-1] == '"' || src[k-1] == '\'') {
		k--
	}
	ks := k
	for ks > 0 && k-ks < 64 && isKeyByte(src[ks-1]) {
		ks--
	}
	if ks == k {
		return kID
	}
	switch rw.keys.classify(src[ks:k]) {
	case kvSecret, kvAuth, kvCookie:
		return kSecret
	}
	for _, sc := range authSchemes {
		if equalFold(src[ks:k], sc[:len(sc)-1]) {
			return kSecret
		}
	}
	return kID
}

// generated reports whether t looks randomly generated, by its characters
// alone:
//   - it has at least minGenerated letters and digits, and letters: a
//     number (decimal, or hexadecimal written 0x…) is a number;
//   - hexadecimal of one case, with digits and letters (digests, UUIDs,
//     ids), is generated;
//   - a name of parts joined by '-', '.' or '_', each part switching
//     between letters and digits once at most (emqx-5.8.3-debian12-amd64.deb), is
//     not;
//   - its characters vary as random ones do: entropy per character at
//     least 0.6 of the most its length and its alphabet allow, and a value
//     longer than its alphabet does not repeat its pairs of characters;
//   - and either it switches between upper case, lower case and digits at
//     least every switchEvery characters, as random values do and names
//     do not, or its runs of four letters or more (camel case split) do
//     not read as words: the mean cost of their letter pairs, under the
//     letter-pair frequencies of the repository's own text, is over
//     wordLimit.
func generated(t []byte) bool {
	var up, lo, digits, hexUp, hexLo, switches, seps, partSwitches, maxPart int
	prev := byte(0) // the class of the last letter or digit: 'u', 'l' or 'd'
	for _, c := range t {
		cl := byte(0)
		switch {
		case c >= 'a' && c <= 'z':
			lo++
			cl = 'l'
			if c <= 'f' {
				hexLo++
			}
		case c >= 'A' && c <= 'Z':
			up++
			cl = 'u'
			if c <= 'F' {
				hexUp++
			}
		case c >= '0' && c <= '9':
			digits++
			cl = 'd'
		case c == '-' || c == '.' || c == '_':
			if prev != 0 {
				seps++
			}
			maxPart, partSwitches = max(maxPart, partSwitches), 0
		}
		if cl != 0 && prev != 0 && cl != prev && !(prev == 'u' && cl == 'l') {
			switches++
			partSwitches++
		}
		if cl != 0 || c == '-' || c == '.' || c == '_' {
			prev = cl // a name's separator starts a new part
		}
	}
	maxPart = max(maxPart, partSwitches)
	letters := up + lo
	if letters == 0 || letters+digits < minGenerated || len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		return false
	}
	if digits > 0 && (hexLo == letters && up == 0 || hexUp == letters && lo == 0) && hexDashes(t) {
		return true
	}
	if seps > 0 && maxPart <= 1 {
		return false
	}
	if switchEvery*switches < letters+digits {
		if cost, _ := runCost(t); cost <= wordLimit {
			return false
		}
	}
	// Entropy per character at least 0.6 of the most: log2 of the length,
	// or of the alphabet when the value is longer (a long hexadecimal
	// value has 4 bits a character at most). With counts c:
	// log2(n) - Σ c·log2(c)/n >= 0.6·log2(min(n, alphabet)).
	var hist [256]uint32
	for _, c := range t {
		hist[c]++
	}
	alphabet := len(t) - letters - digits // at most one of each other byte
	if up > 0 {
		alphabet += 26
	}
	if lo > 0 {
		alphabet += 26
	}
	if digits > 0 {
		alphabet += 10
	}
	if hexDashes(t) {
		alphabet = 16
	}
	n := float64(len(t))
	sum := 0.0
	for _, c := range hist {
		if c > 1 {
			sum += float64(c) * math.Log2(float64(c))
		}
	}
	if n*math.Log2(n)-sum < 0.6*n*math.Log2(float64(min(len(t), alphabet))) {
		return false
	}
	// Longer than its alphabet, a random value still seldom repeats a pair
	// of characters; a pattern repeated (abcdefghabcdefgh…) does.
	return len(t) <= alphabet || distinctPairs(t) >= min((len(t)-1)/2, alphabet*alphabet/4)
}

// distinctPairs counts the distinct pairs of adjacent bytes of t, at most
// (pairs that share a slot of the table count once).
func distinctPairs(t []byte) int {
	var seen [256]uint64
	n := 0
	for k := 1; k < len(t); k++ {
		h := (uint(t[k-1])<<7 ^ uint(t[k])) & 16383
		if seen[h/64]&(1<<(h%64)) == 0 {
			seen[h/64] |= 1 << (h % 64)
			n++
		}
	}
	return n
}

// switchEvery: a value that switches between upper case, lower case and
// digits at least every switchEvery characters (upper to lower, which
// starts every capitalised word, does not count) is generated.
const switchEvery = 4

// hexDashes reports whether t is hexadecimal digits, with dashes between
// groups at most.
func hexDashes(t []byte) bool {
	for _, c := range t {
		if !isHex(c) && c != '-' {
			return false
		}
	}
	return true
}

// runCost returns the mean cost, in eighths of a bit, of the letter pairs
// of t's runs of four letters or more (camel case split; a run's start and
// end count as pairs too), and how many letters those runs hold.
func runCost(t []byte) (cost, letters int) {
	sum, pairs := 0, 0
	for i := 0; i < len(t); {
		if !isAlpha(t[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(t) && isAlpha(t[j]) && !(isUpper(t[j]) && !isUpper(t[j-1])) &&
			!(j+1 < len(t) && isUpper(t[j]) && isUpper(t[j-1]) && t[j+1] >= 'a' && t[j+1] <= 'z') {
			j++
		}
		if j-i >= 4 {
			prev := 26
			for _, c := range t[i:j] {
				c = lower(c) - 'a'
				sum += int(bigramCost[prev][c])
				prev = int(c)
			}
			sum += int(bigramCost[prev][26])
			pairs += j - i + 1
			letters += j - i
		}
		i = j
	}
	if pairs == 0 {
		return 0, 0
	}
	return sum / pairs, letters
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }

// wordCost returns the mean cost of the letter pairs of the lower-case
// word w, its start and end included, in eighths of a bit.
func wordCost(w []byte) int {
	prev, sum := 26, 0
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return math.MaxInt
		}
		sum += int(bigramCost[prev][c-'a'])
		prev = int(c - 'a')
	}
	sum += int(bigramCost[prev][26])
	return sum / (len(w) + 1)
}

// wordLimit is the highest mean cost per letter pair of words, in eighths
// of a bit: calibrated so that random letters rarely read as words and
// the words of logs and Go identifiers rarely do not.
var wordLimit = 46

// vendorPrefixes are the prefixes of credential vendors (gitleaks' rule
// set) with the fewest bytes after them and what those bytes are: a value
// with one is a secret wherever it stands and whatever its context.
var vendorPrefixes = []struct {
	p    string
	rest int
	hex  bool // the rest is hexadecimal
}{
	{"ghp_", 20, false}, {"gho_", 20, false}, {"ghu_", 20, false}, {"ghs_", 20, false}, {"ghr_", 20, false}, {"github_pat_", 20, false},
	{"glpat-", 16, false}, {"gldt-", 16, false}, {"glrt-", 16, false}, {"glptt-", 16, false}, {"glsa_", 20, false}, {"glc_", 20, false},
	{"xoxb-", 10, false}, {"xoxp-", 10, false}, {"xoxa-", 10, false}, {"xoxr-", 10, false}, {"xoxs-", 10, false}, {"xoxe", 10, false}, {"xapp-", 10, false},
	{"sk_live_", 10, false}, {"sk_test_", 10, false}, {"rk_live_", 10, false}, {"rk_test_", 10, false}, {"whsec_", 10, false},
	{"sk-ant-", 16, false}, {"sk-proj-", 16, false}, {"sk-", 20, false}, {"npm_", 20, false}, {"pypi-", 20, false}, {"AIza", 20, false},
	{"hf_", 20, false}, {"SG.", 20, false}, {"shpat_", 16, false}, {"shpss_", 16, false}, {"dop_v1_", 20, false}, {"doo_v1_", 20, false},
	{"ya29.", 20, false}, {"AGE-SECRET-KEY-", 10, false}, {"SK", 32, true}, {"dapi", 28, true}, {"sq0atp-", 16, false},
	{"ATATT", 20, false}, {"key-", 32, true}, {"hvs.", 20, false}, {"hvb.", 20, false}, {"hvr.", 20, false}, {"NRAK-", 20, false},
	{"PMAK-", 20, false}, {"dp.st.", 20, false}, {"dp.ct.", 20, false}, {"dp.pt.", 20, false}, {"dp.sa.", 20, false},
	{"lin_api_", 20, false}, {"eyJ", 13, false}, {"pul-", 32, true}, {"ntn_", 30, false}, {"rubygems_", 30, true},
	// AWS access key ids: a prefix and 16 upper-case letters and digits.
	{"AKIA", 16, false}, {"ASIA", 16, false}, {"ABIA", 16, false}, {"ACCA", 16, false}, {"AGPA", 16, false}, {"AIDA", 16, false},
	{"AIPA", 16, false}, {"ANPA", 16, false}, {"ANVA", 16, false}, {"AROA", 16, false}, {"APKA", 16, false},
}

// vendorIndex lists vendorPrefixes by first byte.
var vendorIndex = func() (ix [256][]int) {
	for k, v := range vendorPrefixes {
		ix[v.p[0]] = append(ix[v.p[0]], k)
	}
	return ix
}()

// vendorKey reports whether t starts with a vendor prefix followed by
// enough bytes of the right shape.
func vendorKey(t []byte) bool {
	if len(t) < 12 {
		return false
	}
	for _, k := range vendorIndex[t[0]] {
		v := vendorPrefixes[k]
		if len(t) < len(v.p)+v.rest || string(t[:len(v.p)]) != v.p {
			continue
		}
		if rest := t[len(v.p):]; (!v.hex || allHexBytes(rest)) && !placeholder(rest) && (hasDigit(rest) || generated(rest)) {
			return true // not a placeholder (ghp_xxxx…) or a name (xoxb-Slack_BOT_TOKEN)
		}
	}
	return false
}

// A proof is a context that shows a generated value public, and the shape
// the value must have there. How the context is found:
//
//   - 'd': the name of a digest algorithm among the words of the line
//     before the value, in any form tools write it (sha256, SHA-256,
//     sha2-256, sha256sum, x-amz-checksum-sha256, Content-MD5); the value
//     must be that digest, in hexadecimal or base64;
//   - 'n': one of words among the words of the line before the value
//     (a phrase: its words in a row), nearest first;
//   - 'k': every word of one of words in the key right before the value,
//     whatever its naming style (traceId, X-B3-TraceId, trace_id);
//   - 'l': one of words right before the value, or before the few
//     separators before it;
//   - '^': the value starts a line and one of words follows it;
//   - 'a': one of words follows the value;
//   - 'p': the value ends a digest whose first digits name the directories
//     before it (packages/8a/ea/<60 hex>, objects/ab/<38 hex>);
//   - 's': the shape alone.
//
// 'd' and 'n' read at most nearWindow bytes back, and a credential word or
// another value between ends their search.
type proof struct {
	name  string
	how   byte
	words []string
	shape shape
	line  string // a literal the value's neighbourhood must hold too
}

// shape is what a proven value must look like: kind 'x' hexadecimal of one
// case, of one of lens ('h': of any length); 'd' a digest (of the bits the context names, or
// of any common size) in hexadecimal or base64; 'b' base64 (standard or
// URL, padded or not) of one of lens, or of 16 bytes or more; 's' an ssh
// key blob that names its type; 't' a trace context (a trace or span id, a
// W3C traceparent, a B3 header); 'g' a git range, a git describe name or a
// Go pseudo-version; 'n' a Nix store hash; 'a' an age recipient.
type shape struct {
	kind byte
	lens []int
}

const nearWindow = 64

// proofsTable is the table of contexts that prove a generated value
// public. When in doubt, an entry is left out: masking costs the agent
// little, since the handle still names the value.
var proofsTable = []proof{
	{name: "digest after its algorithm's name", how: 'd', shape: shape{kind: 'd'}},
	{name: "checksum or digest named", how: 'n', words: []string{"checksum", "checksums", "digest", "hash", "etag", "if none match", "if match",
		"integrity", "h1", "zh"}, shape: shape{kind: 'd'}},
	{name: "checksum file line", how: '^', words: []string{"  ", " *"}, shape: shape{kind: 'd'}},
	{name: "commit in a git context", how: 'n', words: []string{"commit", "commits", "revision", "rev", "merge", "merged", "checking out",
		"checkout", "head", "fast forward", "cherry pick", "revert", "sha", "git", "updating", "index", "object", "tree", "parent", "blob",
		"ref", "reference", "uses"}, shape: shape{'x', []int{7, 8, 9, 10, 11, 12, 16, 20, 24, 32, 40, 64}}},
	{name: "commit before its ref", how: 'a', words: []string{" refs/", "\trefs/"}, shape: shape{'x', []int{40, 64}}},
	{name: "git range, describe name or Go pseudo-version", how: 's', shape: shape{kind: 'g'}},
	{name: "key id or fingerprint", how: 'n', words: []string{"fingerprint", "keyid", "key id", "gpg", "rsa", "dsa", "ecdsa", "eddsa",
		"ed25519", "cv25519", "ed448", "nistp256", "nistp384", "nistp521", "rsa1024", "rsa2048", "rsa3072", "rsa4096"},
		shape: shape{'x', []int{16, 40}}},
	{name: "content-addressed path", how: 'p', shape: shape{kind: 'h'}},
	{name: "ssh public key", how: 'l', words: []string{"ssh-rsa", "ssh-ed25519", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
		"ecdsa-sha2-nistp521", "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com"}, shape: shape{kind: 's'}},
	{name: "trace context", how: 'k', words: []string{"trace", "traceparent", "b3", "span", "parent id"}, shape: shape{kind: 't'}},
	{name: "public key named", how: 'k', words: []string{"public key", "pubkey", "publickey", "public"}, shape: shape{kind: 'b'}},
	{name: "JSON web key's public member", how: 'k', words: []string{"x", "y", "n", "e"}, shape: shape{kind: 'b'}, line: `"kty"`},
	{name: "signature tool's public key", how: 'n', words: []string{"minisign", "signify"}, shape: shape{'b', []int{56}}},
	{name: "age recipient", how: 's', shape: shape{kind: 'a'}},
	{name: "Nix store path", how: 'l', words: []string{"/nix/store/"}, shape: shape{kind: 'n'}},
}

// proven reports whether the context of the candidate src[s:e] proves it
// public. The range it makes public (the value, and the comment of a
// public key) is recorded: the other passes' masks of ids, users and
// hosts inside it are dropped.
func proven(rw *rewriter, s, e int) bool {
	src := rw.src
	v := src[s:e]
	for i := range proofsTable {
		p := &proofsTable[i]
		if !p.shape.mayFit(v) {
			continue
		}
		if ok, bits := p.context(src, s, e); ok && p.shape.fits(v, bits) {
			rw.public = append(rw.public, [2]int{s, commentEnd(src, e, p.shape.kind)})
			return true
		}
	}
	// The algorithm's name joined to its value: sha384-<base64> (SRI).
	if k := bytes.IndexByte(v, '-'); k > 0 && k <= 8 {
		if bits := digestBits(v[:k], nil); bits > 0 && digestFits(v[k+1:], bits) {
			rw.public = append(rw.public, [2]int{s, e})
			return true
		}
	}
	return false
}

// commentEnd returns the end of what a proof of a value ending at e makes
// public: the value, and after a public key or a fingerprint its comment
// as ssh writes it (a user@host word last on the line, or before the
// key's type in parentheses).
func commentEnd(src []byte, e int, kind byte) int {
	if kind != 's' && kind != 'd' || e >= len(src) || src[e] != ' ' {
		return e
	}
	ce := e + 1
	for ce < len(src) && ce-e < 64 && !isSpace(src[ce]) {
		ce++
	}
	if bytes.IndexByte(src[e+1:ce], '@') <= 0 || !(ce == len(src) || src[ce] == '\n' || src[ce] == '\r' || phrasePrefix(src[ce:], " (")) {
		return e
	}
	return ce
}

// context reports whether p's context stands around src[s:e], and for a
// digest the bits its algorithm names (0: any).
func (p *proof) context(src []byte, s, e int) (bool, int) {
	if p.line != "" && bytes.Index(src[max(0, s-256):min(len(src), e+256)], []byte(p.line)) < 0 {
		return false, 0
	}
	switch p.how {
	case 'd':
		var ws nearWords
		ws.read(src, s)
		for k := 0; k < ws.n; k++ {
			if ws.blocks(src, k) {
				break
			}
			if bits := digestBits(ws.word(src, k), ws.before(src, k)); bits > 0 {
				return true, bits
			}
		}
	case 'n':
		var ws nearWords
		ws.read(src, s)
		for k := 0; k < ws.n; k++ {
			for _, w := range p.words {
				if ws.phraseAt(src, k, w) {
					return true, 0
				}
			}
			if ws.blocks(src, k) {
				break
			}
		}
	case 'k':
		var kw [16][2]int
		key := keyBefore(src, s)
		n := splitWords(&kw, key)
		for _, w := range p.words {
			if allWordsIn(key, kw[:n], w) {
				return true, 0
			}
		}
	case 'l':
		return labelBefore(src, s, p.words), 0
	case '^':
		l := s
		for l > 0 && (src[l-1] == ' ' || src[l-1] == '\t') {
			l--
		}
		return (l == 0 || src[l-1] == '\n') && followedBy(src, e, p.words), 0
	case 'a':
		return followedBy(src, e, p.words), 0
	case 'p':
		k, n := s, 0
		for k >= 3 && src[k-1] == '/' && isHex(src[k-2]) && isHex(src[k-3]) && (k == 3 || src[k-4] == '/') {
			k, n = k-3, n+2
		}
		return n > 0 && slices.Contains(digestSizes, 4*(n+e-s)), 0
	case 's':
		return true, 0
	}
	return false, 0
}

// nearWords are the words of a line before a value, nearest first: runs
// of letters and digits, split where camel case starts a word.
type nearWords struct {
	n int
	w [12][2]int
}

// read finds the words of src's line before s, at most nearWindow bytes
// back.
func (ws *nearWords) read(src []byte, s int) {
	stop := max(0, s-nearWindow)
	for e := s; e > stop && ws.n < len(ws.w); {
		c := src[e-1]
		if c == '\n' || c == '\r' || c == 'n' && e-2 >= stop && src[e-2] == '\\' {
			return // a line break, or an escaped one
		}
		if !isAlnum(c) {
			e--
			continue
		}
		b := e - 1
		for b > stop && isAlnum(src[b-1]) && !camelStart(src, b) {
			b--
		}
		ws.w[ws.n] = [2]int{b, e}
		ws.n++
		e = b
	}
}

// camelStart reports whether a word starts at src[i] inside a run of
// letters: a capital after a small letter (traceId), or a capital that
// starts a word after two capitals or more (EDKey, not ETag).
func camelStart(src []byte, i int) bool {
	return isUpper(src[i]) && (src[i-1] >= 'a' && src[i-1] <= 'z' ||
		i >= 2 && isUpper(src[i-1]) && isUpper(src[i-2]) && i+1 < len(src) && src[i+1] >= 'a' && src[i+1] <= 'z')
}

func (ws *nearWords) word(src []byte, k int) []byte { return src[ws.w[k][0]:ws.w[k][1]] }

// before returns the word before the k-th (further from the value), or nil.
func (ws *nearWords) before(src []byte, k int) []byte {
	if k+1 < ws.n {
		return ws.word(src, k+1)
	}
	return nil
}

// blocks reports whether the k-th word ends the search for a context: a
// credential word, or another value (letters and digits, 12 or more).
func (ws *nearWords) blocks(src []byte, k int) bool {
	w := ws.word(src, k)
	if len(w) >= minGenerated && hasDigit(w) && !allDigits(w) {
		return true
	}
	switch classifyKey(w) {
	case kvSecret, kvAuth, kvCookie:
		return !equalFold(w, "key") // a public key, a key id: "key" alone says nothing
	}
	return false
}

// phraseAt reports whether the words of phrase (space-separated, lower
// case) are the words from the k-th on, away from the value: "key id"
// ends at the k-th word.
func (ws *nearWords) phraseAt(src []byte, k int, phrase string) bool {
	for e := len(phrase); e > 0; k++ {
		b := strings.LastIndexByte(phrase[:e], ' ') + 1
		if k >= ws.n || !equalFold(ws.word(src, k), phrase[b:e]) {
			return false
		}
		e = b - 1
	}
	return true
}

// keyBefore returns the key right before the value at s: back over the
// separators (white space, ':', '=', quotes) and element tags
// (<key>PublicKey</key><string>), a run of key bytes and single spaces.
func keyBefore(src []byte, s int) []byte {
	k := s
	for k > 0 && s-k < 64 {
		c := src[k-1]
		if c == '>' {
			o := bytes.LastIndexByte(src[max(0, k-32):k-1], '<')
			if o < 0 {
				break
			}
			k = max(0, k-32) + o
			continue
		}
		if c != ' ' && c != '\t' && c != ':' && c != '=' && c != '"' && c != '\'' && c != '\\' {
			break
		}
		k--
	}
	ks := k
	for ks > 0 && k-ks < 48 && (isKeyByte(src[ks-1]) || src[ks-1] == ' ' && ks-1 > 0 && isKeyByte(src[ks-2]) && ks < k) {
		ks--
	}
	return src[ks:k]
}

// splitWords finds the words of key into dst as bounds: runs of letters
// and digits, split where camel case starts a word; at most len(dst).
func splitWords(dst *[16][2]int, key []byte) int {
	n := 0
	for i := 0; i < len(key) && n < len(dst); {
		if !isAlnum(key[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(key) && isAlnum(key[j]) && !camelStart(key, j) {
			j++
		}
		dst[n] = [2]int{i, j}
		n++
		i = j
	}
	return n
}

// allWordsIn reports whether every word of phrase (space-separated) is one
// of the words ws of key.
func allWordsIn(key []byte, ws [][2]int, phrase string) bool {
	for len(phrase) > 0 {
		w := phrase
		if sp := strings.IndexByte(phrase, ' '); sp >= 0 {
			w, phrase = phrase[:sp], phrase[sp+1:]
		} else {
			phrase = ""
		}
		found := false
		for _, b := range ws {
			found = found || equalFold(key[b[0]:b[1]], w)
		}
		if !found {
			return false
		}
	}
	return true
}

// labelBefore reports whether one of labels stands right before s, or
// before the few separators before s as a whole word.
func labelBefore(src []byte, s int, labels []string) bool {
	k := s
	for k > 0 && s-k < 4 && (src[k-1] == ' ' || src[k-1] == '\t' || src[k-1] == ':' || src[k-1] == '=' || src[k-1] == '"' || src[k-1] == '\'') {
		k--
	}
	for _, c := range labels {
		if s >= len(c) && hasSuffixFold(src[:s], c) && (!isWord(c[len(c)-1]) || s == len(c) || !isWord(src[s-len(c)-1])) {
			return true
		}
		if k < s && k >= len(c) && hasSuffixFold(src[:k], c) && (k == len(c) || !isKeyByte(src[k-len(c)-1])) {
			return true
		}
	}
	return false
}

// followedBy reports whether one of words follows e.
func followedBy(src []byte, e int, words []string) bool {
	for _, w := range words {
		if bytes.HasPrefix(src[e:], []byte(w)) {
			return true
		}
	}
	return false
}

// digestBits returns the size in bits of the digest that the word w names,
// with prev the word before it ("sha" before "256"), or 0: md5, sha1,
// sha224 … sha512, sha2-256, sha3-512, blake2b(-512), blake2s, blake3,
// with or without "sum" (sha256sum) and in any case.
func digestBits(w, prev []byte) int {
	lw := lowerASCII(w)
	if lw == nil {
		return 0
	}
	switch string(bytes.TrimSuffix(lw, []byte("sum"))) {
	case "md5":
		return 128
	case "sha1", "sha": // shasum's default
		return 160
	case "sha224":
		return 224
	case "sha256", "blake2s", "blake3":
		return 256
	case "sha384":
		return 384
	case "sha512", "blake2b":
		return 512
	case "224", "256", "384", "512":
		switch string(lowerASCII(prev)) {
		case "sha", "sha2", "sha3", "blake2b", "blake2s":
			return int(lw[0]-'0')*100 + int(lw[1]-'0')*10 + int(lw[2]-'0')
		}
	}
	return 0
}

// digestSizes are the common digest sizes in bits.
var digestSizes = []int{128, 160, 224, 256, 384, 512}

// digestFits reports whether v is a digest of bits (0: any common size),
// in hexadecimal of one case or base64.
func digestFits(v []byte, bits int) bool {
	if bits == 0 {
		for _, b := range digestSizes {
			if digestFits(v, b) {
				return true
			}
		}
		return false
	}
	if len(v) == bits/4 {
		return hexOneCase(v)
	}
	n := bits / 8
	return (len(v) == (n+2)/3*4 || len(v) == (n*8+5)/6) && base64Like(v)
}

func hexOneCase(v []byte) bool {
	up, lo := false, false
	for _, c := range v {
		up = up || c >= 'A' && c <= 'F'
		lo = lo || c >= 'a' && c <= 'f'
	}
	return allHexBytes(v) && !(up && lo)
}

// base64Like reports whether v is base64, standard or URL, padded or not.
func base64Like(v []byte) bool {
	for k, c := range v {
		if !(isAlnum(c) || c == '+' || c == '/' || c == '-' || c == '_' || c == '=' && k >= len(v)-2) {
			return false
		}
	}
	return len(v) > 0
}

// mayFit reports whether v can have the shape, whatever the context says:
// a cheap test before the context is looked for.
func (sh shape) mayFit(v []byte) bool {
	if sh.kind == 'd' {
		return len(v) >= 22 && len(v) <= 128
	}
	return sh.fits(v, 0)
}

// fits reports whether v has the shape; bits is the digest size the
// context names (0: any).
func (sh shape) fits(v []byte, bits int) bool {
	if len(sh.lens) > 0 && !slices.Contains(sh.lens, len(v)) {
		return false
	}
	switch sh.kind {
	case 'd':
		return digestFits(v, bits)
	case 'x', 'h':
		return hexOneCase(v)
	case 'b':
		return (len(sh.lens) > 0 || len(v) >= 22) && base64Like(v)
	case 's':
		// The blob of an ssh public key starts with its type's name.
		if len(v) < 24 {
			return false
		}
		var head [16]byte
		n, _ := base64.StdEncoding.Decode(head[:], v[:20])
		if n < 11 {
			return false
		}
		name := head[4:n]
		return bytes.HasPrefix(name, []byte("ssh-")) || bytes.HasPrefix(name, []byte("ecdsa-")) || bytes.HasPrefix(name, []byte("sk-"))
	case 't':
		return traceShaped(v)
	case 'g':
		return gitShaped(v)
	case 'n':
		// 32 letters of Nix's base32, then the name: /nix/store/<hash>-name.
		if len(v) < 32 || len(v) > 32 && v[32] != '-' {
			return false
		}
		for _, c := range v[:32] {
			if !(isDigit(c) || c >= 'a' && c <= 'z' && c != 'e' && c != 'o' && c != 'u' && c != 't') {
				return false
			}
		}
		return true
	case 'a':
		// age1 and 58 letters of bech32.
		if len(v) != 62 || string(v[:4]) != "age1" {
			return false
		}
		for _, c := range v[4:] {
			if strings.IndexByte("qpzry9x8gf2tvdw0s3jn54khce6mua7l", c) < 0 {
				return false
			}
		}
		return true
	}
	return false
}

// traceShaped reports whether v is a trace or span id (16 or 32
// hexadecimal digits), a W3C traceparent (00-<32>-<16>-<2>) or a B3
// header (<32 or 16>-<16>, a sampling flag after).
func traceShaped(v []byte) bool {
	var parts [4][]byte
	n := 0
	for len(v) > 0 && n < len(parts) {
		k := bytes.IndexByte(v, '-')
		if k < 0 {
			k = len(v)
		}
		parts[n], n = v[:k], n+1
		v = v[min(k+1, len(v)):]
	}
	if len(v) > 0 || n == 0 {
		return false
	}
	for _, p := range parts[:n] {
		if !hexOneCase(p) && !(len(p) == 1 && (p[0] == 'd' || isDigit(p[0]))) {
			return false
		}
	}
	l := func(k int) int { return len(parts[k]) }
	switch n {
	case 1:
		return l(0) == 16 || l(0) == 32
	case 4:
		if l(0) == 2 {
			return l(1) == 32 && l(2) == 16 && l(3) == 2 // traceparent
		}
		return false
	default:
		return (l(0) == 32 || l(0) == 16) && l(1) == 16 && (n == 2 || l(2) == 1) // B3
	}
}

// gitShaped reports whether v is a git range (a..b, a...b), a git
// describe name (v1.9.4-14-gb48b6fb) or a Go pseudo-version
// (v0.0.0-20241120103012-0fea7792c71c): shapes that only git and Go
// write, around commit ids.
func gitShaped(v []byte) bool {
	if k := bytes.Index(v, []byte("..")); k > 0 {
		a, b := v[:k], bytes.TrimPrefix(v[k+2:], []byte("."))
		return len(a) >= 7 && len(a) <= 40 && len(b) >= 7 && len(b) <= 40 && hexOneCase(a) && hexOneCase(b)
	}
	d := bytes.LastIndexByte(v, '-')
	if d < 0 || v[0] != 'v' && !isDigit(v[0]) {
		return false
	}
	h := v[d+1:]
	if len(h) >= 8 && h[0] == 'g' && hexOneCase(h[1:]) {
		n := bytes.LastIndexByte(v[:d], '-')
		return n > 0 && allDigits(v[n+1:d]) // <tag>-<n>-g<hex>
	}
	if len(h) == 12 && hexOneCase(h) && d >= 14 {
		t := v[d-14 : d]
		return allDigits(t) && (d == 14 || v[d-15] == '.' || v[d-15] == '-') // <version>-<timestamp>-<hex>
	}
	return false
}
