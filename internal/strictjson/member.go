package strictjson

// Member returns the value of the member name of the object b, a document
// Check accepted, as the bytes of b that hold it, and whether the object has
// one. Only the object's own members are looked at, not those of nested
// values; a name with escapes is compared as written.
func Member(b []byte, name string) ([]byte, bool) {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = SkipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		end := SkipString(b, i)
		key := b[i+1 : max(i+1, end-1)]
		i = SkipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		start := SkipSpace(b, i+1)
		stop := SkipValue(b, start)
		if string(key) == name {
			return b[start:stop], true
		}
		i = SkipSpace(b, stop)
		if i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
		}
	}
	return nil, false
}

// SkipValue returns the index just after the value that starts at b[i], in a
// document Check accepted.
func SkipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			i = SkipString(b, i)
		case '{', '[':
			depth++
			i++
		case '}', ']':
			depth--
			i++
		default:
			for i < len(b) && !endsScalar(b[i]) {
				i++
			}
		}
		if depth == 0 {
			return i
		}
		for i < len(b) && (b[i] == ',' || b[i] == ':' || b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
	}
	return i
}

func endsScalar(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r', ':':
		return true
	}
	return false
}
