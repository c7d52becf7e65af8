package redact

import "github.com/toolcanon/toolcanon/canonical"

// FieldKind returns the kind of the whole value of a structured field (a
// JSON member, a header) named key, by the key rules of the key=value
// pass: a secret for passwords, tokens, keys, cookies and authorization; a
// user, process id, host, pod, container or account for those
// identifiers; "" when the name says nothing about its value.
func FieldKind(key []byte) canonical.Kind {
	switch classifyKey(key) {
	case kvSecret, kvAuth, kvCookie:
		return kSecret
	case kvUser:
		if actorKey(key) {
			return "" // pilot: a person's account only when shaped as one, which the text pass reads
		}
		return kUser
	case kvPID:
		return kPID
	case kvHost:
		return kHost
	case kvPod:
		return kPod
	case kvContainer:
		return kContainer
	case kvAccount:
		return kAccount
	}
	return ""
}
