package redact

import "bytes"

// Host, node, pod and container names; PIDs; user names; cloud accounts;
// card numbers.

// Last labels that make a dotted name a host name. Java packages end in a
// class name, file names in an extension: neither is in this set.
var hostTLDs = map[string]bool{
	"local": true, "internal": true, "lan": true, "corp": true, "intra": true, "intranet": true,
	"localdomain": true, "home": true, "consul": true, "cluster": true, "svc": true,
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

func isLabelByte(c byte) bool { return isAlnum(c) || c == '-' || c == '_' }

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
		for j < len(src) {
			if isLabelByte(src[j]) {
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
		if p := classifyName(name, labels); p != "" && !(j < len(src) && (src[j] == '(' || src[j] == '>' || src[j] == '$')) {
			rw.replace(i, j, p)
		}
		i = j
	}
}

func classifyName(name []byte, labels int) string {
	if labels == 1 {
		return classifyLabel(name)
	}
	last := name[bytes.LastIndexByte(name, '.')+1:]
	first := name[:bytes.IndexByte(name, '.')]
	if len(last) < 2 || len(last) > 11 {
		return ""
	}
	var buf [12]byte
	l := buf[:len(last)]
	for k, c := range last {
		if c >= 'A' && c <= 'Z' {
			// Upper-case letters in the last label mean a class name, unless
			// the whole name is upper-case (an upper-cased host).
			if !isUpperName(name) {
				return ""
			}
		}
		l[k] = lower(c)
	}
	if !hostTLDs[string(l)] {
		if p := classifyLabel(first); p == Host {
			return Host // ip-10-0-1-2.eu-west-1.compute
		}
		return ""
	}
	if labels >= 3 && codeRoots[string(lowerASCII(first))] && !internalTLD(l) {
		return ""
	}
	return Host
}

func internalTLD(l []byte) bool {
	switch string(l) {
	case "local", "internal", "lan", "corp", "intra", "intranet", "localdomain", "consul", "cluster", "svc":
		return true
	}
	return false
}

func isUpperName(b []byte) bool {
	for _, c := range b {
		if c >= 'a' && c <= 'z' {
			return false
		}
	}
	return true
}

// classifyLabel recognises single-label names: EC2-style node names
// (ip-10-0-12-34) and pod names (checkout-api-7d9f8b6c5d-x2k4p).
func classifyLabel(b []byte) string {
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

// Phrases: "user NAME", "password for NAME", "pid 1234", name[1234]:,
// /home/NAME.

var userStop = map[string]bool{
	"from": true, "for": true, "is": true, "was": true, "not": true, "with": true, "the": true,
	"a": true, "an": true, "to": true, "in": true, "on": true, "has": true, "had": true, "id": true,
	"name": true, "names": true, "authentication": true, "account": true, "data": true, "agent": true,
	"session": true, "request": true, "profile": true, "does": true, "did": true, "logged": true,
	"unknown": true, "and": true, "or": true, "of": true, "by": true, "at": true, "as": true,
	"invalid": true, "root": false, "that": true, "this": true, "service": true, "list": true,
	"interface": true, "input": true, "mode": true, "space": true, "level": true, "must": true,
	"can": true, "cannot": true, "will": true, "should": true, "be": true, "info": true,
}

// Case matters: macOS homes are /Users/NAME, while /users/me is an HTTP path.
var homePrefixes = []string{"/home/", "/Users/", "\\Users\\", "/export/home/"}

func redactPhrases(rw *rewriter) {
	src := rw.src
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '[' && i > 0 && isWord(src[i-1]):
			// sshd[24200]: — a syslog process id.
			j := i + 1
			for j < len(src) && isDigit(src[j]) {
				j++
			}
			if j > i+1 && j < len(src) && src[j] == ']' && (j+1 == len(src) || src[j+1] == ':' || src[j+1] == ' ') {
				rw.replace(i+1, j, PID)
				i = j
			}
		case c == '/' || c == '\\':
			for _, p := range homePrefixes {
				if bytes.HasPrefix(src[i:], []byte(p)) {
					s := i + len(p)
					e := s
					for e < len(src) && (isWord(src[e]) || src[e] == '.' || src[e] == '-') {
						e++
					}
					if e > s && !isPlaceholder(src[s:]) {
						rw.replace(s, e, User)
						i = e - 1
					}
					break
				}
			}
		case (c == 'u' || c == 'U' || c == 'p' || c == 'P') && (i == 0 || !isWord(src[i-1])):
			var next int
			var repl string
			switch {
			case phrasePrefix(src[i:], "user "):
				next, repl = i+5, User
			case phrasePrefix(src[i:], "password for "):
				next, repl = i+13, User
			case phrasePrefix(src[i:], "publickey for "):
				next, repl = i+14, User
			case phrasePrefix(src[i:], "pid "):
				next, repl = i+4, PID
			default:
				continue
			}
			e := next
			for e < len(src) && (isWord(src[e]) || src[e] == '.' || src[e] == '-' || src[e] == '@') {
				e++
			}
			w := src[next:e]
			if len(w) == 0 || len(w) > 64 {
				continue
			}
			if repl == PID {
				if !allDigits(w) {
					continue
				}
			} else {
				lw := lowerASCII(w)
				if lw != nil && userStop[string(lw)] {
					if string(lw) == "invalid" && phrasePrefix(src[e:], " user ") {
						i = e // "for invalid user NAME": handled at "user".
					}
					continue
				}
				if e < len(src) && src[e] == '(' {
					continue
				}
			}
			rw.replace(next, e, repl)
			i = e - 1
		}
	}
}

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
				rw.replace(p, e, Account)
			}
			off = e
			continue
		}
		off = i + 4
	}
}

// Card numbers: 13–19 digits in groups, Luhn-valid.

func redactCards(rw *rewriter) {
	src := rw.src
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
		var digits [19]byte
		// ends[k] is the byte end and digit count of the k-th group, so that
		// a number followed by more digits ("4111 1111 1111 1111 01") can be
		// tried at each group boundary.
		var ends [8][2]int
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
				rw.replace(i, e, Card)
				i = e - 1
				matched = true
				break
			}
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
