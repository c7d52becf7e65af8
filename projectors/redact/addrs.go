package redact

import (
	"bytes"
	"net/netip"

	"github.com/toolcanon/toolcanon/projectors/internal/view"
)

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
		s = afterEscape(src, s, i)
		e := i + 1
		for e < len(src) && isDomainByte(src[e]) {
			e++
		}
		for e > i+1 && (src[e-1] == '.' || src[e-1] == '-') {
			e--
		}
		if s < rw.last || inURL(src, s) {
			continue
		}
		dom := src[i+1 : e]
		dot := bytes.LastIndexByte(dom, '.')
		if dot <= 0 || len(dom)-dot-1 < 2 || isIPv4(dom) {
			// A machine, not a mail domain: alice@db01, alice@10.0.0.15.
			if ne := userAtHost(rw, i); ne > 0 {
				i = ne - 1
			}
			continue
		}
		if s == i {
			continue
		}
		if e+1 < len(src) && src[e] == ':' && (src[e+1] == '/' || isAlpha(src[e+1])) && roleAccount(src[s:i]) {
			// git@github.com:owner/repo.git: a remote's path at a machine,
			// reached through the account of its role, not a mailbox; the
			// machine is judged as any name is.
			if classifyName(dom, bytes.Count(dom, []byte("."))+1) == Host {
				rw.mask(i+1, e, kHost)
			}
			i = e
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
		if !ok || scaleSuffix(dom) {
			continue
		}
		rw.mask(s, e, kEmail)
		i = e - 1
	}
}

// scaleSuffix reports whether dom, after an '@', is an image's scale and
// its extension (icon@2x.png, logo@3x.webp): a file's name, no domain.
func scaleSuffix(dom []byte) bool {
	k := 0
	for k < len(dom) && isDigit(dom[k]) {
		k++
	}
	return k > 0 && k+1 < len(dom) && dom[k] == 'x' && dom[k+1] == '.' && bytes.Count(dom, []byte(".")) == 1
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
		rw.mask(ts, at, kSecret)
		return at + 1
	case isIPv4(host):
		he = hs // the address stage redacts it
	case len(host) < 2 || !isAlpha(host[0]) || bytes.IndexByte(host, '.') >= 0 || notAHost[string(lowerASCII(host))] || versionLike(host):
		return 0
	case he+1 < len(src) && src[he] == ':' && resolvedVersion(src[he+1:]):
		// srt-parser@npm:2.2.3, app@workspace:^1.0: a package resolved by
		// a protocol to a version, as yarn's lockfile writes it; after a
		// machine come a port's digits or a path.
		return 0
	case !hostLabel(host) && bytes.IndexByte(host, '-') < 0 && bytes.IndexByte(host, '_') < 0 && !shellContext(src, ts, he):
		return 0 // a plain word after '@' needs ssh, scp or a prompt around it
	}
	if pass >= 0 {
		rw.mask(ts, at, kSecret)
	} else {
		rw.mask(ts, at, kUser)
	}
	if he > hs {
		rw.mask(hs, he, kHost)
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
// or followed by ':' and a path (scp's) or " ~]" (a prompt).
func shellContext(src []byte, ts, he int) bool {
	if he+1 < len(src) && src[he] == ':' && !isSpace(src[he+1]) || he < len(src) && src[he] == ']' || phrasePrefix(src[he:], " ~]") {
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
			if c != '[' && (isWord(p) || p == '.' || p == '-' && i > 1 && isWord(src[i-2])) {
				// (A '[' after a word opens the address of a name, as
				// postfix writes a client: unknown[10.0.0.1].)
				// Inside a word: skip to its end. A ':' after a word that
				// is no group of hexadecimal digits ends the word
				// (udp:10.1.2.3:14550, tcp:[::1]): an address may start
				// after it.
				if c == ':' && !hexGroupBefore(src, i) {
					continue
				}
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
			rw.mask(i, e, kMAC)
			i = e - 1
			continue
		}
		if e, telling := matchIP(src, i); e > 0 {
			if telling {
				rw.mask(i, e, kIP)
			}
			i = e - 1
			continue
		}
	}
}

// hexGroupBefore reports whether the word that ends at i is hexadecimal
// digits only, as far as 16 bytes back: a group of a fingerprint, a MAC or
// an IPv6 address rather than a scheme's name.
func hexGroupBefore(src []byte, i int) bool {
	for k := i - 1; k >= 0 && k >= i-16 && isWord(src[k]); k-- {
		if !isHex(src[k]) {
			return false
		}
	}
	return true
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
	if len(cand) == 0 || len(cand) > 64 || colons >= 2 && s >= 2 && src[s-1] == ':' && src[s-2] == ':' {
		// After "::", a text of colons is fields (gpg's colon listings,
		// ::::::23::0:), not one address: an address compresses once.
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

// inURL reports whether the text before s, back to white space or a
// quote, holds "://" and no '/' or '?' after it: an '@' there ends a URL's
// userinfo, the URL pass's. In a URL's path or query an address is one
// (otpauth://totp/Issuer:alice@example.org?secret=…).
func inURL(src []byte, s int) bool {
	path := false // a '/' after the authority: s is in the path or after it
	for k := s; k > 2 && s-k < 256 && !isSpace(src[k-1]) && src[k-1] != '"' && src[k-1] != '\''; k-- {
		if src[k-1] == '/' && src[k-2] == '/' && src[k-3] == ':' {
			return !path
		}
		path = path || src[k-1] == '/' || src[k-1] == '?'
	}
	return false
}

// resolvedVersion reports whether rest starts with a version a package
// resolves to: a range's mark (^ ~), or digits, a dot and a digit.
func resolvedVersion(rest []byte) bool {
	if len(rest) > 1 && (rest[0] == '^' || rest[0] == '~') && isDigit(rest[1]) {
		return true
	}
	k := 0
	for k < len(rest) && k < 8 && isDigit(rest[k]) {
		k++
	}
	return k > 0 && k+1 < len(rest) && rest[k] == '.' && isDigit(rest[k+1])
}
