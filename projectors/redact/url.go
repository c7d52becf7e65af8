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
				rw.replace(as, he, Container)
			}
			off = ae
			continue
		}
		at := userinfoEnd(src[as:ae])
		if at < 0 {
			off = ae
			continue
		}
		at += as
		rw.replace(as, at, Secret)
		// The host of a URL that carried credentials is an internal name.
		hs := at + 1
		he := hs
		for he < ae && (isAlnum(src[he]) || src[he] == '-' || src[he] == '_' || src[he] == '.') {
			he++
		}
		if he > hs && !isPlaceholder(src[hs:]) && !isDigit(src[hs]) && string(lowerASCII(src[hs:he])) != "localhost" {
			rw.replace(hs, he, Host)
		}
		off = ae
	}
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
