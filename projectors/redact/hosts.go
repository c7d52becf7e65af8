package redact

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
)

// Host, node, pod and container names; PIDs; user names; cloud accounts;
// card numbers.

// Public suffixes: a name that ends in one is a host's only when it also
// names a machine or an internal zone. Java packages end in a class name,
// file names in an extension: neither is in this set.
var hostTLDs = map[string]bool{
	"com": true, "net": true, "org": true, "io": true, "dev": true, "cloud": true, "ai": true,
	"co": true, "us": true, "uk": true, "de": true, "fr": true, "cn": true, "ru": true, "jp": true,
	"info": true, "biz": true, "edu": true, "gov": true, "mil": true, "xyz": true, "site": true,
	"online": true, "tech": true, "eu": true, "nl": true, "br": true, "in": true, "it": true,
	"es": true, "ca": true, "au": true, "ch": true, "se": true, "kr": true, "tw": true, "pl": true,
}

// First labels of Java/Kotlin/Scala packages, which look like reversed host
// names but are code.
var codeRoots = map[string]bool{
	"com": true, "org": true, "net": true, "io": true, "java": true, "javax": true, "jdk": true,
	"sun": true, "kotlin": true, "kotlinx": true, "scala": true, "android": true, "androidx": true,
}

func isLabelByte(c byte) bool { return class[c]&(cDigit|cAlpha|cUnder|cDash) != 0 }

// k8s name suffixes use this alphabet (no vowels, no 0/1/3).
func isK8sSuffixByte(c byte) bool {
	switch c {
	case 'b', 'c', 'd', 'f', 'g', 'h', 'j', 'k', 'l', 'm', 'n', 'p', 'q', 'r', 's', 't', 'v', 'w', 'x', 'z',
		'2', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

func redactHosts(rw *rewriter) {
	src := rw.src
	for i := 0; i < len(src); {
		if !isLabelByte(src[i]) || (i > 0 && (isLabelByte(src[i-1]) || src[i-1] == '.' || src[i-1] == '<' || src[i-1] == '@' || src[i-1] == '$')) {
			i++
			continue
		}
		j := i
		labels := 1
		dash := false
		for j < len(src) {
			if c := src[j]; isLabelByte(c) {
				dash = dash || c == '-'
				j++
				continue
			}
			if src[j] == '.' && j+1 < len(src) && isLabelByte(src[j+1]) {
				labels++
				j++
				continue
			}
			break
		}
		name := src[i:j]
		var p string
		if labels > 1 || dash {
			// Every single-label name classifyLabel knows holds a dash.
			p = classifyName(name, labels)
		}
		if p == "" && labels == 1 && j < len(src) && src[j] == ':' && hostWithPort(src, j) && hostLabel(name) {
			p = Host // db01:5432, vault-03:8200
		}
		if p == Account {
			j = i + bytes.IndexByte(name, '.')
		}
		if p != "" && !(j < len(src) && (src[j] == '(' || src[j] == '>' || src[j] == '$')) {
			rw.mask(i, j, kindOf(p))
		}
		i = j
	}
}

// hostWithPort reports whether src[j:] is ":<port>" ending the word.
func hostWithPort(src []byte, j int) bool {
	if j+2 >= len(src) || src[j] != ':' {
		return false
	}
	k := j + 1
	for k < len(src) && isDigit(src[k]) {
		k++
	}
	return k-j-1 >= 2 && k-j-1 <= 5 && (k == len(src) || !isWord(src[k]) && src[k] != '.' && src[k] != ':')
}

// hostLabel reports whether a single label reads as a machine's name: it
// starts with a letter and holds a digit (db01, etl-prod-1, bastion-03).
func hostLabel(b []byte) bool {
	if len(b) < 3 || !isAlpha(b[0]) {
		return false
	}
	for _, c := range b {
		if isDigit(c) {
			return !(len(b) <= 3 && (b[0] == 'v' || b[0] == 'V')) // v10:, not a host
		}
	}
	return false
}

// classifyName classifies a dotted name. A public name (github.com,
// docs.strapi.io) says nothing of a network and stays; a name is an
// internal host when it ends in an internal zone (svc.cluster.local,
// mlflow-05.sjc.internal), holds one before a public suffix
// (pg-5.intra.bank.net), or names a machine (db01.acme.com,
// ip-10-0-1-2.eu-west-1.compute); a public name whose first label is a
// number names an account there (Account: that label alone). Names with an upper-case last label
// are code (org.apache.hadoop.DataNode), as are Java packages.
func classifyName(name []byte, labels int) string {
	if labels == 1 {
		return classifyLabel(name)
	}
	dot := bytes.LastIndexByte(name, '.')
	last, first := lowerASCII(name[dot+1:]), name[:bytes.IndexByte(name, '.')]
	if len(last) < 2 || last == nil || documentationName(name) || !isUpperName(name) && !isLowerName(name[dot+1:]) ||
		runtimeHost(name) {
		return ""
	}
	if zoneFilter.may(last) && internalZones[string(last)] {
		if labels >= 3 && codeRoots[string(lowerASCII(first))] {
			return ""
		}
		return Host
	}
	if !tldFilter.may(last) || !hostTLDs[string(last)] {
		if classifyLabel(first) == Host {
			return Host
		}
		return ""
	}
	if labels >= 3 && (hostLabel(first) || classifyLabel(first) == Host) {
		return Host
	}
	if len(first) >= 6 && allDigits(first) {
		return Account // 414341772824.dkr.ecr.eu-west-1.amazonaws.com
	}
	for s := 0; s < dot; {
		e := s + bytes.IndexByte(name[s:], '.')
		if lp := lowerASCII(name[s:e]); zoneFilter.may(lp) && internalZones[string(lp)] {
			return Host
		}
		s = e + 1
	}
	return ""
}

// internalZones are the labels of names that resolve only inside a
// network.
var internalZones = wordSet(`local internal lan corp intra intranet localdomain consul cluster svc home arpa`)

func isLowerName(b []byte) bool {
	for _, c := range b {
		if c >= 'A' && c <= 'Z' {
			return false
		}
	}
	return true
}

func isUpperName(b []byte) bool {
	for _, c := range b {
		if c >= 'a' && c <= 'z' {
			return false
		}
	}
	return true
}

// classifyLabel recognises single-label names, all of which hold a dash:
// cloud node names (EC2
// ip-10-0-12-34 and instance ids, GKE and AKS node-pool nodes) and pod
// names (checkout-api-7d9f8b6c5d-x2k4p).
func classifyLabel(b []byte) string {
	if cloudNode(b) {
		return Host
	}
	if len(b) >= 10 && hasPrefixFold(b, "ip-") {
		n, k := 0, 3
		for k < len(b) {
			s := k
			for k < len(b) && isDigit(b[k]) {
				k++
			}
			if k == s || k-s > 3 {
				break
			}
			n++
			if k < len(b) && b[k] == '-' {
				k++
			}
		}
		if n == 4 {
			return Host
		}
	}
	d := bytes.LastIndexByte(b, '-')
	if d <= 0 || len(b)-d-1 != 5 {
		return ""
	}
	suffix := b[d+1:]
	digit := false
	for _, c := range suffix {
		if !isK8sSuffixByte(c) {
			return ""
		}
		digit = digit || isDigit(c)
	}
	if !digit {
		return ""
	}
	// A replica-set hash before the suffix makes it certain; without one
	// (DaemonSet pods) require a lower-case name.
	rest := b[:d]
	if h := bytes.LastIndexByte(rest, '-'); h > 0 && len(rest)-h-1 >= 8 && len(rest)-h-1 <= 10 {
		ok := true
		for _, c := range rest[h+1:] {
			ok = ok && isK8sSuffixByte(c)
		}
		if ok {
			return Pod
		}
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || isDigit(c) || c == '-') {
			return ""
		}
	}
	return Pod
}

// cloudNode reports whether b is the name of a managed cluster's node or a
// cloud instance: gke-<cluster>-<pool>-<8 hex>-<4>, aks-<pool>-<8
// digits>-vmss<6> or aks-<pool>-<8 digits>-<n>, i-<8 or 17 hex>.
func cloudNode(b []byte) bool {
	switch {
	case hasPrefixFold(b, "gke-"):
		d := bytes.LastIndexByte(b, '-')
		p := bytes.LastIndexByte(b[:max(d, 0)], '-')
		return d > 4 && len(b)-d-1 == 4 && isLowerAlnum(b[d+1:]) && p > 3 && d-p-1 == 8 && allHexBytes(b[p+1:d])
	case hasPrefixFold(b, "aks-"):
		d := bytes.LastIndexByte(b, '-')
		last := b[d+1:]
		if len(last) == 10 && hasPrefixFold(last, "vmss") && isLowerAlnum(last) {
			return true
		}
		p := bytes.LastIndexByte(b[:max(d, 0)], '-')
		return p > 3 && d-p-1 == 8 && allDigits(b[p+1:d]) && allDigits(last)
	case len(b) == 10 || len(b) == 19:
		return b[0] == 'i' && b[1] == '-' && allHexBytes(b[2:]) && isLowerAlnum(b[2:])
	}
	return false
}

func isLowerAlnum(b []byte) bool {
	for _, c := range b {
		if !(c >= 'a' && c <= 'z') && !isDigit(c) {
			return false
		}
	}
	return len(b) > 0
}

// Phrases: "user NAME", "password for NAME", "pid 1234", name[1234]:,
// /home/NAME.

// roleAccounts are the accounts that every installation of a tool has,
// named for their role, not for a person: public knowledge, like a
// default port. A user name elsewhere is personal and masked.
var roleAccounts = wordSet(`root admin administrator system guest ci ops operator postgres mysql nobody daemon
	www-data anonymous default service test git`)

// roleAccount reports whether v, quoted or not, names an account for its
// role rather than a person: one of roleAccounts, a word of prose
// (billing, reception), or a name with a part that names a service or a
// role (svc-veeam, CORP\svc_snap, nw_builder, sipuser).
func roleAccount(v []byte) bool {
	v = bytes.Trim(v, `"'`)
	if k := bytes.LastIndexByte(v, '\\'); k >= 0 {
		v = v[k+1:] // DOMAIN\name
	}
	lv := lowerASCII(v)
	if lv == nil {
		return false
	}
	if roleAccounts[string(lv)] || allLetters(lv) && proseWord(lv) {
		return true
	}
	for s := 0; s < len(lv); {
		e := s
		for e < len(lv) && lv[e] != '-' && lv[e] != '_' && lv[e] != '.' {
			e++
		}
		part := lv[s:e]
		for _, r := range roleParts {
			// A part that is r or ends with it ends with r's last byte:
			// one comparison rules most of roleParts out.
			if len(part) > 0 && part[len(part)-1] == r[len(r)-1] &&
				(string(part) == r || len(part) > len(r)+1 && bytes.HasSuffix(part, []byte(r)) && r != "ci" && r != "svc") {
				return true
			}
		}
		s = e + 1
	}
	return false
}

// roleParts name a service or a role in part of an account's name.
var roleParts = []string{"svc", "service", "bot", "builder", "ci", "sync", "monitor", "reader",
	"writer", "user", "admin", "agent", "daemon", "robot"}

// sharedHomes are the home directories of no person (C:\Users\Public,
// /Users/Shared).
var sharedHomes = wordSet(`public default shared guest`)

// Case matters: macOS homes are /Users/NAME, while /users/me is an HTTP path.
var homePrefixes = []string{"/home/", "/Users/", "\\Users\\", "/export/home/"}

// homeShares name the network shares that hold a folder per user: Samba's
// [homes], and the home and profile folders of Windows' file servers.
var homeShares = wordSet(`home homes users profiles userhome userhomes`)

// sharedHomeName returns the bounds of the user's folder in a UNC path
// to a share of homeShares that starts a path at src[i] (after a space,
// a quote, '=', '(', '<', '[', ',' or ';': \\filer\homes\alice, or
// //nas/home/alice, not a URL's path): the share's host, its name, then
// the folder; or (i, i).
func sharedHomeName(src []byte, i int) (int, int) {
	sep := src[i]
	if i+2 >= len(src) || src[i+1] != sep || i > 0 && strings.IndexByte(" \t\"'=(<[,;", src[i-1]) < 0 {
		return i, i // a path's start, not a URL's (https://host//home/x)
	}
	h := i + 2
	for h < len(src) && h-i <= 66 && (isAlnum(src[h]) || src[h] == '.' || src[h] == '-' || src[h] == '_') {
		h++
	}
	if h == i+2 || h >= len(src) || src[h] != sep {
		return i, i
	}
	ss := h + 1
	se := ss
	for se < len(src) && se-ss <= 10 && isAlpha(src[se]) {
		se++
	}
	if se >= len(src) || src[se] != sep || !homeShares[string(lowerASCII(src[ss:se]))] {
		return i, i
	}
	s := se + 1
	e := s
	for e < len(src) && e-s <= 64 && (isWord(src[e]) || src[e] == '.' || src[e] == '-' || src[e] == '$') {
		e++
	}
	for e > s && src[e-1] == '.' {
		e--
	}
	if e == s || isPlaceholder(src[s:]) || sharedHomes[string(lowerASCII(src[s:e]))] {
		return i, i
	}
	return s, e
}

// phraseBytes are the bytes at which redactPhrases can match anything.
var phraseBytes = func() (t [256]bool) {
	for _, c := range "[/\\s(" {
		t[c] = true
	}
	for _, p := range phrases {
		t[p.lit[0]], t[p.lit[0]-32] = true, true
	}
	return t
}()

// phraseNeeds are the bigrams that each case of redactPhrases needs in the
// text: a phrase, a home directory, sudo:, (to, or a '[' after a word.
var phraseNeeds = func() (out []features) {
	for _, p := range phrases {
		out = append(out, bigramsOf(p.lit))
	}
	for _, h := range homePrefixes {
		out = append(out, bigramsOf(h))
	}
	return append(out, bigramsOf("sudo:"), bigramsOf("(to "), bigramsOf("W["), bigramsOf("\\\\"))
}()

// gatePhrases reports whether the text has the bigrams of one of the
// cases of redactPhrases; without them the pass cannot match.
func gatePhrases(_ []byte, f features) bool {
	for _, n := range phraseNeeds {
		if f&n == n {
			return true
		}
	}
	return false
}

func redactPhrases(rw *rewriter) {
	src := rw.src
	for i := 0; i < len(src); i++ {
		c := src[i]
		if isWord(c) && (i > 0 && isWord(src[i-1]) || !phraseBytes[c]) {
			// Every case below that starts at a word byte needs it to
			// start a word: skip the rest of this one.
			for i+1 < len(src) && isWord(src[i+1]) {
				i++
			}
			continue
		}
		if !phraseBytes[c] {
			continue
		}
		switch {
		case c == '[' && i > 0 && isWord(src[i-1]):
			// sshd[24200]: — a syslog process id.
			j := i + 1
			for j < len(src) && isDigit(src[j]) {
				j++
			}
			if j > i+1 && j < len(src) && src[j] == ']' && (j+1 == len(src) || src[j+1] == ':' || src[j+1] == ' ') {
				rw.mask(i+1, j, kPID)
				i = j
			}
		case (c == '/' || c == '\\') && (i == 0 || !isKeyByte(src[i-1])):
			if s, e := sharedHomeName(src, i); e > s {
				// \\filer\homes\alice: a home share's folder.
				rw.mask(s, e, kUser)
				i = e - 1
				continue
			}
			// A home directory at the root of a path, not /zone/home/x.
			for _, p := range homePrefixes {
				if bytes.HasPrefix(src[i:], []byte(p)) {
					s := i + len(p)
					e := s
					for e < len(src) && (isWord(src[e]) || src[e] == '.' || src[e] == '-') {
						e++
					}
					if e > s && !isPlaceholder(src[s:]) && !sharedHomes[string(lowerASCII(src[s:e]))] {
						rw.mask(s, e, kUser)
						i = e - 1
					}
					break
				}
			}
		case c == 's' && phrasePrefix(src[i:], "sudo:") && (i == 0 || !isWord(src[i-1])):
			// sudo:   alice : TTY=pts/0 ; … — the invoking account.
			s, e := wordAfterSpaces(src, i+5)
			if e > s && phrasePrefix(src[e:], " : ") && !isPlaceholder(src[s:]) {
				rw.mask(s, e, kUser)
				i = e - 1
			}
		case c == '(' && phrasePrefix(src[i:], "(to "):
			// su: (to root) alice on pts/1 — the account that switched.
			k := bytes.IndexByte(src[i:min(len(src), i+64)], ')')
			if k < 0 {
				continue
			}
			s, e := wordAfterSpaces(src, i+k+1)
			if e > s && phrasePrefix(src[e:], " on ") && !isPlaceholder(src[s:]) {
				rw.mask(s, e, kUser)
				i = e - 1
			}
		case phraseStart[lower(c)] && (i == 0 || !isWord(src[i-1])):
			ph := matchPhrase(src[i:])
			if ph == nil {
				continue
			}
			next := i + len(ph.lit)
			quote := byte(0)
			if next < len(src) && (src[next] == '"' || src[next] == '\'') && ph.repl == User {
				quote = src[next] // User 'alice' authenticated
				next++
			}
			e := next
			for e < len(src) && e-next <= 64 && (isWord(src[e]) || src[e] == '.' && !(e+1 < len(src) && src[e+1] == '.') || src[e] == '-' || src[e] == '@') {
				e++
			}
			for e > next && src[e-1] == '.' {
				e-- // the sentence's full stop
			}
			w := src[next:e]
			if len(w) == 0 || len(w) > 64 || quote != 0 && (e >= len(src) || src[e] != quote) {
				continue
			}
			if ph.repl == PID {
				if !allDigits(w) || len(w) < ph.minDigits {
					continue
				}
			} else {
				lw := lowerASCII(w)
				if lw != nil && (englishWords[string(lw)] || afterUser[string(lw)]) {
					if string(lw) == "invalid" && phrasePrefix(src[e:], " user ") {
						i = e // "for invalid user NAME": handled at "user".
					}
					continue
				}
				if ph.repl == User && quote == 0 && lw != nil && allLetters(lw) && englishPlural(lw) {
					continue // user comments, user namespaces, the user accesses: a plural or a verb's -s
				}
				if ph.repl == User && quote == 0 && allLetters(w) && (commonNounUser(src, i) || contraction(src[e:])) {
					// "the user pools", "$user selectors", "user doesn't":
					// the noun of a sentence or a variable, then a word of
					// the sentence.
					continue
				}
				if (e < len(src) && src[e] == '(') || !nameLike(w) || beforeObject(src[e:]) || roleAccount(w) ||
					len(bytes.TrimLeft(src[e:min(len(src), e+4)], " ")) > 0 && bytes.TrimLeft(src[e:min(len(src), e+4)], " ")[0] == '=' {
					// user IP = x: a key, not a name
					continue
				}
				if ph.lit != "user " && e < len(src) && src[e] == ' ' && !phrasePrefix(src[e:], " from ") && !phrasePrefix(src[e:], " on ") {
					// "password for NAME" names an account in a prompt or
					// before where it came from; "Password for repository is
					// not set" is prose.
					continue
				}
			}
			rw.mask(next, e, kindOf(ph.repl))
			i = e - 1
		}
	}
}

// commonNounUser reports whether the phrase's word at i ("user") is a
// common noun rather than a title before an account's name: a variable's
// name ($user), or a noun after a determiner (the user, this user), which
// a sentence goes on from.
func commonNounUser(src []byte, i int) bool {
	if i > 0 && src[i-1] == '$' {
		return true
	}
	k := i
	for k > 0 && src[k-1] == ' ' {
		k--
	}
	s := k
	for s > 0 && k-s < 8 && isAlpha(src[s-1]) {
		s--
	}
	return k < i && s < k && (s == 0 || !isWord(src[s-1])) && determiners[string(lowerASCII(src[s:k]))]
}

// contraction reports whether rest starts with a negative contraction's
// "'t": the word before it is a verb (doesn't, didn't).
func contraction(rest []byte) bool {
	return len(rest) >= 2 && rest[0] == '\'' && rest[1] == 't' && (len(rest) == 2 || !isAlpha(rest[2]))
}

// wordAfterSpaces returns the bounds of the account-name word after the
// spaces at i (at most 64 bytes).
func wordAfterSpaces(src []byte, i int) (int, int) {
	for i < len(src) && src[i] == ' ' {
		i++
	}
	e := i
	for e < len(src) && e-i < 64 && (isWord(src[e]) || src[e] == '.' || src[e] == '-') {
		e++
	}
	return i, e
}

// A phrase names the value of the word after it: "user NAME", "password
// for NAME", "pid 1234".
type phrase struct {
	lit       string
	repl      string
	minDigits int // PID phrases: the fewest digits that make an id
}

var phrases = []phrase{
	{"user ", User, 0}, {"password for ", User, 0}, {"publickey for ", User, 0},
	{"pid ", PID, 1}, {"ppid ", PID, 1}, {"tid ", PID, 1}, {"lwp ", PID, 1}, {"pgid ", PID, 1},
	{"thread id ", PID, 1}, {"thread ", PID, 3}, // longer phrases first
}

// phraseIndex lists the phrases by first letter, in order.
var phraseIndex = func() (t [256][]int) {
	for k, p := range phrases {
		t[p.lit[0]] = append(t[p.lit[0]], k)
	}
	return t
}()

var phraseSecond = func() (t [256]bool) {
	for _, p := range phrases {
		t[p.lit[1]] = true
	}
	return t
}()

var phraseStart = func() (t [256]bool) {
	for _, p := range phrases {
		t[p.lit[0]] = true
	}
	return t
}()

func matchPhrase(s []byte) *phrase {
	if len(s) < 4 || !phraseSecond[lower(s[1])] {
		return nil
	}
	for _, k := range phraseIndex[lower(s[0])] {
		if phrasePrefix(s, phrases[k].lit) {
			return &phrases[k]
		}
	}
	return nil
}

// nameLike reports whether the word after "user" names an account rather
// than continuing an English sentence ("User cancelled the checkout"): it
// holds a digit or one of _ . - @, or it is not an English word by the
// stop list or by its ending.
func nameLike(w []byte) bool {
	for _, c := range w {
		if isDigit(c) || c == '_' || c == '.' || c == '-' || c == '@' {
			return true
		}
	}
	if len(w) > 32 {
		return false
	}
	lw := lowerASCII(w)
	if englishWords[string(lw)] {
		return false
	}
	for _, suffix := range englishSuffixes {
		if len(lw) >= len(suffix)+3 && bytes.HasSuffix(lw, []byte(suffix)) {
			return false
		}
	}
	return true
}

// englishPlural reports whether the lower-case word lw is an English
// word with the -s or -es of a plural or of a verb's third person
// (comments, customizations, accesses): its stem is a word of the stop
// lists or has an English ending. A name that ends in s seldom leaves one
// (james, charles, dennis).
func englishPlural(lw []byte) bool {
	if len(lw) < 5 || lw[len(lw)-1] != 's' || lw[len(lw)-2] == 's' {
		return false
	}
	for _, n := range []int{1, 2} {
		stem := lw[:len(lw)-n]
		if n == 2 && lw[len(lw)-2] != 'e' {
			break
		}
		if englishWords[string(stem)] || afterUser[string(stem)] || !nameLike(stem) {
			return true
		}
	}
	return false
}

// beforeObject reports whether rest starts with a determiner: then the word
// before it is a verb ("the user forgets their password"), not a name.
func beforeObject(rest []byte) bool {
	if len(rest) < 2 || rest[0] != ' ' {
		return false
	}
	e := 1
	for e < len(rest) && isAlpha(rest[e]) {
		e++
	}
	if e < len(rest) && rest[e] != ' ' {
		return false
	}
	return determiners[string(lowerASCII(rest[1:e]))]
}

var determiners = map[string]bool{"the": true, "a": true, "an": true, "their": true, "his": true, "her": true, "its": true,
	"our": true, "your": true, "my": true, "this": true, "that": true, "these": true, "those": true, "some": true, "every": true,
	"all": true, "no": true}

// Endings of English words that are seldom the endings of user names.
var englishSuffixes = []string{"ed", "ing", "tion", "sion", "ment", "ness", "ity", "ous", "ive", "ful", "less",
	"able", "ible", "ance", "ence", "ly", "ies", "ize", "ise", "ure"}

// afterUser are more nouns that follow "user" in prose (user access
// denied, user status changed), kept apart from englishWords: before
// "code" they make a secret code (access code, lock code).
var afterUser = wordSet(`access consent content context lock lockout lookup rights status sync`)

// Words that follow "user" in prose and log messages: verbs, nouns of
// account management and interfaces, function words.
var englishWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		a an the this that these those his her its their our your my no any each every all some
		unknown invalid cannot space logged authentication
		is are was were be been being has have had do does did can could will would shall should may might must
		not and or but if then than so as at by for from in into of on onto to with without within via per about
		who which what when where why how whose
		agent agents account accounts action actions activity admin answer api app apps attribute attributes
		base bar behaviour behavior browser button
		cache cart change changes click clicks code config count credentials
		dashboard data database db details device devices directory
		email emails entry error errors event events experience
		feedback field fields file files flow form
		group groups guide
		history home
		id ids identity info information input interface interfaces issue issues
		journey
		key keys
		level limit list login logins logout
		management manager mapping menu message messages metadata mode model
		name names notification notifications
		object options
		page pages password passwords path permission permissions picture pool portal preference preferences
		principal privileges profile profiles prompt
		quota query
		record records registration request requests research role roles
		scope search segment segments service services session sessions setting settings space state stats
		store story stories submission subscription support system systems
		table tables task tasks test tests text token tokens tracking traffic type types
		update updates usage
		value values view views
		accepts adds agrees asks attempts buys calls cancels changes chooses clicks closes confirms connects
		creates deletes downloads edits enters exits fails finds gets gives goes hits joins keeps leaves likes
		loads logs makes moves needs opens orders owns pays picks posts presses reads receives refreshes
		registers reloads removes reports requests resets returns saves scrolls searches sees selects sends
		sets shares signs starts stops submits switches taps tries types updates uploads uses views visits
		waits wants writes
		accept add agree ask buy call cancel choose close confirm connect create delete download edit enter
		exit fail find get give go hit join keep leave like load log make move need open order own pay pick
		post press read receive refresh register reload remove report reset return save scroll search see
		select send set share sign start stop submit switch tap try type upload use view visit wait want write
		exists belongs lacks appears remains exceeds reaches declines expires matches prefers holds lives misses
		forgets remembers triggers becomes seems tends happens continues
		exist belong lack appear remain exceed reach decline expire match prefer hold live miss forget remember
		also already just now only still then there here again
		cancelled canceled
		mon tue wed thu fri sat sun monday tuesday wednesday thursday friday saturday sunday
		jan feb mar apr jun jul aug sep sept oct nov dec january february march april june july august
		september october november december
	`) {
		m[w] = true
	}
	return m
}()

// Cloud account ids inside ARNs.

func redactARN(rw *rewriter) {
	src := rw.src
	for off := 0; off < len(src); {
		k := bytes.Index(src[off:], []byte("arn:"))
		if k < 0 {
			return
		}
		i := off + k
		// arn:partition:service:region:account:resource
		p := i
		field := 0
		for p < len(src) && field < 4 {
			if src[p] == ':' {
				field++
			} else if isSpace(src[p]) {
				break
			}
			p++
		}
		if field == 4 {
			e := p
			for e < len(src) && isDigit(src[e]) {
				e++
			}
			if e-p == 12 {
				rw.mask(p, e, kAccount)
			}
			off = e
			continue
		}
		off = i + 4
	}
}

// International bank account numbers (ISO 13616): a country's two
// capitals, two check digits and 11 to 30 capitals and digits, together
// or in the printed groups of four, whose check (ISO 7064 mod 97-10)
// holds: a bank account's, wherever it stands.

// redactIBANs masks the IBANs of src as accounts.
func redactIBANs(rw *rewriter) {
	src := rw.src
	// The check digits are two, so one of them stands at an odd offset:
	// the scan looks at every other byte.
	for k := 3; k+12 < len(src); k += 2 {
		if !isDigit(src[k]) {
			continue
		}
		for c := k - 1; c <= k; c++ { // c: the first check digit
			i := c - 2
			if i < 0 || !isDigit(src[c]) || !isDigit(src[c+1]) || !isUpper(src[i]) || !isUpper(src[i+1]) || i > 0 && isAlnum(src[i-1]) {
				continue
			}
			if e := ibanEnd(src, i); e > i {
				rw.mask(i, e, kAccount)
				k = e | 1 // the next odd offset at or after the IBAN's end
				break
			}
		}
	}
}

// ibanEnd returns the end of the IBAN at src[i], whose first four bytes
// are two capitals and two digits, or i.
func ibanEnd(src []byte, i int) int {
	var ch [34]byte
	n, e := 0, i
	for e < len(src) && n < len(ch) {
		c := src[e]
		if isUpper(c) || isDigit(c) {
			ch[n], n, e = c, n+1, e+1
			continue
		}
		// One space between the printed groups of four.
		if c == ' ' && n%4 == 0 && e+1 < len(src) && (isUpper(src[e+1]) || isDigit(src[e+1])) {
			e++
			continue
		}
		break
	}
	if n < 15 || e < len(src) && isAlnum(src[e]) || src[e-1] == ' ' {
		return i
	}
	// The check: the first four characters moved to the end, each letter
	// read as two digits (A = 10), the number modulo 97 is 1.
	rem := 0
	for k := range n {
		c := ch[(k+4)%n]
		if isDigit(c) {
			rem = (rem*10 + int(c-'0')) % 97
		} else {
			rem = (rem*100 + int(c-'A'+10)) % 97
		}
	}
	if rem != 1 {
		return i
	}
	return e
}

// Card numbers: 13–19 digits in groups, Luhn-valid; and a number of
// 16 digits or more that is no time, an id.

func redactCards(rw *rewriter) {
	src := rw.src
	nd := digitCount(src)
	if nd >= 10 {
		redactIBANs(rw) // an IBAN holds ten digits at least (Norway's, 15 characters, 13)
	}
	if nd < 13 {
		return // most texts hold too few digits for a card number
	}
	// Declared once: each number reads only what it has written, and
	// clearing them for every number would cost more than the number.
	var digits [19]byte
	// ends[k] is the byte end and digit count of the k-th group, so that
	// a number followed by more digits ("4111 1111 1111 1111 01") can be
	// tried at each group boundary.
	var ends [8][2]int
	for i := 0; i < len(src); i++ {
		if !isDigit(src[i]) {
			continue
		}
		if i > 0 && (isWord(src[i-1]) || src[i-1] == '.' || (src[i-1] == '-' && i > 1 && isWord(src[i-2]))) {
			for i+1 < len(src) && isDigit(src[i+1]) {
				i++
			}
			continue
		}
		ngroups := 0
		n, j, seps := 0, i, 0
		var sep byte
		groupLen := 0
		for j < len(src) {
			c := src[j]
			if isDigit(c) {
				if n == 19 {
					break
				}
				digits[n] = c - '0'
				n++
				groupLen++
				j++
				continue
			}
			if (c == ' ' || c == '-') && j+1 < len(src) && isDigit(src[j+1]) && groupLen >= 4 && groupLen <= 6 && ngroups < len(ends)-1 {
				if sep == 0 {
					sep = c
				} else if sep != c {
					break
				}
				ends[ngroups] = [2]int{j, n}
				ngroups++
				seps++
				groupLen = 0
				j++
				continue
			}
			break
		}
		wordAfter := j < len(src) && (isWord(src[j]) || src[j] == '.' && j+1 < len(src) && isDigit(src[j+1]))
		ends[ngroups] = [2]int{j, n}
		matched := false
		for g := ngroups; g >= 0; g-- {
			e, cnt := ends[g][0], ends[g][1]
			if g == ngroups && (wordAfter || n == 19 && j < len(src) && isDigit(src[j])) {
				continue
			}
			if cnt >= 13 && cnt <= 19 && luhn(digits[:cnt]) && (g > 0 || cardPrefix(digits[:cnt])) {
				rw.mask(i, e, kCard)
				i = e - 1
				matched = true
				break
			}
		}
		if !matched && ngroups == 0 && n >= 16 && (i == 0 || src[i-1] != '-') && !wordAfter && (j == len(src) || !isDigit(src[j])) &&
			!clockLike(src[i:j]) && !roundOrLimit(src[i:j]) {
			// A number of sixteen digits or more is an id (a gift card's,
			// a voucher's, a snowflake id), unless it is negative or reads
			// as a clock, a quantity or an integer type's limit.
			rw.mask(i, j, kID)
			i, matched = j-1, true
		}
		if !matched {
			if ngroups > 0 {
				// "0000 4111 1111 1111 1111": retry from the next group.
				i = ends[0][0]
			} else {
				i = j - 1
			}
		}
	}
}

// digitCount returns the number of ASCII digits in src, eight bytes at a
// time: the high bit of each byte of a word is set where the byte is an
// ASCII byte from '0' up and not from ':' up, and the set bits are
// counted. The bytes past the last whole word cost a table load each.
func digitCount(src []byte) int {
	const low7, high = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	n, i := 0, 0
	for ; i+8 <= len(src); i += 8 {
		w := binary.LittleEndian.Uint64(src[i:])
		b := w & low7                       // no carry leaves a byte: 0x7f+0x50 < 0x100
		fromZero := b + 0x5050505050505050  // 0x80-'0' added to each byte
		fromColon := b + 0x4646464646464646 // 0x80-':'
		n += bits.OnesCount64(fromZero &^ fromColon &^ w & high)
	}
	for _, c := range src[i:] {
		n += int(class[c] & cDigit)
	}
	return n
}

// clockLike reports whether the decimal digits d read as a time since
// 1970 in microseconds or nanoseconds, or since 1601 in units of 100 ns
// (Windows), from the year 2000 to 2100.
func clockLike(d []byte) bool {
	var v uint64
	for _, c := range d {
		v = v*10 + uint64(c-'0')
	}
	switch len(d) {
	case 16:
		return v >= 946_684_800_000_000 && v < 4_102_444_800_000_000
	case 18:
		return v >= 125_911_584_000_000_000 && v < 157_469_184_000_000_000
	case 19:
		return v >= 946_684_800_000_000_000 && v < 4_102_444_800_000_000_000
	}
	return false
}

// roundOrLimit reports whether the decimal digits d end in four zeros or
// more, as a quantity does (a duration in nanoseconds, a counter), repeat
// one digit, or are the limit of a 64-bit integer or of a float's exact
// integers: an id is drawn at random.
func roundOrLimit(d []byte) bool {
	switch string(d) {
	case "9223372036854775807", "9223372036854775808", "18446744073709551615", "9007199254740991", "9007199254740992":
		return true
	}
	return bytes.HasSuffix(d, []byte("0000")) || len(bytes.Trim(d, string(d[:1]))) == 0
}

func cardPrefix(d []byte) bool {
	switch {
	case d[0] == 4:
		return true
	case d[0] == 5 && d[1] >= 1 && d[1] <= 5:
		return true
	case d[0] == 3 && (d[1] == 4 || d[1] == 7):
		return true
	case d[0] == 6 && (d[1] == 5 || (d[1] == 0 && d[2] == 1 && d[3] == 1)):
		return true
	case d[0] == 2 && d[1] >= 2 && d[1] <= 7:
		return true
	}
	return false
}

func luhn(d []byte) bool {
	sum := 0
	double := false
	for k := len(d) - 1; k >= 0; k-- {
		v := int(d[k])
		if double {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
		double = !double
	}
	return sum%10 == 0
}

// phrasePrefix is hasPrefixFold where a space of lit also matches '+', the
// space of URL-encoded text.
func phrasePrefix(s []byte, lit string) bool {
	if len(s) < len(lit) {
		return false
	}
	for j := 0; j < len(lit); j++ {
		c := lower(s[j])
		if c != lit[j] && !(lit[j] == ' ' && c == '+') {
			return false
		}
	}
	return true
}

// documentationName reports whether name is reserved for documentation
// and tests (RFC 2606, RFC 6761): example.com, *.example, *.test, …
func documentationName(name []byte) bool {
	for _, s := range []string{"example.com", "example.org", "example.net", ".example", ".test", ".invalid"} {
		if hasSuffixFold(name, s) && (len(name) == len(s) || s[0] == '.' || name[len(name)-len(s)-1] == '.') {
			return true
		}
	}
	return false
}

// An account written as a given name and an initial (marta_k, j.osei)
// is a person's where a person stands: after by, to or for, or after a
// person's part (officer, driver, assignee), in prose or as a key.
func gateHandles(src []byte, f features) bool {
	return f&fDot != 0 || bytes.IndexByte(src, '_') >= 0
}

func redactHandles(rw *rewriter) {
	src := rw.src
	// The next '.' and '_' at or after off, each searched for again only
	// once passed: one look at each byte for each.
	nd, nu := -1, -1
	for off := 0; off < len(src); {
		if nd < off {
			nd = nextByte(src, off, '.')
		}
		if nu < off {
			nu = nextByte(src, off, '_')
		}
		p := min(nd, nu)
		if p >= len(src) {
			return
		}
		off = p + 1
		if !oneLetterSide(src, p) {
			continue // no initial beside the separator: most dots and underscores
		}
		s := p
		for s > 0 && p-s <= 16 && src[s-1] >= 'a' && src[s-1] <= 'z' {
			s--
		}
		e := p + 1
		for e < len(src) && e-p <= 17 && src[e] >= 'a' && src[e] <= 'z' {
			e++
		}
		for e < len(src) && isDigit(src[e]) {
			e++ // the account's number (marta_k2)
		}
		if s == p || e == p+1 || s > 0 && (isWord(src[s-1]) || src[s-1] == '.' || src[s-1] == '-' || src[s-1] == '/') ||
			e < len(src) && (isWord(src[e]) || src[e] == '.' && e+1 < len(src) && isAlpha(src[e+1]) || src[e] == '-' || src[e] == '/' || src[e] == '(') {
			continue
		}
		if !initialHandle(src[s:e], p-s) || !personBefore(src, s) || isPlaceholder(src[s:]) {
			continue
		}
		rw.mask(s, e, kUser)
		off = e
	}
}

// oneLetterSide reports whether the separator at p has a lone small
// letter on one side, an initial.
func oneLetterSide(src []byte, p int) bool {
	lone := func(k int, step int) bool {
		if k < 0 || k >= len(src) || src[k] < 'a' || src[k] > 'z' {
			return false
		}
		n := k + step
		return n < 0 || n >= len(src) || !isAlpha(src[n])
	}
	return lone(p-1, -1) || lone(p+1, 1)
}

// initialHandle reports whether w, lower-case letters with one separator
// at sep, is a given name and an initial, joined by '_' either way round
// (marta_k, k_marta) or by '.' after the initial (j.osei), then digits
// or none: the name of four to sixteen letters and no English word.
// Code joins words and abbreviations (sd_notify, redis.py, pthread_t).
func initialHandle(w []byte, sep int) bool {
	a, b := w[:sep], bytes.TrimRight(w[sep+1:], "0123456789")
	if len(a) == 1 {
		a, b = b, a
	} else if w[sep] == '.' || string(b) == "t" {
		return false // a file's extension, a C type's _t
	}
	return len(b) == 1 && isAlpha(b[0]) && len(a) >= 4 && len(a) <= 16 && allLetters(a) && !englishWords[string(a)]
}

// personBefore reports whether the text before s, an account's start,
// is where a person stands: after by, to or for, or a person's part, as a
// word of prose or a key (lead=, "owner": ).
func personBefore(src []byte, s int) bool {
	k := s
	for k > 0 && s-k < 3 && (src[k-1] == ' ' || src[k-1] == '=' || src[k-1] == ':' || src[k-1] == '"') {
		k--
	}
	if k == s {
		return false
	}
	ws := k
	for ws > 0 && k-ws < 12 && isAlpha(src[ws-1]) {
		ws--
	}
	var buf [16]byte
	w := lowerInto(&buf, src[ws:k])
	return w != nil && (ws == 0 || !isAlnum(src[ws-1])) && (personWords[string(w)] || personParts[string(w)])
}

// personParts stand before a person's account in prose, with
// personWords: to, and the parts people play.
var personParts = wordSet(`to officer interpreter driver courier dispatcher tenant guest customer player student
	teacher nurse lead author requester reporter instructor coach volunteer`)

// actorName reports whether w is shaped as an account a person was given:
// three to sixteen small letters, then at most three digits, no English
// word, no role's account and no word that qualifies a credential (guest
// master password).
func actorName(w []byte) bool {
	n := 0
	for n < len(w) && w[n] >= 'a' && w[n] <= 'z' {
		n++
	}
	if n < 3 || n > 16 || len(w)-n > 3 || !allDigits(w[n:]) && n < len(w) {
		return false
	}
	name := string(w[:n])
	return !englishWords[name] && !roleAccount(w) && !actorRoles[name] && !settingWords[name] && !qualifiedNouns["key"][name]
}

// prepositions of personWords and personParts name no part: "for static
// password" is prose.
var prepositions = wordSet(`by for to`)

// actorRoles are the parts people play at work, with personWords and
// personParts: an account follows one.
var actorRoles = wordSet(`admin administrator manager leader marshal apprentice supervisor referee umpire steward attendant
	bartender barista waiter chef foreman trainee intern associate tech mechanic installer caretaker janitor porter usher guard
	warden ranger keeper curator librarian archivist docent user`)
