package redact

import (
	"bytes"
	"net/netip"

	"github.com/toolcanon/toolcanon/projectors/internal/view"
)

// Credential-shaped tokens: vendor prefixes, JWTs, AWS key ids, long
// high-entropy strings and hex digests, and the token after "Bearer".

func isTokenByte(c byte) bool { return class[c] != 0 }

// Vendor token prefixes (gitleaks' rule set) and the minimum length of the
// rest, which keeps words like "sk-learn" out.
var vendorPrefixes = []struct {
	p   string
	min int
}{
	{"ghp_", 20}, {"gho_", 20}, {"ghu_", 20}, {"ghs_", 20}, {"ghr_", 20}, {"github_pat_", 20},
	{"glpat-", 16}, {"gldt-", 16}, {"glrt-", 16}, {"glptt-", 16},
	{"xoxb-", 10}, {"xoxp-", 10}, {"xoxa-", 10}, {"xoxr-", 10}, {"xoxs-", 10}, {"xoxe-", 10}, {"xapp-", 10},
	{"sk_live_", 10}, {"sk_test_", 10}, {"rk_live_", 10}, {"rk_test_", 10}, {"pk_live_", 10}, {"whsec_", 10},
	{"sk-ant-", 16}, {"sk-proj-", 16}, {"sk-", 20},
	{"npm_", 20}, {"pypi-", 20}, {"AIza", 20}, {"hf_", 20}, {"SG.", 20}, {"shpat_", 16}, {"shpss_", 16},
	{"dop_v1_", 20}, {"doo_v1_", 20}, {"ya29.", 20}, {"AGE-SECRET-KEY-", 10}, {"SK", 32},
	{"dapi", 28}, {"glc_", 20}, {"sq0atp-", 16}, {"EAACEdEose0cBA", 10}, {"ATATT", 20},
	{"key-", 32}, {"hvs.", 20}, {"hvb.", 20}, {"hvr.", 20}, {"sl.", 60}, {"NRAK-", 20}, {"PMAK-", 20}, {"glsa_", 20},
	{"dp.st.", 20}, {"dp.ct.", 20}, {"dp.pt.", 20}, {"dp.sa.", 20}, {"lin_api_", 20}, {"secret_", 40}, {"EAAA", 40},
	{"pul-", 32}, {"xoxe.xoxp-", 10}, {"xoxe-", 10}, {"ntn_", 30}, {"rubygems_", 30},
}

// Prefixes that are also the start of ordinary identifiers: the rest must
// have the shape of the vendor's key (hex, or random mixed case).
var hexAfter = map[string]bool{"SK": true, "key-": true, "pul-": true, "rubygems_": true}
var mixedAfter = map[string]bool{"secret_": true, "ntn_": true}

// vendorIndex lists vendorPrefixes by first byte.
var vendorIndex = func() (ix [256][]int) {
	for k, v := range vendorPrefixes {
		ix[v.p[0]] = append(ix[v.p[0]], k)
	}
	return ix
}()

// awsPrefixes all start with 'A'.
var awsPrefixes = []string{"AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "AROA", "APKA"}

func classifyToken(t []byte) string {
	if len(t) < 12 {
		return ""
	}
	for _, k := range vendorIndex[t[0]] {
		v := vendorPrefixes[k]
		if len(t) >= len(v.p)+v.min && string(t[:len(v.p)]) == v.p {
			if (hexAfter[v.p] && !allHexBytes(t[len(v.p):])) || (mixedAfter[v.p] && !mixedClasses(t[len(v.p):])) {
				continue
			}
			return Secret
		}
	}
	if len(t) == 20 && t[0] == 'A' {
		for _, p := range awsPrefixes {
			if string(t[:4]) == p && upperAlnum(t[4:]) {
				return Secret
			}
		}
	}
	if len(t) >= 16 && string(t[:3]) == "eyJ" && bytes.Count(t, []byte{'.'}) >= 2 {
		return Secret
	}
	if len(t) >= 40 && bytes.Contains(t, []byte(".atlasv1.")) {
		return Secret // Terraform Cloud / HCP token
	}
	if len(t) >= 32 && allHexBytes(t) {
		return Hex
	}
	if len(t) >= 30 && t[0] != '/' && bytes.IndexByte(t, '.') < 0 && mixedClasses(t) && bytes.Count(t, []byte{'/'}) <= 3 {
		return shapeSecret
	}
	return ""
}

// shapeSecret is what classifyToken returns for a token that is a secret
// by its shape alone (long, random, mixed case and digits): the text
// around it may still show it is a digest, a public key or an id.
const shapeSecret = "<SECRET>\x00"

// digestLengths are the lengths in hexadecimal digits of MD5, SHA-1,
// SHA-256 and SHA-512: a bare hexadecimal word of one of them is a digest
// or a commit, kept.
func digestLength(n int) bool { return n == 32 || n == 40 || n == 64 || n == 128 }

// digestLabels label the digest or the fingerprint after them, as
// sha256:…, h1:…, SHA256:… (ssh) or sha512-… (subresource integrity).
var digestLabels = []string{"sha1", "sha224", "sha256", "sha384", "sha512", "md5", "h1", "blake2b", "blake3", "sha3-256", "sha3-512"}

// publicKeyTypes name the ssh public key after them.
var publicKeyTypes = []string{"ssh-rsa", "ssh-ed25519", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
	"ecdsa-sha2-nistp521", "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com"}

// keptByContext reports whether the token t at i, random by its shape, is
// a digest, a public key or an id by the text before it.
func keptByContext(src []byte, i int, t []byte) bool {
	for _, l := range digestLabels {
		// sha512-<base64>: subresource integrity.
		if len(t) > len(l)+1 && hasPrefixFold(t, l) && t[len(l)] == '-' {
			return true
		}
	}
	// AAAAB3NzaC1yc2E…, AAAAC3NzaC1lZDI1NTE5…, AAAAE2VjZHNh…: the base64
	// of an ssh public key names its type.
	if len(t) > 16 && string(t[:4]) == "AAAA" && (bytes.Contains(t[4:16], []byte("NzaC1")) || bytes.Contains(t[4:16], []byte("VjZHNh"))) {
		return true
	}
	if i < 2 {
		return false
	}
	prev, sep := prevWord(src, i)
	switch sep {
	case ':':
		for _, l := range digestLabels {
			if equalFold(prev, l) {
				return true
			}
		}
		// x-amz-id-2: …, request-id: …
		return hasSuffixFold(prev, "id") || hasSuffixFold(prev, "id-2")
	case ' ':
		for _, k := range publicKeyTypes {
			if string(prev) == k {
				return true
			}
		}
	}
	return false
}

// prevWord returns the word that ends right before the separator before
// i, and that separator.
func prevWord(src []byte, i int) ([]byte, byte) {
	sep := src[i-1]
	e := i - 1
	if sep == ' ' && e > 0 && src[e-1] == ':' {
		e-- // "x-amz-id-2: value"
		sep = ':'
	}
	s := e
	for s > 0 && e-s < 40 && (isKeyByte(src[s-1]) || src[s-1] == '@') {
		s--
	}
	return src[s:e], sep
}

// awsKeyWithin returns the bounds of an AWS key id inside t (a token that
// holds more, such as key_id=ASIA… or ASIA…:session), or -1.
func awsKeyWithin(t []byte) (int, int) {
	for k := 0; k+20 <= len(t); k++ {
		a := bytes.IndexByte(t[k:len(t)-19], 'A')
		if a < 0 {
			return -1, -1
		}
		k += a
		if k > 0 && isAlnum(t[k-1]) {
			continue
		}
		if k+20 < len(t) && isAlnum(t[k+20]) {
			continue
		}
		for _, p := range awsPrefixes {
			if string(t[k:k+4]) == p && upperAlnum(t[k+4:k+20]) {
				return k, k + 20
			}
		}
	}
	return -1, -1
}

func upperAlnum(b []byte) bool {
	for _, c := range b {
		if !(c >= 'A' && c <= 'Z') && !isDigit(c) {
			return false
		}
	}
	return true
}

func allHexBytes(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !isHex(c) {
			return false
		}
	}
	return true
}

// mixedClasses reports whether b has an upper-case letter, a lower-case
// letter and a digit, as random keys do and identifiers rarely do.
func mixedClasses(b []byte) bool {
	var up, lo, di bool
	for _, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			up = true
		case c >= 'a' && c <= 'z':
			lo = true
		case isDigit(c):
			di = true
		}
	}
	return up && lo && di
}

func redactTokens(rw *rewriter) {
	src := rw.src
	bearer, bearerAt := false, 0
	publicUntil := 0 // the end of the public PEM block the scan is in
	for i := 0; i < len(src); {
		if !isTokenByte(src[i]) {
			i++
			continue
		}
		if i > 0 && src[i-1] == '<' && isPlaceholder(src[i-1:]) {
			for i < len(src) && src[i] != '>' {
				i++
			}
			continue
		}
		j := i
		for j < len(src) && isTokenByte(src[j]) {
			j++
		}
		t := src[i:j]
		for len(t) > 0 && t[len(t)-1] == '.' {
			t = t[:len(t)-1]
		}
		end := i + len(t)
		if len(t) >= 10 && string(t[:10]) == "-----BEGIN" && i >= publicUntil {
			// The body of a public key or a certificate looks random and
			// is kept (redactPEM has replaced the private ones); a vendor
			// token in it is still one.
			publicUntil = publicPEMEnd(src, i)
		}
		switch {
		case bearer && i == bearerAt && len(t) >= 8 && credentialShaped(t):
			rw.replace(i, end, Secret)
		case len(t) >= 12:
			p := classifyToken(t)
			switch {
			case p == Hex && digestLength(len(t)) && !containerBefore(src, i):
				// A digest or a commit id; a container's id is an
				// identifier.
			case p == shapeSecret:
				if i >= publicUntil && !keptByContext(src, i, t) {
					rw.replace(i, end, Secret)
				}
			case p != "":
				rw.replace(i, end, p)
			default:
				if s, e := awsKeyWithin(t); s >= 0 {
					rw.replace(i+s, i+e, Secret)
				} else if bytes.IndexByte(t, '+') >= 0 {
					// URL-encoded text joins words with '+': classify each.
					classifyPieces(rw, t, i)
				}
			}
		}
		bearer = (len(t) == 6 && hasPrefixFold(t, "bearer")) || (len(t) == 5 && hasPrefixFold(t, "basic"))
		if bearer && (j >= len(src) || src[j] != ' ') {
			bearer = false
		}
		bearerAt = j + 1 // the credential follows the scheme and one space
		i = j
	}
}

// credentialShaped reports whether the word after "Bearer" or "Basic" looks
// like a credential rather than prose: it has a digit, punctuation or
// mixed case.
func credentialShaped(t []byte) bool {
	var up, lo bool
	for _, c := range t {
		switch {
		case isDigit(c), c == '.', c == '-', c == '_', c == '=', c == '+', c == '/':
			return true
		case c >= 'A' && c <= 'Z':
			up = true
		case c >= 'a' && c <= 'z':
			lo = true
		}
	}
	return up && lo
}

func classifyPieces(rw *rewriter, t []byte, off int) {
	for s := 0; s < len(t); {
		e := s
		for e < len(t) && t[e] != '+' {
			e++
		}
		if e-s >= 12 {
			if p := classifyToken(t[s:e]); p == shapeSecret {
				rw.replace(off+s, off+e, Secret)
			} else if p != "" && !(p == Hex && digestLength(e-s) && indexFold(t[max(0, s-10):s], "container") < 0) {
				rw.replace(off+s, off+e, p)
			}
		}
		s = e + 1
	}
}

// E-mail addresses.

func isLocalByte(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}
func isDomainByte(c byte) bool { return isAlnum(c) || c == '.' || c == '-' }

func redactEmail(rw *rewriter) {
	src := rw.src
	for i := 0; i < len(src); i++ {
		if i = nextByte(src, i, '@'); i >= len(src) {
			return
		}
		s := i
		for s > 0 && isLocalByte(src[s-1]) {
			s--
		}
		e := i + 1
		for e < len(src) && isDomainByte(src[e]) {
			e++
		}
		for e > i+1 && (src[e-1] == '.' || src[e-1] == '-') {
			e--
		}
		if s < rw.last {
			continue
		}
		dom := src[i+1 : e]
		dot := bytes.LastIndexByte(dom, '.')
		if dot <= 0 || len(dom)-dot-1 < 2 {
			if ne := userAtHost(rw, i); ne > 0 {
				i = ne - 1
			}
			continue
		}
		if s == i {
			continue
		}
		tld := dom[dot+1:]
		ok := true
		for _, c := range tld {
			if !isAlpha(c) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		rw.replace(s, e, Email)
		i = e - 1
	}
}

// userAtHost redacts an account at a machine, as ssh, scp and shell
// prompts write it: root@db01, deploy@build-03:/srv, [alice@bastion ~]$,
// user:pass@host::module, admin@10.0.0.5 (the address is the address
// pass's). at is the '@'. It returns the end of what it redacted, or 0.
// A package at a version (lodash@4, actions/checkout@v4, img@sha256:…) is
// not an account.
func userAtHost(rw *rewriter, at int) int {
	src := rw.src
	// The account: back to the start of the token, at most 128 bytes, so
	// that a run of '@' stays linear.
	ts := at
	for ts > 0 && at-ts < 128 && !isSpace(src[ts-1]) && !accountStop[src[ts-1]] {
		ts--
	}
	if ts > 0 && src[ts-1] == '@' {
		return 0 // a@b@c is no account at a machine
	}
	if ts == at || ts < rw.last || (ts > 0 && !isSpace(src[ts-1]) && at-ts >= 128) || isPlaceholder(src[ts:]) {
		return 0
	}
	user := src[ts:at]
	pass := bytes.IndexByte(user, ':')
	if pass >= 0 {
		user = user[:pass]
	}
	if !accountName(user) || bytes.IndexByte(src[ts:at], '/') >= 0 {
		return 0
	}
	// The machine.
	hs := at + 1
	he := hs
	for he < len(src) && (isAlnum(src[he]) || src[he] == '-' || src[he] == '_' || src[he] == '.') {
		he++
	}
	host := src[hs:he]
	switch {
	case pass >= 0 && he < len(src) && src[he] == '(' && (string(host) == "tcp" || string(host) == "unix" || string(host) == "udp"):
		// Go's MySQL DSN: user:pass@tcp(host:3306)/db
		rw.replace(ts, at, Secret)
		return at + 1
	case isIPv4(host):
		he = hs // the address stage redacts it
	case len(host) < 2 || !isAlpha(host[0]) || bytes.IndexByte(host, '.') >= 0 || notAHost[string(lowerASCII(host))] || versionLike(host):
		return 0
	case !hostLabel(host) && bytes.IndexByte(host, '-') < 0 && bytes.IndexByte(host, '_') < 0 && !shellContext(src, ts, he):
		return 0 // a plain word after '@' needs ssh, scp or a prompt around it
	}
	if pass >= 0 {
		rw.replace(ts, at, Secret)
	} else {
		rw.replace(ts, at, User)
	}
	if he > hs {
		rw.replace(hs, he, Host)
	}
	return max(he, at+1)
}

// accountStop marks the bytes that end the token before an '@'.
var accountStop = func() (t [256]bool) {
	for _, c := range "\"'([=<,;`@" {
		t[c] = true
	}
	return t
}()

// accountName reports whether b reads as a login: a letter or '_' first,
// then letters, digits, '_', '.' or '-', at most 32 bytes.
func accountName(b []byte) bool {
	if len(b) == 0 || len(b) > 32 || !(isAlpha(b[0]) || b[0] == '_') {
		return false
	}
	for _, c := range b {
		if !isWord(c) && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

var notAHost = map[string]bool{"latest": true, "next": true, "beta": true, "alpha": true, "canary": true, "stable": true,
	"main": true, "master": true, "head": true, "sha1": true, "sha256": true, "sha384": true, "sha512": true, "md5": true,
	"none": true, "localhost": true, "example": true, "here": true}

// versionLike reports whether b is v1, v2beta3 and the like.
func versionLike(b []byte) bool {
	return len(b) >= 2 && (b[0] == 'v' || b[0] == 'V') && isDigit(b[1])
}

func isIPv4(b []byte) bool {
	_, ok := parseDottedQuad(b)
	return ok
}

// parseDottedQuad parses b as netip.ParseAddr parses a text without a
// colon: four decimal fields of at most 255, without leading zeros. It is
// the only form of IPv4 address netip accepts, and the common one in logs,
// so the general parser is left to IPv6.
func parseDottedQuad(b []byte) (a [4]byte, ok bool) {
	field, digits, val := 0, 0, 0
	for i, c := range b {
		switch {
		case c >= '0' && c <= '9':
			if digits == 1 && val == 0 {
				return a, false // a leading zero
			}
			val = val*10 + int(c-'0')
			digits++
			if val > 255 {
				return a, false
			}
		case c == '.' && digits > 0 && field < 3 && i+1 < len(b):
			a[field] = byte(val)
			field++
			digits, val = 0, 0
		default:
			return a, false
		}
	}
	if field != 3 || digits == 0 {
		return a, false
	}
	a[3] = byte(val)
	return a, true
}

// shellContext reports whether an account@host from ts to he stands where
// a shell command or prompt puts one: after ssh, scp, sftp, rsync or mosh,
// or followed by ':' (scp's path) or " ~]" (a prompt).
func shellContext(src []byte, ts, he int) bool {
	if he < len(src) && (src[he] == ':' || src[he] == ']') || phrasePrefix(src[he:], " ~]") {
		return true
	}
	before := src[max(0, ts-48):ts]
	for _, cmd := range []string{"ssh ", "scp ", "sftp ", "rsync ", "mosh ", "connection to ", "login ", "for "} {
		if indexFold(before, cmd) >= 0 {
			return true
		}
	}
	return false
}

// Network addresses: IPv4 and IPv6 (confirmed with net/netip) with their
// port, prefix length or zone, and MAC addresses.

func redactAddrs(rw *rewriter) {
	src := rw.src
	for i := 0; i < len(src); i++ {
		c := src[i]
		if !(isHex(c) || c == ':' || c == '[') {
			continue
		}
		if i > 0 {
			p := src[i-1]
			if isWord(p) || p == '.' || p == '-' && i > 1 && isWord(src[i-2]) {
				// Inside a word: skip to its end.
				for i+1 < len(src) && (isHex(src[i+1]) || src[i+1] == '.') {
					i++
				}
				continue
			}
		}
		if isHex(c) && !sepAfterHex(src, i) {
			continue // neither a MAC nor an IP address starts here
		}
		if e := matchMAC(src, i); e > 0 {
			rw.replace(i, e, MAC)
			i = e - 1
			continue
		}
		if e, telling := matchIP(src, i); e > 0 {
			if telling {
				rw.replace(i, e, IP)
			}
			i = e - 1
			continue
		}
	}
}

// sepAfterHex reports whether the run of hexadecimal digits at i, of at
// most five, is followed by ':', '.' or '-'. Every MAC address starts so
// (aa:, aa-, aabb.), and so does every IP address that starts with a digit:
// matchIP gives up on a group of six digits, and a run of digits without a
// separator is no address.
func sepAfterHex(src []byte, i int) bool {
	k := i
	for k < len(src) && k-i < 6 && isHex(src[k]) {
		k++
	}
	return k < len(src) && k-i < 6 && (src[k] == ':' || src[k] == '.' || src[k] == '-')
}

// matchMAC returns the end of a MAC address at i (aa:bb:cc:dd:ee:ff,
// aa-bb-..., aabb.ccdd.eeff) or 0.
func matchMAC(src []byte, i int) int {
	if i+17 <= len(src) {
		sep := src[i+2]
		if sep == ':' || sep == '-' {
			ok := true
			for g := 0; g < 6 && ok; g++ {
				o := i + g*3
				ok = isHex(src[o]) && isHex(src[o+1]) && (g == 5 || src[o+2] == sep)
			}
			if ok && (i+17 == len(src) || !(isWord(src[i+17]) || src[i+17] == sep)) {
				return i + 17
			}
		}
	}
	if i+14 <= len(src) && src[i+4] == '.' && src[i+9] == '.' {
		ok := true
		for _, o := range []int{0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13} {
			if !isHex(src[i+o]) {
				ok = false
				break
			}
		}
		if ok && (i+14 == len(src) || !isWord(src[i+14])) {
			return i + 14
		}
	}
	return 0
}

// maxAddr bounds the text of one address candidate (an IPv6 address with an
// embedded IPv4 address has at most 45 bytes).
const maxAddr = 64

// matchIP returns the end of an IP address starting at i, including a
// following port or prefix length, or 0; telling is false for the
// unspecified and loopback addresses (0.0.0.0, ::, 127.0.0.1, ::1), which
// say nothing about a network.
func matchIP(src []byte, i int) (end int, telling bool) {
	bracket := src[i] == '['
	s := i
	if bracket {
		s++
	}
	e := s
	colons, dots, group := 0, 0, 0
	firstColon := -1
	for e < len(src) && (isHex(src[e]) || src[e] == ':' || src[e] == '.') {
		if e-s > maxAddr {
			return 0, false // longer than any address: keeps hostile input linear
		}
		switch src[e] {
		case ':':
			if colons == 0 {
				firstColon = e
			}
			colons++
			group = 0
			if e-s >= 2 && src[e-1] == ':' && src[e-2] == ':' {
				return 0, false // ":::" is in no address
			}
		case '.':
			dots++
			group = 0
		default:
			group++
		}
		// No address has a group of more than five digits (a port), more
		// than nine colons or more than four dots: stop reading at once,
		// so that each start costs a few bytes, not maxAddr.
		if group > 5 || colons > 9 || dots > 4 {
			return 0, false
		}
		e++
	}
	if e < len(src) && src[e] == '%' && colons >= 2 {
		e++
		for e < len(src) && (isWord(src[e]) || src[e] == '.' || src[e] == '-') {
			e++
		}
	}
	if e == s {
		return 0, false
	}
	// Trailing punctuation belongs to the sentence.
	for e > s && (src[e-1] == '.' || (src[e-1] == ':' && colons > 0 && !(e-2 >= s && src[e-2] == ':'))) {
		if src[e-1] == ':' {
			colons--
		} else {
			dots--
		}
		e--
	}
	var cand []byte
	switch {
	case colons == 0 && dots == 3:
		cand = src[s:e]
	case colons >= 2:
		cand = src[s:e]
	case colons == 1 && dots == 3:
		// a.b.c.d:port (the colons trimmed off the end came after this one)
		if allDigits(src[firstColon+1 : e]) {
			cand = src[s:firstColon]
		}
	default:
		return 0, false
	}
	if len(cand) == 0 || len(cand) > 64 {
		return 0, false
	}
	if e < len(src) && (isWord(src[e]) || src[e] == '-') {
		return 0, false
	}
	// With fewer than two colons the candidate has none: it can only be a
	// dotted quad, which parseDottedQuad reads as netip would. netip reads
	// a text with a colon as IPv6.
	v4 := colons < 2
	var q [4]byte
	var a netip.Addr
	if v4 {
		var ok bool
		if q, ok = parseDottedQuad(cand); !ok {
			return 0, false
		}
	} else {
		var err error
		if a, err = netip.ParseAddr(view.String(cand)); err != nil {
			if dots == 0 && !bracket {
				// "fe80::1:8080" is ambiguous; a trailing group of more than
				// four digits cannot be IPv6, so treat it as a port.
				k := bytes.LastIndexByte(cand, ':')
				if k > 0 && len(cand)-k-1 > 4 && allDigits(cand[k+1:]) {
					if _, err2 := netip.ParseAddr(view.String(cand[:k])); err2 == nil {
						return e, true
					}
				}
			}
			return 0, false
		}
	}
	if bracket {
		if e >= len(src) || src[e] != ']' {
			return 0, false
		}
		e++
	}
	// Port or prefix length.
	if e+1 < len(src) && (src[e] == ':' || src[e] == '/') && isDigit(src[e+1]) && !(src[e] == ':' && !v4 && a.Is6() && !bracket) {
		k := e + 1
		for k < len(src) && isDigit(src[k]) {
			k++
		}
		if k-e-1 <= 5 && (k == len(src) || !isWord(src[k])) {
			e = k
		}
	}
	if v4 {
		return e, q != [4]byte{} && q[0] != 127
	}
	return e, !a.IsUnspecified() && !a.IsLoopback()
}

// containerBefore reports whether the word before i names a container,
// whose 64-digit id is an identifier, not a digest.
func containerBefore(src []byte, i int) bool {
	if i < 2 {
		return false
	}
	prev, _ := prevWord(src, i)
	if len(prev) == 0 && i >= 2 && (src[i-1] == '+' || src[i-1] == '=') {
		// URL-encoded text: container+<id>
		k := i - 1
		s := k
		for s > 0 && k-s < 16 && isAlpha(src[s-1]) {
			s--
		}
		prev = src[s:k]
	}
	return indexFold(prev, "container") >= 0
}
