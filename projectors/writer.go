package projectors

import (
	"strconv"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/internal/strictjson"
	"github.com/toolcanon/toolcanon/projectors/internal/view"
)

// Writer appends JSON to a buffer and never lets the buffer grow past its
// limit. Open containers reserve their closing bytes, so a Writer whose
// containers are all closed holds valid JSON however early writes stopped.
//
// Methods that add a value return false, and write nothing, when the value
// does not fit; Text and RawText instead write the longest prefix that fits
// and mark the writer truncated. Sub-budgets (PushLimit) bound one region,
// such as one array or one array element.
//
// A Writer is not safe for concurrent use. The zero Writer has no room; use
// NewWriter or Reset.
type Writer struct {
	buf       []byte
	reserved  int     // bytes promised to closers and tails
	frames    []frame // open containers
	limits    []limit // budget regions, outermost first
	truncated bool
}

type frame struct {
	closer byte
	first  bool // no element written yet
	key    bool // a key was written; the value comes next
}

type limit struct {
	end      int // absolute buffer length this region may reach
	reserved int // w.reserved when the region began
}

// Mark is a position a Writer can roll back to.
type Mark struct {
	n, reserved, frames, limits int
	top                         frame
}

// NewWriter returns a Writer that appends to buf[:0] and keeps its output
// within max bytes.
func NewWriter(buf []byte, max int) *Writer {
	w := &Writer{}
	w.Reset(buf, max)
	return w
}

// Reset empties w and makes it append to buf[:0] within max bytes, reusing
// w's internal stacks.
func (w *Writer) Reset(buf []byte, max int) {
	if max < 0 {
		max = 0
	}
	w.buf = buf[:0]
	w.reserved = 0
	w.frames = w.frames[:0]
	w.limits = append(w.limits[:0], limit{end: max})
	w.truncated = false
}

// Bytes returns the output written so far. It is valid JSON once every
// container is closed.
func (w *Writer) Bytes() []byte { return w.buf }

// Len returns the number of bytes written.
func (w *Writer) Len() int { return len(w.buf) }

// Truncated reports whether any value was cut or dropped.
func (w *Writer) Truncated() bool { return w.truncated }

// SetTruncated records that the caller dropped data.
func (w *Writer) SetTruncated() { w.truncated = true }

// Room returns how many more bytes may be written in the innermost budget
// region after every reservation is honoured.
func (w *Writer) Room() int {
	room := int(^uint(0) >> 1)
	for _, l := range w.limits {
		r := l.end - len(w.buf) - (w.reserved - l.reserved)
		if r < room {
			room = r
		}
	}
	if room < 0 {
		return 0
	}
	return room
}

// Reserve sets n bytes aside for a tail the caller will write later (for
// example the fields after a collection). It fails when the room is short.
func (w *Writer) Reserve(n int) bool {
	if n < 0 || n > w.Room() {
		return false
	}
	w.reserved += n
	return true
}

// Release returns n reserved bytes, just before the caller writes its tail.
func (w *Writer) Release(n int) {
	w.reserved -= n
	if w.reserved < 0 {
		w.reserved = 0
	}
}

// PushLimit starts a region that may grow by at most n bytes from here. It
// nests inside every enclosing region.
func (w *Writer) PushLimit(n int) {
	if n < 0 {
		n = 0
	}
	w.limits = append(w.limits, limit{end: len(w.buf) + n, reserved: w.reserved})
}

// PopLimit ends the innermost region started by PushLimit.
func (w *Writer) PopLimit() {
	if len(w.limits) > 1 {
		w.limits = w.limits[:len(w.limits)-1]
	}
}

// Mark records the current position for Rollback.
func (w *Writer) Mark() Mark {
	m := Mark{n: len(w.buf), reserved: w.reserved, frames: len(w.frames), limits: len(w.limits)}
	if len(w.frames) > 0 {
		m.top = w.frames[len(w.frames)-1]
	}
	return m
}

// BeginItem starts one element of a collection: an object in a region of at
// most n bytes. Write its members, then call EndItem with whether every
// write succeeded, so that an element is written whole or not at all.
func (w *Writer) BeginItem(n int) (Mark, bool) {
	m := w.Mark()
	w.PushLimit(n)
	return m, w.BeginObject()
}

// EndItem closes an element begun by BeginItem when ok, and otherwise
// removes it whole. It returns ok.
func (w *Writer) EndItem(m Mark, ok bool) bool {
	if !ok {
		w.Rollback(m)
		return false
	}
	w.EndObject()
	w.PopLimit()
	return true
}

// Rollback discards everything written since m, including containers opened
// and regions pushed since then. It does not clear Truncated.
func (w *Writer) Rollback(m Mark) {
	w.buf = w.buf[:m.n]
	w.reserved = m.reserved
	w.frames = w.frames[:m.frames]
	if m.limits <= len(w.limits) {
		w.limits = w.limits[:m.limits]
	}
	if len(w.frames) > 0 {
		w.frames[len(w.frames)-1] = m.top
	}
}

// sep returns the separator a value written now needs: a comma between
// array elements, nothing after a key or at top level.
func (w *Writer) sep() int {
	if len(w.frames) == 0 {
		return 0
	}
	f := w.frames[len(w.frames)-1]
	if f.key || f.first {
		return 0
	}
	return 1
}

// begin writes the separator of a new value and updates the frame state.
func (w *Writer) begin() {
	if len(w.frames) == 0 {
		return
	}
	f := &w.frames[len(w.frames)-1]
	if !f.key && !f.first {
		w.buf = append(w.buf, ',')
	}
	f.first = false
	f.key = false
}

// BeginObject opens an object and reserves its closing brace.
func (w *Writer) BeginObject() bool { return w.open('{', '}') }

// BeginArray opens an array and reserves its closing bracket.
func (w *Writer) BeginArray() bool { return w.open('[', ']') }

func (w *Writer) open(opener, closer byte) bool {
	if w.sep()+2 > w.Room() {
		return false
	}
	w.begin()
	w.buf = append(w.buf, opener)
	w.reserved++
	w.frames = append(w.frames, frame{closer: closer, first: true})
	return true
}

// EndObject closes the innermost object; EndArray closes the innermost
// array. Both use the bytes reserved when the container was opened, so they
// cannot fail. A key left without a value gets null, to stay valid JSON.
func (w *Writer) EndObject() { w.close() }

// EndArray closes the innermost array. See EndObject.
func (w *Writer) EndArray() { w.close() }

func (w *Writer) close() {
	if len(w.frames) == 0 {
		return
	}
	f := w.frames[len(w.frames)-1]
	if f.key {
		// Only reachable through caller misuse; null keeps the output valid
		// at the cost of 4 unbudgeted bytes.
		w.buf = append(w.buf, "null"...)
	}
	w.frames = w.frames[:len(w.frames)-1]
	w.reserved--
	w.buf = append(w.buf, f.closer)
}

// Key writes an object key. k must be a plain ASCII name without characters
// that need escaping; keys are the projector's own constants.
func (w *Writer) Key(k string) bool {
	if len(w.frames) == 0 || w.frames[len(w.frames)-1].closer != '}' || w.frames[len(w.frames)-1].key {
		return false
	}
	f := &w.frames[len(w.frames)-1]
	n := len(k) + 3
	if !f.first {
		n++
	}
	if n > w.Room() {
		return false
	}
	if !f.first {
		w.buf = append(w.buf, ',')
	}
	w.buf = append(w.buf, '"')
	w.buf = append(w.buf, k...)
	w.buf = append(w.buf, '"', ':')
	f.first = false
	f.key = true
	return true
}

// KeyText writes an object key taken from data, escaped as JSON needs,
// whole or not at all.
func (w *Writer) KeyText(k []byte) bool {
	if len(w.frames) == 0 || w.frames[len(w.frames)-1].closer != '}' || w.frames[len(w.frames)-1].key {
		return false
	}
	f := &w.frames[len(w.frames)-1]
	s := view.String(k)
	n := EscapedLen(s) + 3
	if !f.first {
		n++
	}
	if n > w.Room() {
		return false
	}
	if !f.first {
		w.buf = append(w.buf, ',')
	}
	w.buf = append(w.buf, '"')
	w.buf = strictjson.AppendEscaped(w.buf, s)
	w.buf = append(w.buf, '"', ':')
	f.first = false
	f.key = true
	return true
}

// Int writes an integer.
func (w *Writer) Int(v int64) bool {
	var tmp [24]byte
	s := strconv.AppendInt(tmp[:0], v, 10)
	if w.sep()+len(s) > w.Room() {
		return false
	}
	w.begin()
	w.buf = append(w.buf, s...)
	return true
}

// Number writes raw, a JSON number as found in valid JSON input, whole or
// not at all. Anything but number characters is refused.
func (w *Writer) Number(raw []byte) bool {
	if len(raw) == 0 || w.sep()+len(raw) > w.Room() {
		return false
	}
	for _, c := range raw {
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return false
		}
	}
	w.begin()
	w.buf = append(w.buf, raw...)
	return true
}

// Bool writes true or false.
func (w *Writer) Bool(v bool) bool {
	s := "false"
	if v {
		s = "true"
	}
	if w.sep()+len(s) > w.Room() {
		return false
	}
	w.begin()
	w.buf = append(w.buf, s...)
	return true
}

// Null writes null.
func (w *Writer) Null() bool {
	if w.sep()+4 > w.Room() {
		return false
	}
	w.begin()
	w.buf = append(w.buf, "null"...)
	return true
}

// String writes s whole, or nothing: identifiers must not be cut.
func (w *Writer) String(s string) bool {
	if w.sep()+2+EscapedLen(s) > w.Room() {
		return false
	}
	w.begin()
	w.buf = append(w.buf, '"')
	w.buf = strictjson.AppendEscaped(w.buf, s)
	w.buf = append(w.buf, '"')
	return true
}

// StringBytes writes b whole, or nothing. See String.
func (w *Writer) StringBytes(b []byte) bool {
	return w.String(view.String(b))
}

// Text writes the longest prefix of s that has at most max UTF-8 bytes and
// fits the room, cut at a rune boundary and never inside an escape. It
// reports whether the whole of s was written; a cut marks the writer
// truncated. It returns false without writing when not even "" fits.
func (w *Writer) Text(s []byte, max int) (whole, ok bool) {
	room := w.Room() - w.sep() - 2
	if room < 0 {
		return false, false
	}
	w.begin()
	w.buf = append(w.buf, '"')
	var consumed int
	w.buf, consumed = appendBounded(w.buf, view.String(s), max, room)
	w.buf = append(w.buf, '"')
	if consumed < len(s) {
		w.truncated = true
		return false, true
	}
	return true, true
}

// RawText is Text for the contents of a JSON string literal as found in raw
// input (without the quotes, escapes undecoded). It decodes as it copies, so
// the budget counts decoded bytes, and it never copies the source first.
func (w *Writer) RawText(raw []byte, max int) (whole, ok bool) {
	room := w.Room() - w.sep() - 2
	if room < 0 {
		return false, false
	}
	w.begin()
	w.buf = append(w.buf, '"')
	var done bool
	w.buf, done = appendRawBounded(w.buf, raw, max, room)
	w.buf = append(w.buf, '"')
	if !done {
		w.truncated = true
		return false, true
	}
	return true, true
}

// EscapedLen returns the number of bytes s takes inside a JSON string as
// the Writer encodes it (the canonical form of package strictjson).
func EscapedLen(s string) int { return strictjson.EscapedLen(s) }

// appendBounded appends the escaped form of the longest prefix of s with at
// most max source bytes and at most room encoded bytes, and returns how many
// source bytes it consumed.
func appendBounded(dst []byte, s string, max, room int) ([]byte, int) {
	used := 0
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			// Copy a run of plain ASCII at once.
			j := i + 1
			for j < len(s) && s[j] >= 0x20 && s[j] < utf8.RuneSelf && s[j] != '"' && s[j] != '\\' {
				j++
			}
			n := j - i
			if lim := min(max-i, room-used); n > lim {
				n = lim
			}
			if n <= 0 {
				return dst, i
			}
			dst = append(dst, s[i:i+n]...)
			used += n
			i += n
			if i < j {
				return dst, i
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		enc := strictjson.RuneLen(r)
		if i+size > max || used+enc > room {
			return dst, i
		}
		dst = strictjson.AppendRune(dst, r)
		used += enc
		i += size
	}
	return dst, i
}

// appendRawBounded is appendBounded for undecoded JSON string contents. It
// reports whether all of raw was written. Malformed escapes, lone surrogates
// and invalid UTF-8 are written as U+FFFD so the output stays valid JSON.
func appendRawBounded(dst []byte, raw []byte, max, room int) ([]byte, bool) {
	used, decoded := 0, 0
	for i := 0; i < len(raw); {
		c := raw[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			j := i + 1
			for j < len(raw) && raw[j] >= 0x20 && raw[j] < utf8.RuneSelf && raw[j] != '"' && raw[j] != '\\' {
				j++
			}
			n := j - i
			if lim := min(max-decoded, room-used); n > lim {
				n = lim
			}
			if n <= 0 {
				return dst, false
			}
			dst = append(dst, raw[i:i+n]...)
			used += n
			decoded += n
			i += n
			if i < j {
				return dst, false
			}
			continue
		}
		var r rune
		size := 1
		if c == '\\' {
			r, size = strictjson.DecodeEscape(raw[i:])
		} else {
			r, size = utf8.DecodeRune(raw[i:])
		}
		n := utf8.RuneLen(r)
		if n < 0 {
			n = 3 // written as U+FFFD
		}
		enc := strictjson.RuneLen(r)
		if decoded+n > max || used+enc > room {
			return dst, false
		}
		dst = strictjson.AppendRune(dst, r)
		used += enc
		decoded += n
		i += size
	}
	return dst, true
}

// AppendUnescaped appends the decoded contents of a raw JSON string literal
// (without its quotes) to dst. Malformed escapes and lone surrogates become
// U+FFFD; invalid UTF-8 is copied as is.
func AppendUnescaped(dst, raw []byte) []byte { return strictjson.AppendUnescaped(dst, raw) }
