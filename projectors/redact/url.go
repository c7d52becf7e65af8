package redact

import "bytes"

// URLs: credentials in the authority (scheme://user:pass@host) and container
// runtime ids (containerd://<64 hex>).

func isSchemeByte(c byte) bool { return isAlnum(c) || c == '+' || c == '.' || c == '-' }

const maxAuthority = 1024

func redactURL(rw *rewriter) {
	src := rw.src
	for off := 0; off < len(src); {
		k := bytes.Index(src[off:], []byte("://"))
		if k < 0 {
			return
		}
		i := off + k
		s := i
		for s > 0 && isSchemeByte(src[s-1]) {
			s--
		}
		if s == i {
			off = i + 3
			continue
		}
		as := i + 3
		ae := as
		// Authorities are short; the bound keeps hostile input linear.
		for ae < len(src) && ae-as < maxAuthority {
			c := src[ae]
			if isSpace(c) || c == '"' || c == '\'' || c == '>' || c == '<' || c == '`' {
				break
			}
			ae++
		}
		if s == i || ae == as {
			off = i + 3
			continue
		}
		scheme := lowerASCII(src[s:i])
		switch string(scheme) {
		case "containerd", "docker", "cri-o", "crio":
			he := as
			for he < ae && isHex(src[he]) {
				he++
			}
			if he-as >= 12 && (he == len(src) || !isWord(src[he])) {
				rw.mask(as, he, kContainer)
			}
			off = ae
			continue
		}
		hs := as
		if at := userinfoEnd(src[as:ae]); at >= 0 {
			at += as
			if !referencesOnly(src, as, at) {
				rw.mask(as, at, kSecret)
			}
			hs = at + 1
		}
		he := hs
		for he < ae && (isAlnum(src[he]) || src[he] == '-' || src[he] == '_' || src[he] == '.') {
			he++
		}
		// The host of a URL that carried credentials is an internal name.
		if hs > as && he > hs && !isPlaceholder(src[hs:]) && !isDigit(src[hs]) && string(lowerASCII(src[hs:he])) != "localhost" {
			rw.mask(hs, he, kHost)
		}
		if p := bytes.IndexByte(src[he:ae], '/'); p >= 0 {
			redactPath(rw, src[hs:he], he+p, ae)
		}
		off = ae
	}
}

// Path segments that introduce a webhook's secret: everything after them
// in the path is the credential (Discord, Teams, Mattermost, Zapier, any
// "/webhooks/<token>"). Slack's own markers count only on a Slack host.
var webhookMarkers = []string{"webhooks", "webhook", "webhookb2", "hooks", "hook", "incomingwebhook"}
var slackMarkers = []string{"services", "workflows", "triggers"}

// redactPath redacts the credentials a URL carries in its path, from ps
// (a '/') to the end of the URL at ae: the rest of the path after a webhook
// marker, the token of a Telegram bot (/bot<id>:<token>), the key after
// /with/key/. A random segment is the generated-value pass's.
func redactPath(rw *rewriter, host []byte, ps, ae int) {
	src := rw.src
	pe := ps
	for pe < ae && src[pe] != '?' && src[pe] != '#' {
		pe++
	}
	slack := indexFold(host, "slack") >= 0
	var prev []byte
	for s := ps + 1; s < pe; {
		e := s
		for e < pe && src[e] != '/' {
			e++
		}
		seg := src[s:e]
		switch {
		case e < pe-1 && (oneOfFold(seg, webhookMarkers) || (slack && oneOfFold(seg, slackMarkers)) ||
			(equalFold(seg, "key") && equalFold(prev, "with"))):
			if re := trimSlash(src, e+1, pe); !routeWords(src[e+1 : re]) {
				rw.mask(e+1, re, kSecret)
			}
			return
		case len(seg) > 4 && hasPrefixFold(seg, "bot") && isDigit(seg[3]) && bytes.IndexByte(seg, ':') > 0:
			rw.mask(s+3, e, kSecret)
		case oneOfFold(prev, capabilityMarkers) && capabilityToken(seg):
			rw.mask(s, e, kSecret)
		}
		prev = seg
		s = e + 1
	}
}

// Path segments after which the next one is a capability: whoever holds
// the link may open the share, take the invitation, join the meeting or
// reset the password (/s/<token>, /invite/<token>, /j/<token>).
var capabilityMarkers = []string{"s", "share", "shared", "sharing", "shares", "invite", "invites", "invitation", "join", "j",
	"magic", "reset", "verify", "confirm", "activate", "unlock"}

// capabilityToken reports whether seg is a token, not a route's word or a
// resource's number: five to 128 letters, digits, '-' and '_', holding a
// letter and a digit, or letters of both cases after its first that do
// not read as words run together (WordPress).
func capabilityToken(seg []byte) bool {
	if len(seg) < 5 || len(seg) > 128 {
		return false
	}
	var digit, lower, inner bool
	letter := false
	for k, c := range seg {
		switch {
		case isDigit(c):
			digit = true
		case c >= 'a' && c <= 'z':
			lower, letter = true, true
		case c >= 'A' && c <= 'Z':
			letter = true
			inner = inner || k > 0
		case c != '-' && c != '_':
			return false
		}
	}
	return letter && digit || lower && inner && !camelWords(seg)
}

// routeWords reports whether the path p after a webhook marker is words
// alone, the name of a route (/hooks/github, /webhooks/order-events): each
// segment letters of one case, or words of them joined by '-' or '_',
// shorter than 16. A token has a digit, both cases or a random run's length.
func routeWords(p []byte) bool {
	for s := 0; s <= len(p); {
		e := s + bytes.IndexByte(p[s:], '/')
		if e < s {
			e = len(p)
		}
		seg := p[s:e]
		if len(seg) == 0 || len(seg) >= maxWord || !isLowerName(seg) && !isUpperName(seg) {
			return false
		}
		for _, c := range seg {
			if !isAlpha(c) && c != '-' && c != '_' {
				return false
			}
		}
		s = e + 1
	}
	return true
}

// trimSlash returns pe, less a final '/'.
func trimSlash(src []byte, s, pe int) int {
	if pe > s && src[pe-1] == '/' {
		return pe - 1
	}
	return pe
}

func equalFold(b []byte, lit string) bool { return len(b) == len(lit) && hasPrefixFold(b, lit) }

func oneOfFold(b []byte, lits []string) bool {
	for _, l := range lits {
		if equalFold(b, l) {
			return true
		}
	}
	return false
}

// userinfoEnd returns the index of the '@' that ends the userinfo of an
// authority-and-rest span, or -1. Passwords in logs are often not
// percent-encoded, so the userinfo may hold '#', '@' or '?': the last '@'
// before the first '/' wins, or, when a '/' comes first, the last '@'
// whose userinfo holds a ':'.
func userinfoEnd(span []byte) int {
	slash := bytes.IndexByte(span, '/')
	if slash < 0 {
		slash = len(span)
	}
	if at := bytes.LastIndexByte(span[:slash], '@'); at > 0 {
		return at
	}
	at := bytes.LastIndexByte(span, '@')
	if at > 0 && bytes.IndexByte(span[:at], ':') > 0 && bytes.IndexByte(span[:at], ':') < slash {
		return at
	}
	return -1
}

// referencesOnly reports whether the userinfo src[as:at] is references to
// an account and a password (%(user)s:%(password)s, ${USER}:${PASS}).
func referencesOnly(src []byte, as, at int) bool {
	k := as
	for k < at {
		e := refEnd(src[:at], k)
		if e < 0 {
			return false
		}
		k = e
		if k < at && src[k] == ':' {
			k++
		}
	}
	return true
}
