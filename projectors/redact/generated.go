package redact

import (
	"bytes"
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

// maxWord is the length from which letters of one case read as generated
// rather than as a word of some language (fehlgeschlagen has 14).
const maxWord = 16

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
		if src[i] == '$' && (i == 0 || !isWord(src[i-1])) {
			if e := cryptEnd(src, i); e > i {
				rw.mask(i, e, kSecret)
				i = e
				continue
			}
		}
		if src[i] == '{' {
			if s, e := schemeValue(src, i); e > s {
				rw.mask(s, e, kSecret)
				i = e
				continue
			}
		}
		if !valueByte[src[i]] {
			i++
			continue
		}
		// key=value holds two candidates; a trailing '=' is base64 padding.
		j := i + 1
		for j < len(src) && valueByte[src[j]] && (src[j] != '=' || j+1 == len(src) || !valueByte[src[j+1]] || src[j+1] == '=') {
			j++
		}
		if j-i < minGenerated || j < len(src) && src[j] == '@' && (hasPrefixFold(src[j:], "@sha256:") || hasPrefixFold(src[j:], "@sha512:")) {
			i = j + 1 // too short, or an image's repository before its digest
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

// cryptEnd returns the end of the password hash in the modular crypt
// format at src[i:] ($6$salt$hash, $2b$12$…, $argon2id$v=19$m=…$salt$hash):
// '$', an algorithm's short name, '$'-separated fields, the last one of
// 20 or more characters of the hash alphabet; i when there is none. A
// hash is a secret by its format, wherever it stands.
func cryptEnd(src []byte, i int) int {
	j, fields, last := i, 0, 0
	for j < len(src) && src[j] == '$' && fields < 8 {
		s := j + 1
		j = s
		for j < len(src) && j-s < 128 && (isAlnum(src[j]) || src[j] == '.' || src[j] == '/' || src[j] == '=' || src[j] == ',' || src[j] == '+') {
			j++
		}
		if j == s {
			return i
		}
		if fields == 0 && j-s > 8 {
			return i // an algorithm's name is short: $PASSWORD is a variable
		}
		fields++
		last = j - s
	}
	if fields < 3 || last < 20 || j < len(src) && (isWord(src[j]) || src[j] == '$') {
		return i
	}
	return j
}

// schemeValue returns the bounds of the password or hash that follows a
// password scheme in braces at src[i:] ({PLAIN}x, {SSHA}x, {SHA512-CRYPT}
// $6$…, as LDAP and Dovecot store them): a name of capitals, digits and
// '-', then the value to a space, a quote or ':' (a passwd-file's next
// field); s == e when there is none.
func schemeValue(src []byte, i int) (s, e int) {
	k := i + 1
	for k < len(src) && k-i <= 20 && (src[k] >= 'A' && src[k] <= 'Z' || isDigit(src[k]) || src[k] == '-' || src[k] == '.') {
		k++
	}
	if k-i < 4 || k >= len(src) || src[k] != '}' {
		return 0, 0
	}
	s, e = k+1, k+1
	for e < len(src) && e-s < 256 && !isSpace(src[e]) && src[e] != ':' && src[e] != '"' && src[e] != '\'' && src[e] != ',' {
		e++
	}
	if e-s < 4 {
		return 0, 0
	}
	return s, e
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
	if digits == 0 && len(t) == letters && len(t) < maxWord && (up == 0 || lo == 0 || up == 1 && isUpper(t[0])) {
		return false // a word, in any language: letters of one case, or capitalised
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
