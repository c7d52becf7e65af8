package redact

// FieldPlaceholder returns the placeholder that replaces the whole value of
// a structured field (a JSON member, a header) named key, by the same key
// rules as the key=value pass: Secret for passwords, tokens, keys, cookies
// and authorization; User, PID, Host, Pod, Container or Account for those
// identifiers; "" when the name says nothing about its value.
func FieldPlaceholder(key []byte) string {
	switch classifyKey(key) {
	case kvSecret, kvAuth, kvCookie:
		return Secret
	case kvUser:
		return User
	case kvPID:
		return PID
	case kvHost:
		return Host
	case kvPod:
		return Pod
	case kvContainer:
		return Container
	case kvAccount:
		return Account
	}
	return ""
}
