package projectors

import (
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/toolcanon/toolcanon/internal/strictjson"
	"github.com/toolcanon/toolcanon/projectors/internal/view"
)

// StringContents returns the undecoded contents of a JSON string value (the
// bytes between its quotes) and true, or false when r is not a string.
// With a Result parsed from a view of the raw buffer, the contents are a
// sub-slice of it: nothing is copied.
func StringContents(r gjson.Result) (string, bool) {
	if r.Type != gjson.String || len(r.Raw) < 2 || r.Raw[0] != '"' {
		return "", false
	}
	return r.Raw[1 : len(r.Raw)-1], true
}

// IsBlankRaw reports whether undecoded JSON string contents hold only white
// space.
func IsBlankRaw(raw string) bool {
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
			continue
		case '\\':
			if i+1 < len(raw) && (raw[i+1] == 'n' || raw[i+1] == 't' || raw[i+1] == 'r') {
				i++
				continue
			}
		}
		return false
	}
	return true
}

// AppendDecoded appends the decoded value of undecoded JSON string contents
// to dst. Contents without escapes are copied as they are.
func AppendDecoded(dst []byte, raw string) []byte {
	for i := 0; i < len(raw); i++ {
		if raw[i] == '\\' {
			return AppendUnescaped(dst, view.Bytes(raw))
		}
	}
	return append(dst, raw...)
}

// ValidText reports whether s is valid UTF-8 without control characters.
func ValidText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return false
		}
	}
	return true
}

// Locate returns the offset in doc of the value at path, or -1 when there is
// none. doc must be valid (see Valid). Paths are gjson paths; a path made of
// plain keys (letters, digits, '_' and '-', separated by dots, no segment all
// digits) is resolved by a walk that skips values without materialising
// them, others through gjson. Neither copies doc.
func Locate(doc []byte, path string) int {
	if !simplePath(path) {
		// gjson reports Index 0 for values it computed (modifiers,
		// multipaths), which are not sub-slices of doc.
		r := gjson.Get(view.String(doc), path)
		if !r.Exists() || r.Index <= 0 {
			return -1
		}
		return r.Index
	}
	i := skipWS(doc, 0)
	for len(path) > 0 {
		key := path
		if k := indexDot(path); k >= 0 {
			key, path = path[:k], path[k+1:]
		} else {
			path = ""
		}
		if i >= len(doc) || doc[i] != '{' {
			return -1
		}
		i = findKey(doc, i, key)
		if i < 0 {
			return -1
		}
	}
	return i
}

func indexDot(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return i
		}
	}
	return -1
}

func simplePath(p string) bool {
	if p == "" || p[0] == '.' || p[len(p)-1] == '.' {
		return false
	}
	digits := true
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '.':
			if digits {
				return false
			}
			digits = true
		case c >= '0' && c <= '9':
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '-':
			digits = false
		default:
			return false
		}
	}
	return !digits
}

// findKey returns the offset of the value of the last member named key of
// the object at i, or -1. The last one, because that is the member gjson and
// most decoders would report for a repeated key.
func findKey(doc []byte, i int, key string) int {
	found := -1
	i = skipWS(doc, i+1)
	for i < len(doc) && doc[i] == '"' {
		end := stringEnd(doc, i)
		k := doc[i+1 : end-1]
		i = skipWS(doc, end)
		i = skipWS(doc, i+1) // ':'
		match := string(k) == key
		if !match && hasBackslash(k) {
			var buf [64]byte
			match = len(k) <= len(buf) && string(AppendUnescaped(buf[:0], k)) == key
		}
		if match {
			found = i
		}
		i = skipWS(doc, skipValue(doc, i))
		if i < len(doc) && doc[i] == ',' {
			i = skipWS(doc, i+1)
		}
	}
	return found
}

func hasBackslash(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// skipValue returns the offset just after the valid value at i.
func skipValue(doc []byte, i int) int {
	if i >= len(doc) {
		return i
	}
	switch doc[i] {
	case '"':
		end := stringEnd(doc, i)
		return end
	case '{', '[':
		depth := 0
		for i < len(doc) {
			switch doc[i] {
			case '"':
				i = stringEnd(doc, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(doc) {
		switch doc[i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// EachElement calls fn with each element of the array at offset start of
// the valid document doc, as a sub-slice, until fn returns false. It reports
// false when there is no array at start.
func EachElement(doc []byte, start int, fn func(elem []byte) bool) bool {
	if start < 0 || start >= len(doc) || doc[start] != '[' {
		return false
	}
	i := skipWS(doc, start+1)
	for i < len(doc) && doc[i] != ']' {
		end := skipValue(doc, i)
		if !fn(doc[i:end]) {
			return true
		}
		i = skipWS(doc, end)
		if i < len(doc) && doc[i] == ',' {
			i = skipWS(doc, i+1)
		}
	}
	return true
}

// EachMember calls fn with the undecoded key (without quotes) and the value
// of each member of the valid object obj, until fn returns false. It
// reports false when obj is not an object.
func EachMember(obj []byte, fn func(key, value []byte) bool) bool {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = skipWS(obj, i+1)
	for i < len(obj) && obj[i] == '"' {
		end := stringEnd(obj, i)
		k := obj[i+1 : end-1]
		i = skipWS(obj, end)
		i = skipWS(obj, i+1) // ':'
		vend := skipValue(obj, i)
		if !fn(k, obj[i:vend]) {
			return true
		}
		i = skipWS(obj, vend)
		if i < len(obj) && obj[i] == ',' {
			i = skipWS(obj, i+1)
		}
	}
	return true
}

// KeyEquals reports whether the undecoded key k names key.
func KeyEquals(k []byte, key string) bool {
	if string(k) == key {
		return true
	}
	if !hasBackslash(k) || len(k) > 64 {
		return false
	}
	var buf [64]byte
	return string(AppendUnescaped(buf[:0], k)) == key
}

// SimplePath reports whether path is made of plain keys (letters, digits,
// '_' and '-', separated by dots, no segment all digits): the paths that
// Locate, LocateMany and WalkValid resolve with their own walk instead of
// gjson.
func SimplePath(path string) bool { return simplePath(path) }

// SimpleKey reports whether path is a single plain key that EachMember can
// match with KeyEquals.
func SimpleKey(path string) bool { return simplePath(path) && indexDot(path) < 0 }

// StringAt returns the undecoded contents of the string value at offset i of
// the valid document doc, and false when there is no string there.
func StringAt(doc []byte, i int) ([]byte, bool) {
	if i < 0 || i >= len(doc) || doc[i] != '"' {
		return nil, false
	}
	end := stringEnd(doc, i)
	return doc[i+1 : end-1], true
}

// LocateMany is Locate for several paths at once: plain-key paths are
// resolved in one walk over the top-level object, so that a large member
// (an entries array) is skipped once, not once per path. out[k] receives
// the offset for paths[k], or -1.
func LocateMany(doc []byte, paths []string, out []int) {
	pending := 0
	for k, p := range paths {
		out[k] = -1
		if p == "" {
			continue
		}
		if !simplePath(p) {
			out[k] = Locate(doc, p)
			continue
		}
		pending++
	}
	if pending == 0 {
		return
	}
	i := skipWS(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return
	}
	EachMember(doc[i:], func(k, v []byte) bool {
		off := cap(doc) - cap(v) // v is a sub-slice of doc
		for n, p := range paths {
			first, rest, ok := firstKey(p)
			if !ok || !KeyEquals(k, first) {
				continue
			}
			if rest == "" {
				out[n] = off // the last member of a repeated key wins, as in Locate
				continue
			}
			if sub := Locate(v, rest); sub >= 0 {
				out[n] = off + sub
			} else {
				out[n] = -1
			}
		}
		return true
	})
}

// EachObjectMember walks the array at offset start of the valid document
// doc in one pass: for each element, member is called with every member of
// the element when it is an object, then end with whether it was one; end
// returns false to stop. It reports false when there is no array at start.
// Reading an array of records this way scans each record once.
func EachObjectMember(doc []byte, start int, member func(key, value []byte), end func(isObject bool) bool) bool {
	if start < 0 || start >= len(doc) || doc[start] != '[' {
		return false
	}
	i := skipWS(doc, start+1)
	for i < len(doc) && doc[i] != ']' {
		isObj := doc[i] == '{'
		if isObj {
			i = skipWS(doc, i+1)
			for i < len(doc) && doc[i] == '"' {
				kend := stringEnd(doc, i)
				k := doc[i+1 : kend-1]
				i = skipWS(doc, kend)
				i = skipWS(doc, i+1) // ':'
				vend := skipValue(doc, i)
				member(k, doc[i:vend])
				i = skipWS(doc, vend)
				if i < len(doc) && doc[i] == ',' {
					i = skipWS(doc, i+1)
				}
			}
			i++ // '}'
		} else {
			i = skipValue(doc, i)
		}
		if !end(isObj) {
			return true
		}
		i = skipWS(doc, i)
		if i < len(doc) && doc[i] == ',' {
			i = skipWS(doc, i+1)
		}
	}
	return true
}

// WalkValid is Valid, LocateMany and EachObjectMember in one pass over doc:
// it checks doc strictly, finds the values of paths (out[k] receives the
// offset for paths[k], or -1) and, when doc's top-level member named by the
// plain key visit holds an array, calls member with every member of each
// object element and end after each element, until end returns false. It
// reports whether doc is valid; out and the calls mean something only when
// it is, and an invalid document may have been partly reported first.
func WalkValid(doc []byte, paths []string, out []int, visit string, member func(key, value []byte), end func(isObject bool) bool) bool {
	v := walkers.Get().(*walker)
	v.doc, v.paths = doc, append(v.paths[:0], paths...)
	v.out = slices.Grow(v.out[:0], len(paths))[:len(paths)]
	for k := range v.out {
		v.out[k] = -1
	}
	v.w.Array, v.w.Member, v.w.End = visit, member, end
	valid := strictjson.CheckWalk(doc, MaxDepth, &v.w) == nil
	copy(out, v.out)
	clear(v.paths)
	v.doc, v.w.Member, v.w.End = nil, nil, nil
	walkers.Put(v)
	if !valid {
		return false
	}
	for n, p := range paths {
		if p != "" && !simplePath(p) {
			out[n] = Locate(doc, p)
		}
	}
	return true
}

// walker is the state of one WalkValid, pooled with its Walk so that a
// call allocates nothing.
type walker struct {
	doc   []byte
	paths []string
	out   []int
	w     strictjson.Walk
}

var walkers = sync.Pool{New: func() any {
	v := &walker{}
	v.w.Top = v.top
	return v
}}

// top records the offsets of the paths that start with the top-level
// member name.
func (v *walker) top(name []byte, start, vend int) {
	for n, p := range v.paths {
		first, rest, ok := firstKey(p)
		if !ok || string(name) != first {
			continue
		}
		if rest == "" {
			v.out[n] = start
		} else if sub := Locate(v.doc[start:vend], rest); sub >= 0 {
			v.out[n] = start + sub
		}
	}
}

// firstKey splits a plain-key path into its first key and the rest, and
// reports false for an empty path or one that is not made of plain keys.
func firstKey(path string) (first, rest string, ok bool) {
	if path == "" || !simplePath(path) {
		return "", "", false
	}
	if d := indexDot(path); d >= 0 {
		return path[:d], path[d+1:], true
	}
	return path, "", true
}
