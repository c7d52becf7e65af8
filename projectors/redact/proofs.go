package redact

import (
	"bytes"
	"encoding/base64"
	"regexp"
	"slices"
	"strings"
)

// A proof shows a generated value public. One of its words stands among
// the words of the value's line before it, nearest first, within window
// bytes, with no credential word or other value between (a phrase: its
// words in a row, as camel case, '-', '_' or '.' write them too); the
// value has the shape; and, when set, the value starts a line, one of
// after follows it, or its neighbourhood holds line. Without words and
// window, the shape alone proves. Two contexts are read, not listed: the
// name of a digest's algorithm in any form tools write it (algorithm:
// sha256, SHA-256, sha2-256, sha256sum, x-amz-checksum-sha256), which
// also gives the digest's length; and the directories that a digest's
// first digits name before the rest of it (dirs).
type proof struct {
	name      string
	words     []string
	window    int
	shape     shape
	after     []string
	start     bool
	line      string
	algorithm bool
	dirs      bool
	sized     bool // a size in bytes and a file name follow the value
	// ends is the set of the words that end one of words, by length and
	// first letter: a near word outside it ends none of them, and holds
	// does not try them on it.
	ends wordEnds
}

// wordEnds is a set of words by length and first letter: different words
// may share a bit, so that the set only rules words out.
type wordEnds [4]uint64

// key returns the bit of a word of length n whose first byte, in lower
// case, is c.
func (wordEnds) key(n int, c byte) (int, uint64) {
	k := (uint(n)*37 + uint(c)) & 255
	return int(k >> 6), 1 << (k & 63)
}

func (s *wordEnds) add(w string) {
	i, b := s.key(len(w), w[0])
	s[i] |= b
}

func (s *wordEnds) has(n int, c byte) bool {
	i, b := s.key(n, c)
	return s[i]&b != 0
}

// The sets of the words that end the phrases of each proof.
func init() {
	for i := range proofsTable {
		p := &proofsTable[i]
		for _, w := range p.words {
			last := w[strings.LastIndexByte(w, ' ')+1:]
			p.ends.add(last)
		}
	}
}

// shape is what a proven value must look like: kind 'x' hexadecimal of one
// case, of one of lens (any length without); 'd' a digest, in hexadecimal
// of one case or base64, of the size the context names or any common one;
// 'b' base64, standard or URL, of one of lens or of 16 bytes or more; 's'
// an ssh key blob that names its type; 'r' the test may, then the
// expression re when there is one.
type shape struct {
	kind byte
	lens []int
	re   *regexp.Regexp
	may  func(v []byte) bool
}

var (
	digest = shape{kind: 'd'}
	// digestHex is a digest as checksum files list it: hexadecimal of a
	// digest's length. A line's first word followed by two spaces is
	// no proof for base64 (a pod's name has 24 characters too).
	digestHex = shape{kind: 'x', lens: []int{32, 40, 56, 64, 96, 128}}
	commitHex = shape{kind: 'x', lens: []int{7, 8, 9, 10, 11, 12, 16, 20, 24, 32, 40, 64}}
)

// proofsTable is the table of contexts that prove a generated value
// public. When in doubt, an entry is left out: masking costs the agent
// little, since the handle still names the value.
var proofsTable = []proof{
	{name: "digest after its algorithm's name", algorithm: true, window: 64, shape: digest},
	{name: "checksum or digest named", words: []string{"checksum", "checksums", "digest", "hash", "etag", "if none match", "if match",
		"integrity", "h1", "zh"}, window: 64, shape: digest},
	{name: "checksum file line", start: true, after: []string{"  ", " *"}, shape: digestHex},
	{name: "checksum, size and file of a package index", start: true, sized: true, shape: digestHex},
	{name: "checksum after an archive's name", words: []string{"tgz", "whl"}, window: 4, shape: digest},
	{name: "checksum after a package's file name", words: []string{"zip", "gz", "xz", "bz2", "zst", "tar", "exe", "msi", "dmg", "pkg", "deb",
		"rpm", "apk", "jar", "war", "iso", "img", "appimage", "nupkg", "gem", "crate"}, window: 12, shape: digestHex},
	{name: "checksum after its algorithm's name", words: []string{"crc32", "crc32c", "crc64", "adler32", "xxh32", "xxh64", "xxh3", "xxh128",
		"xxhash", "xxhash64"}, window: 8, shape: shape{kind: 'x', lens: []int{8, 16, 32}}},
	{name: "checksum of a mix.lock entry", words: []string{"hex", "hexpm"}, window: 96, line: "{:hex, :", shape: digest},
	{name: "commit in a git context", words: []string{"commit", "commits", "revision", "rev", "merge", "merged", "checking out", "checkout",
		"head", "fast forward", "cherry pick", "revert", "sha", "git", "updating", "index", "object", "tree", "parent", "blob", "ref",
		"reference", "uses", "onto", "rebased", "insertions", "deletions", "fixes"}, window: 64, shape: commitHex},
	{name: "build a version names", words: []string{"build"}, window: 8, shape: commitHex},
	{name: "checksum line echoed to its checker", after: []string{"  "}, line: "sum -c", shape: digestHex},
	{name: "key id of a signature", words: []string{"signed key", "signing key", "signed with key", "signed by key"}, window: 8,
		shape: shape{kind: 'x', lens: []int{16, 40}}},
	{name: "abbreviated commit starting a one-line log entry", start: true, after: []string{" "},
		shape: shape{kind: 'x', lens: []int{7, 8, 9, 10, 11}}},
	{name: "commit git rev-parse or rev-list prints on its own line", start: true, after: []string{"\n", "\r", `\n`, `\r`},
		line: "git rev-", shape: shape{kind: 'x', lens: []int{40, 64}}},
	{name: "commit before its ref", after: []string{" refs/", "\trefs/"}, shape: shape{kind: 'x', lens: []int{40, 64}}},
	{name: "commit git bisect names", after: []string{" is the first bad commit", " is the first new commit", "] "}, start: true,
		shape: shape{kind: 'x', lens: []int{40, 64}}},
	{name: "fingerprint line of a gpg listing", start: true, after: []string{"\n", "\r"},
		shape: shape{kind: 'r', may: func(v []byte) bool { return len(v) == 40 }, re: regexp.MustCompile(`^[0-9A-F]{40}$`)}},
	{name: "signature line of a gpg listing", words: []string{"sig", "sig 1", "sig 2", "sig 3", "rev"}, window: 16,
		shape: shape{kind: 'r', may: func(v []byte) bool { return len(v) == 16 }, re: regexp.MustCompile(`^[0-9A-F]{16}$`)}},
	{name: "WireGuard peer", words: []string{"peer"}, window: 8, shape: shape{kind: 'b', lens: []int{44}}},
	{name: "git range, describe name or Go pseudo-version", shape: shape{kind: 'r', may: func(v []byte) bool {
		return bytes.Contains(v, []byte("..")) || bytes.Contains(v, []byte("-g")) || v[0] == 'v' && len(v) >= 34
	}, re: regexp.MustCompile(
		`^(?:[0-9a-f]{7,40}\.\.\.?[0-9a-f]{7,40}|v?[0-9][0-9A-Za-z.+-]*-[0-9]+-g[0-9a-f]{7,40}|v[0-9]+\.[0-9]+\.[0-9]+-(?:[0-9A-Za-z.]+\.)?[0-9]{14}-[0-9a-f]{12})$`)}},
	{name: "key id or fingerprint", words: []string{"fingerprint", "keyid", "key id", "gpg", "fpr", "pub", "sub", "sec", "ssb", "rsa", "dsa", "ecdsa", "eddsa", "ed25519",
		"cv25519", "ed448", "nistp256", "nistp384", "nistp521", "rsa2048", "rsa3072", "rsa4096"}, window: 64,
		shape: shape{kind: 'x', lens: []int{8, 16, 40}}},
	{name: "key id a gpg status line names", words: []string{"key"}, window: 4, line: "gpg: ", shape: shape{kind: 'x', lens: []int{8, 16, 40}}},
	{name: "signature in its OpenPGP armour", line: "-----BEGIN PGP SIGNATURE-----", shape: shape{kind: 'b'}},
	{name: "public key or fingerprint in its OpenPGP armour", line: "-----BEGIN PGP PUBLIC KEY BLOCK-----", shape: shape{kind: 'b'}},
	{name: "content-addressed path", dirs: true, shape: shape{kind: 'x'}},
	{name: "ssh public key", shape: shape{kind: 's'}},
	{name: "trace context", words: []string{"trace", "traceparent", "tracestate", "b3", "span", "parent id"}, window: 48, shape: shape{kind: 'r', may: traceLength, re: regexp.MustCompile(
		`^(?:[0-9a-f]{16}|[0-9a-f]{32}|00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}|(?:[0-9a-f]{16}|[0-9a-f]{32})-[0-9a-f]{16}(?:-[01d](?:-[0-9a-f]{16})?)?)$`)}},
	{name: "trace state a vendor propagates", words: []string{"tracestate"}, window: 128, shape: shape{kind: 'r', may: func(v []byte) bool {
		return len(v) <= 256 && bytes.IndexAny(v, "+=%~") < 0 // a member's value: letters, digits and _ - . /
	}}},
	{name: "image layer docker names", after: []string{": Pull complete", ": Already exists", ": Pulling fs layer", ": Waiting",
		": Downloading", ": Verifying Checksum", ": Download complete", ": Extracting", ": Pushed", ": Layer already exists",
		": Preparing", ": Pushing"}, shape: shape{kind: 'x', lens: []int{12}}},
	{name: "GitHub security advisory id", shape: shape{kind: 'r', may: func(v []byte) bool {
		return len(v) == 19 && string(v[:5]) == "GHSA-"
	}, re: regexp.MustCompile(`^GHSA(?:-[2-9cfghjmpqrvwx]{4}){3}$`)}},
	{name: "public key named", words: []string{"public", "pubkey", "publickey"}, window: 32, shape: shape{kind: 'b'}},
	{name: "JSON web key's public member", words: []string{"x", "y", "n", "e"}, window: 6, line: `"kty"`, shape: shape{kind: 'b'}},
	{name: "signature tool's public key", words: []string{"minisign", "signify"}, window: 64, shape: shape{kind: 'b', lens: []int{56}}},
	{name: "age recipient", shape: shape{kind: 'r', may: func(v []byte) bool { return len(v) == 62 }, re: regexp.MustCompile(`^age1[02-9ac-hj-np-z]{58}$`)}},
	{name: "digest a DNS record holds", words: []string{"ds", "cds", "dlv", "tlsa", "smimea", "sshfp"}, window: 24, shape: digest},
	{name: "public key a DNS record holds", words: []string{"dnskey", "cdnskey"}, window: 24, shape: shape{kind: 'b'}},
	{name: "certificate thumbprint", words: []string{"thumbprint", "thumbprints"}, window: 24, shape: shape{kind: 'x', lens: []int{40, 64}}},
	{name: "key id or thumbprint of a JSON web key", words: []string{"kid", "x5t", "x5t s256", "jkt"}, window: 8, shape: shape{kind: 'b'}},
	{name: "BitTorrent info hash", words: []string{"btih", "infohash", "info hash"}, window: 8, shape: shape{kind: 'x', lens: []int{40, 64}}},
	{name: "transaction id of a public ledger", words: []string{"txid", "txhash", "tx hash", "blockhash", "block hash"}, window: 16,
		shape: shape{kind: 'x', lens: []int{64}}},
	{name: "signature tool's key id", words: []string{"minisign public key", "signify public key", "minisign key id", "minisign key"}, window: 8,
		shape: shape{kind: 'x', lens: []int{16}}},
	{name: "PKCE code challenge", words: []string{"code challenge", "codechallenge"}, window: 16, shape: shape{kind: 'b', lens: []int{43}}},
	{name: "Gerrit change id", words: []string{"change id"}, window: 12, shape: shape{kind: 'r', may: func(v []byte) bool { return len(v) == 41 },
		re: regexp.MustCompile(`^I[0-9a-f]{40}$`)}},
	{name: "AWS X-Ray trace id", shape: shape{kind: 'r', may: func(v []byte) bool { return len(v) == 35 && v[0] == '1' },
		re: regexp.MustCompile(`^1-[0-9a-f]{8}-[0-9a-f]{24}$`)}},
	{name: "image id docker names", words: []string{"successfully built", "image id", "imageid", "writing image"}, window: 12,
		shape: shape{kind: 'x', lens: []int{12, 64}}},
	{name: "ETag of a multipart upload", words: []string{"etag"}, window: 12, shape: shape{kind: 'r', may: func(v []byte) bool { return len(v) >= 34 && len(v) <= 38 },
		re: regexp.MustCompile(`^[0-9a-f]{32}-[0-9]{1,5}$`)}},
	{name: "Nostr public key", shape: shape{kind: 'r', may: func(v []byte) bool { return len(v) == 63 }, re: regexp.MustCompile(`^npub1[02-9ac-hj-np-z]{58}$`)}},
	{name: "Nix store path", words: []string{"nix store"}, window: 16, shape: shape{kind: 'r', may: func(v []byte) bool { return len(v) >= 32 },
		re: regexp.MustCompile(`^[0-9a-df-np-sv-z]{32}(?:-|$)`)}},
}

// sizeAndFile reports whether rest starts with a space, a size in bytes, a
// space and a file's name, as the checksum fields of a Debian Release or
// .dsc file list them ( <digest> <size> <path>).
func sizeAndFile(rest []byte) bool {
	k := 1
	for k < len(rest) && k <= 16 && isDigit(rest[k]) {
		k++
	}
	return len(rest) > 0 && rest[0] == ' ' && k > 1 && k+1 < len(rest) && rest[k] == ' ' && rest[k+1] > ' '
}

// traceLength reports whether v is hexadecimal with dashes of a length the
// trace context forms have (16, 32, 00-32-16-2, 32-16, 32-16-1, 32-16-1-16
// and the same with a 16-digit trace id): the expression runs on those
// alone.
func traceLength(v []byte) bool {
	switch len(v) {
	case 16, 32, 33, 35, 49, 51, 52, 55, 68:
		return hexDashes(v)
	}
	return false
}

// proven reports whether the context of the candidate src[s:e] proves it
// public. The range it makes public (the value, and the comment of a
// public key) is recorded: the other passes' masks of ids, users and
// hosts inside it are dropped.
func proven(rw *rewriter, s, e int) bool {
	src := rw.src
	v := src[s:e]
	if len(v) > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X') && hexOneCase(v[2:]) {
		// Hexadecimal as C writes it (crc32=0x72CBC1A7): the digits are
		// what a proof reads, the prefix goes public with them.
		if proven(rw, s+2, e) {
			rw.public[len(rw.public)-1][0] = s
			return true
		}
		return false
	}
	vc := valueClass{b64: base64Like(v)}
	if !vc.b64 && bytes.IndexByte(v, '.') < 0 {
		return false // every proven value is base64, a range or a version
	}
	vc.hex = hexOneCase(v)
	var ws nearWords
	may := proofsMay(len(v), vc)
	for i := range proofsTable {
		p := &proofsTable[i]
		if i < 64 && may&(1<<i) == 0 || !p.shape.fitsClassButExpr(v, 0, vc) {
			continue
		}
		if p.window > 0 && ws.n == 0 {
			ws.read(src, s, nearWindow)
		}
		if p.holds(src, s, e, &ws) && p.shape.matchesExpr(v) {
			rw.public = append(rw.public, [2]int{s, commentEnd(src, e, p.shape.kind)})
			return true
		}
	}
	// The algorithm's name joined to its value: sha384-<base64> (SRI),
	// sha256/<base64> (a public key's pin as TLS clients write it; curl
	// doubles the slash).
	if k := bytes.IndexAny(v, "-/"); k > 0 && k <= 8 {
		d := v[k+1:]
		if v[k] == '/' && len(d) > 0 && d[0] == '/' {
			d = d[1:]
		}
		if bits := digestBits(v[:k], nil); bits > 0 && digestFits(d, bits) {
			rw.public = append(rw.public, [2]int{s, e})
			return true
		}
	}
	if vc.hex && besideProven(rw, s, e, &ws) {
		rw.public = append(rw.public, [2]int{s, e})
		return true
	}
	return false
}

// siblingGap is the most bytes between two values of one listing.
const siblingGap = 24

// besideProven reports whether the hexadecimal src[s:e] follows, a few
// words later on its line, a hexadecimal value of its length that a proof
// made public: the second of a listing the first one's context proves (two
// commits: merged a into b; a hash chain's links: prev=… this=…; a digest
// before and after). A credential's word, or a value, between the two
// ends the listing: sha256=… token=… proves nothing of the token. ws are
// the words before the value, read here if no proof has read them.
func besideProven(rw *rewriter, s, e int, ws *nearWords) bool {
	src := rw.src
	if len(rw.public) == 0 {
		return false
	}
	p := rw.public[len(rw.public)-1]
	if p[1] > s || s-p[1] > siblingGap || p[1]-p[0] != e-s || !hexOneCase(src[p[0]:p[1]]) {
		return false
	}
	if gap := src[p[1]:s]; bytes.IndexByte(gap, '\n') >= 0 || bytes.IndexByte(gap, '\r') >= 0 || bytes.Contains(gap, []byte(`\n`)) {
		return false // the words read stop at a break: one between ends the listing
	}
	if ws.n == 0 {
		ws.read(src, s, nearWindow)
	}
	for k := 0; k < ws.n && ws.w[k][0] >= p[1]; k++ {
		if siblingBlocks(ws.word(src, k)) {
			return false
		}
	}
	return true
}

// siblingBlocks reports whether a word between two values makes the
// second one no sibling of the first: a credential's word, a key's, or a
// value's (letters and digits, 12 or more).
func siblingBlocks(w []byte) bool {
	if len(w) >= minGenerated && hasDigit(w) {
		return true
	}
	lw := lowerASCII(w)
	switch string(lw) {
	case "key", "keys", "hmac", "mac", "sig", "authorization", "api":
		return true
	}
	return lw == nil || credentialWords[string(lw)] || glued(lw)
}

// proofsByLen[n][c] has bit i set when the i-th proof's shape may fit a
// value of length n and class c (hex 1, base64 2): the shapes of
// hexadecimal, digests and base64 are told by these alone, an ssh key's
// by its length in part, and the others are always tried.
var proofsByLen = func() (t [257][4]uint64) {
	for n := range t {
		v := make([]byte, n)
		for c := range t[n] {
			vc := valueClass{hex: c&1 != 0, b64: c&2 != 0}
			for i := range proofsTable[:min(64, len(proofsTable))] {
				sh := proofsTable[i].shape
				may := true
				switch sh.kind {
				case 'x', 'd', 'b':
					may = sh.fitsClassButExpr(v, 0, vc)
				case 's':
					may = n >= 24
				}
				if may {
					t[n][c] |= 1 << i
				}
			}
		}
	}
	return t
}()

// proofsMay returns the set of the proofs (bit i: the i-th of the first
// 64) whose shape may fit a value of length n and class c.
func proofsMay(n int, c valueClass) uint64 {
	if n >= len(proofsByLen) {
		return ^uint64(0)
	}
	return proofsByLen[n][btoi(c.hex)|2*btoi(c.b64)]
}

// nearWindow is the widest window of a proof.
const nearWindow = 64

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

// holds reports whether p's context stands around src[s:e], a value of
// its shape; ws are the words before the value.
func (p *proof) holds(src []byte, s, e int, ws *nearWords) bool {
	if p.start {
		l := s
		for l > 0 && (src[l-1] == ' ' || src[l-1] == '\t') {
			l--
		}
		if l > 0 && src[l-1] == '[' && bytes.HasPrefix(src[e:], []byte("] ")) {
			l-- // [40 hex] message: the commit git bisect checks out
		}
		if l > 0 && src[l-1] != '\n' && !(l >= 2 && src[l-2] == '\\' && src[l-1] == 'n') {
			return false // not at a line's start, nor after an escaped break
		}
	}
	if p.after != nil && !slices.ContainsFunc(p.after, func(a string) bool { return bytes.HasPrefix(src[e:], []byte(a)) || a == "\n" && e == len(src) }) {
		return false
	}
	if p.sized && !sizeAndFile(src[e:]) {
		return false
	}
	if p.line != "" && !bytes.Contains(src[max(0, s-256):min(len(src), e+256)], []byte(p.line)) {
		return false // searched last, as it reads the most
	}
	if p.dirs {
		k, n := s, 0
		for k >= 3 && src[k-1] == '/' && isHex(src[k-2]) && isHex(src[k-3]) && (k == 3 || src[k-4] == '/') {
			k, n = k-3, n+2
		}
		return n > 0 && slices.Contains(digestSizes, 4*(n+e-s))
	}
	if p.window == 0 {
		return true
	}
	for k := 0; k < ws.n && ws.w[k][0] >= s-p.window; k++ {
		if p.algorithm {
			if bits := digestBits(ws.word(src, k), ws.word(src, k+1)); bits > 0 {
				return p.shape.fits(src[s:e], bits) && !ws.keyed(src, k+1)
			}
		}
		if w := ws.w[k]; p.ends.has(w[1]-w[0], lower(src[w[0]])) {
			for _, w := range p.words {
				if ws.phraseAt(src, k, w) {
					return !ws.keyed(src, k+strings.Count(w, " ")+1)
				}
			}
		}
		if ws.blocks(src, k) {
			return false
		}
	}
	return false
}

// nearWords are the words of a line before a value, nearest first: runs
// of letters and digits, split where camel case starts a word.
type nearWords struct {
	n int
	w [12][2]int
	// known and blocked are the sets of the words (bit k: the k-th) that
	// blocks has read, and of those that block: each proof with a window
	// asks about the same words.
	known, blocked uint64
}

// The sets of nearWords have a bit for each word.
var _ [64 - len(nearWords{}.w)]struct{}

// read finds the words of src's line before s, at most window bytes back.
func (ws *nearWords) read(src []byte, s, window int) {
	stop := max(0, s-window)
	for e := s; e > stop && ws.n < len(ws.w); {
		c := src[e-1]
		if c == '\n' || c == '\r' || c == 'n' && e-2 >= stop && src[e-2] == '\\' {
			if ws.n == 0 && e < len(src) && src[e] == ' ' {
				// The value starts a folded line, which continues the
				// field above it (Checksums-Sha1:\n <sha1> size file).
				e -= 1 + btoi(c == 'n')
				continue
			}
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

// word returns the k-th word, or nil past the last.
func (ws *nearWords) word(src []byte, k int) []byte {
	if k >= ws.n {
		return nil
	}
	return src[ws.w[k][0]:ws.w[k][1]]
}

// blocks reports whether the k-th word ends the search for a context: a
// credential word (not "key", which alone says nothing: a public key, a
// key id), or another value (letters and digits, 12 or more).
func (ws *nearWords) blocks(src []byte, k int) bool {
	bit := uint64(1) << k
	if ws.known&bit == 0 {
		ws.known |= bit
		if ws.wordBlocks(src, k) {
			ws.blocked |= bit
		}
	}
	return ws.blocked&bit != 0
}

// wordBlocks is blocks, read afresh.
func (ws *nearWords) wordBlocks(src []byte, k int) bool {
	w := ws.word(src, k)
	if len(w) >= minGenerated && hasDigit(w) && !allDigits(w) {
		return true
	}
	lw := lowerASCII(w)
	return lw != nil && (credentialFilter.may(lw) && credentialWords[string(lw)] || glued(lw) || string(lw) == "authorization")
}

// keyed reports whether the k-th word, the one before a proof's word,
// makes the digest a secret: a credential's hash (admin.password.hash)
// or a keyed digest (hmac-sha256) proves nothing public.
func (ws *nearWords) keyed(src []byte, k int) bool {
	if k >= ws.n {
		return false
	}
	lw := lowerASCII(ws.word(src, k))
	return lw != nil && (credentialWords[string(lw)] || glued(lw) || string(lw) == "hmac")
}

// phraseAt reports whether the words of phrase (space-separated, lower
// case) are the words from the k-th on, away from the value: "key id"
// ends at the k-th word.
func (ws *nearWords) phraseAt(src []byte, k int, phrase string) bool {
	for e := len(phrase); e > 0; k++ {
		// The phrase's word that ends at e is as long as the k-th word:
		// one look at the byte before it rules out most phrases.
		w := ws.word(src, k)
		b := e - len(w)
		if b < 0 || b > 0 && phrase[b-1] != ' ' || strings.IndexByte(phrase[b:e], ' ') >= 0 || !equalFold(w, phrase[b:e]) {
			return false
		}
		e = b - 1
	}
	return true
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
	case "sha256", "blake2s", "blake3", "b3":
		return 256
	case "sha384":
		return 384
	case "sha512", "blake2b", "b2":
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
func digestFits(v []byte, bits int) bool { return digestFitsClass(v, bits, classOf(v)) }

// valueClass is what the shapes read of a value's bytes, found in one
// pass each rather than once per proof and digest size.
type valueClass struct{ hex, b64 bool }

func classOf(v []byte) valueClass { return valueClass{hex: hexOneCase(v), b64: base64Like(v)} }

// digestFitsClass is digestFits with v's class found beforehand.
func digestFitsClass(v []byte, bits int, c valueClass) bool {
	if bits == 0 {
		if len(v) >= len(digestLens) {
			return false
		}
		l := digestLens[len(v)]
		return l&1 != 0 && c.hex || l&2 != 0 && c.b64
	}
	hex, padded, raw := digestLengths(bits)
	return len(v) == hex && c.hex || (len(v) == padded || len(v) == raw) && c.b64
}

// digestLengths returns the lengths of a digest of bits in hexadecimal,
// in padded base64 and in unpadded base64.
func digestLengths(bits int) (hex, padded, raw int) {
	n := bits / 8
	return 2 * n, (n + 2) / 3 * 4, (n*8 + 5) / 6
}

// digestLens[n] has bit 0 set when a digest of one of digestSizes is n
// bytes long in hexadecimal, bit 1 when it is in base64, so that a value
// of any common size costs one look.
var digestLens = func() []uint8 {
	t := make([]uint8, 2*slices.Max(digestSizes)/8+1)
	for _, b := range digestSizes {
		hex, padded, raw := digestLengths(b)
		t[hex] |= 1
		t[padded] |= 2
		t[raw] |= 2
	}
	return t
}()

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

// fits reports whether v has the shape; bits is the digest size the
// context names (0: any).
func (sh shape) fits(v []byte, bits int) bool {
	if sh.kind == 'x' || sh.kind == 'd' || sh.kind == 'b' {
		return sh.fitsClass(v, bits, classOf(v))
	}
	return sh.fitsClass(v, bits, valueClass{})
}

// fitsClass is fits with v's class c found beforehand.
func (sh shape) fitsClass(v []byte, bits int, c valueClass) bool {
	return sh.fitsClassButExpr(v, bits, c) && sh.matchesExpr(v)
}

// matchesExpr reports whether v, of the shape but for its expression,
// matches the expression, if the shape has one. It is the costliest test
// of a shape, so proven runs it after the context's.
func (sh shape) matchesExpr(v []byte) bool {
	return sh.kind != 'r' || sh.re == nil || sh.re.Match(v)
}

// fitsClassButExpr is fitsClass without matchesExpr.
func (sh shape) fitsClassButExpr(v []byte, bits int, c valueClass) bool {
	switch sh.kind {
	case 'x':
		return (sh.lens == nil || slices.Contains(sh.lens, len(v))) && c.hex
	case 'd':
		return digestFitsClass(v, bits, c)
	case 'b':
		return (sh.lens == nil && len(v) >= 22 || slices.Contains(sh.lens, len(v))) && c.b64
	case 's':
		// The blob of an ssh public key starts with its type's name.
		var head [16]byte
		if len(v) < 24 {
			return false
		}
		if n, _ := base64.StdEncoding.Decode(head[:], v[:20]); n < 11 {
			return false
		}
		name := head[4:15]
		return bytes.HasPrefix(name, []byte("ssh-")) || bytes.HasPrefix(name, []byte("ecdsa-")) || bytes.HasPrefix(name, []byte("sk-"))
	}
	return sh.may(v)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
