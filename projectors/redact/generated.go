package redact

import (
	"bytes"
	"encoding/base64"
	"math"

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
			judge(rw, s, e)
		}
		i = j + 1
	}
}

// judge masks src[s:e], a candidate, or the parts of it that are
// generated.
func judge(rw *rewriter, s, e int) {
	src := rw.src
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
		if generated(t) && !proven(src, s, e) {
			rw.mask(s, e, generatedKind(rw, s))
		}
		return
	}
	if len(t) >= 24 && bytes.IndexByte(t, '.') < 0 && proven(src, s, e) {
		return // a proven base64 value with separators in it: an ssh key, SRI
	}
	for ps := s; ps < e; {
		pe := ps
		for pe < e && src[pe] != '/' && src[pe] != '.' && src[pe] != '+' {
			pe++
		}
		if p := src[ps:pe]; len(p) >= minGenerated && (vendorKey(p) || generated(p) && !proven(src, ps, pe)) {
			k := kSecret
			if !vendorKey(p) {
				k = generatedKind(rw, s)
			}
			rw.mask(ps, pe, k)
		}
		ps = pe + 1
	}
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
//   - its characters vary as random ones do: entropy per character at
//     least 0.6 of the most its length allows;
//   - and either it switches between upper case, lower case and digits at
//     least every switchEvery characters, as random values do and names
//     do not, or its runs of four letters or more (camel case split) do
//     not read as words: the mean cost of their letter pairs, under the
//     letter-pair frequencies of the repository's own text, is over
//     wordLimit.
func generated(t []byte) bool {
	var up, lo, digits, hexUp, hexLo, switches int
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
		}
		if cl != 0 {
			if prev != 0 && cl != prev && !(prev == 'u' && cl == 'l') {
				switches++
			}
			prev = cl
		}
	}
	letters := up + lo
	if letters == 0 || letters+digits < minGenerated || len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		return false
	}
	if digits > 0 && (hexLo == letters && up == 0 || hexUp == letters && lo == 0) && hexDashes(t) {
		return true
	}
	if switchEvery*switches < letters+digits {
		if cost, _ := runCost(t); cost <= wordLimit {
			return false
		}
	}
	// Entropy per character at least 0.6 of log2(len(t)): with counts c,
	// log2(n) - Σ c·log2(c)/n >= 0.6·log2(n).
	var hist [256]uint32
	for _, c := range t {
		hist[c]++
	}
	n := float64(len(t))
	sum := 0.0
	for _, c := range hist {
		if c > 1 {
			sum += float64(c) * math.Log2(float64(c))
		}
	}
	return sum <= 0.4*n*math.Log2(n)
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
		if rest := t[len(v.p):]; !v.hex || allHexBytes(rest) {
			return true
		}
	}
	return false
}

// A proof is a context that shows a generated value public: the value
// follows one of before (a label right before it, or a word with at most
// a few separators between), is followed by one of after when it is set,
// and has the shape. "^" in before is the start of a line.
type proof struct {
	name          string
	before, after contexts
	shape         shape
	joined        bool // the label is joined to the value by '-', within one candidate
}

// shape is what a proven value must look like.
type shape struct {
	alphabet byte  // 'x' hexadecimal (one case), 'b' base64 (standard or URL, padded or not), 's' an ssh key blob, 't' a traceparent
	lens     []int // the lengths it may have; none: any
}

var (
	digestHex = shape{'x', []int{32, 40, 56, 64, 96, 128}}
	commitHex = shape{'x', []int{12, 16, 20, 24, 32, 40, 64}}
)

// proofs is the table of contexts that prove a generated value public.
// When in doubt, an entry is left out: masking costs the agent little.
var proofsTable = []proof{
	{"digest after its algorithm", []string{"sha1:", "sha224:", "sha256:", "sha384:", "sha512:", "md5:", "blake2b:", "blake3:",
		"sha1", "sha224", "sha256", "sha384", "sha512", "md5"}, nil, digestHex, false},
	{"subresource integrity", []string{"sha256-", "sha384-", "sha512-"}, nil, shape{'b', []int{44, 64, 88}}, true},
	{"Go checksum", []string{"h1:"}, nil, shape{'b', []int{44}}, false},
	{"ssh key fingerprint", []string{"sha256:"}, nil, shape{'b', []int{43}}, false},
	{"checksum header", []string{"etag", "if-none-match", "if-match", "content-md5", "x-checksum-sha1", "x-checksum-sha256", "x-checksum-md5",
		"checksum", "digest", "sha256sum", "sha1sum", "md5sum", "shasum"}, nil, shape{'x', []int{32, 40, 64, 128}}, false},
	{"base64 checksum header", []string{"content-md5"}, nil, shape{'b', []int{24}}, false},
	{"checksum file line", []string{"^"}, []string{"  ", " *"}, digestHex, false},
	{"commit in a git context", []string{"commit", "revision", "rev", "merge", "checking out", "head is now at", "fast-forward", "cherry-pick", "revert",
		"sha", "git_commit", "git_sha", "commit_sha", "vcs.revision"}, nil, commitHex, false},
	{"key id or fingerprint", []string{"fingerprint", "fingerprint is", "key fingerprint", "rsa key", "dsa key", "ecdsa key", "eddsa key", "ed25519 key",
		"gpg: key", "keyid", "key id", "[sc]", "[sca]", "[scea]", "[e]", "[s]", "[c]"}, nil, shape{'x', []int{16, 40}}, false},
	{"ssh public key", []string{"ssh-rsa", "ssh-ed25519", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
		"sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com"}, nil, shape{'s', nil}, false},
	{"W3C traceparent", []string{"traceparent"}, nil, shape{'t', nil}, false},
	{"OpenTelemetry trace id", []string{"trace_id", "traceid", "trace-id", "trace", "otel.trace_id"}, nil, shape{'x', []int{32}}, false},
	{"OpenTelemetry span id", []string{"span_id", "spanid", "span-id", "span", "parent_id", "parentid", "otel.span_id"}, nil, shape{'x', []int{16}}, false},
}

// proven reports whether the context of the generated value src[s:e]
// proves it public: an entry of proofs, or a public PEM block around it.
func proven(src []byte, s, e int) bool {
	v := src[s:e]
	for i := range proofsTable {
		p := &proofsTable[i]
		if p.shape.fits(v) && p.before.at(src, s) && (p.after == nil || p.after.follows(src, e)) {
			return true
		}
		if p.joined {
			for _, c := range p.before {
				// A label joined to its value: sha512-<base64>.
				if len(v) > len(c) && hasPrefixFold(v, c) && p.shape.fits(v[len(c):]) {
					return true
				}
			}
		}
	}
	return false
}

// fits reports whether v has the shape.
func (sh shape) fits(v []byte) bool {
	if len(sh.lens) > 0 {
		ok := false
		for _, n := range sh.lens {
			ok = ok || len(v) == n
		}
		if !ok {
			return false
		}
	}
	switch sh.alphabet {
	case 'x':
		up, lo := false, false
		for _, c := range v {
			up = up || c >= 'A' && c <= 'F'
			lo = lo || c >= 'a' && c <= 'f'
		}
		return allHexBytes(v) && !(up && lo)
	case 'b':
		for k, c := range v {
			if !(isAlnum(c) || c == '+' || c == '/' || c == '-' || c == '_' || c == '=' && k >= len(v)-2) {
				return false
			}
		}
		return true
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
		return (bytes.HasPrefix(name, []byte("ssh-")) || bytes.HasPrefix(name, []byte("ecdsa-")) || bytes.HasPrefix(name, []byte("sk-")))
	case 't':
		// 00-<32 hex>-<16 hex>-<2 hex>
		return len(v) == 55 && v[2] == '-' && v[35] == '-' && v[52] == '-' &&
			allHexBytes(v[:2]) && allHexBytes(v[3:35]) && allHexBytes(v[36:52]) && allHexBytes(v[53:])
	}
	return false
}

// contexts are the before or after texts of a proof.
type contexts []string

// at reports whether one of cs stands right before s, or before the few
// separators before s (white space, ':', '=', quotes) as a whole word.
func (cs contexts) at(src []byte, s int) bool {
	k := s
	for k > 0 && s-k < 4 && (src[k-1] == ' ' || src[k-1] == '\t' || src[k-1] == ':' || src[k-1] == '=' || src[k-1] == '"' || src[k-1] == '\'' || src[k-1] == '\\') {
		k--
	}
	last, lastK := lower(src[max(s, 1)-1]), lower(src[max(k, 1)-1])
	for _, c := range cs {
		if e := c[len(c)-1]; e != last && e != lastK && c != "^" {
			continue // neither right before nor before the separators
		}
		if c == "^" {
			l := s
			for l > 0 && (src[l-1] == ' ' || src[l-1] == '\t') {
				l--
			}
			if l == 0 || src[l-1] == '\n' {
				return true
			}
			continue
		}
		if s >= len(c) && hasSuffixFold(src[:s], c) && (!isWord(c[len(c)-1]) || s == len(c) || !isWord(src[s-len(c)-1])) {
			return true // a label right before: sha256:, h1:
		}
		if k < s && k >= len(c) && hasSuffixFold(src[:k], c) && (k == len(c) || !isKeyByte(src[k-len(c)-1])) {
			return true // a word or key before: commit X, "etag":"X"
		}
	}
	return false
}

// follows reports whether one of cs follows e.
func (cs contexts) follows(src []byte, e int) bool {
	for _, c := range cs {
		if bytes.HasPrefix(src[e:], []byte(c)) {
			return true
		}
	}
	return false
}
