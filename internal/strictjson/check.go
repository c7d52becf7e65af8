package strictjson

import (
	"bytes"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"sync"
)

// MaxDepth is the nesting bound of Valid: deep enough for any document a
// tool or an agent sends, shallow enough that a hostile one cannot exhaust
// the stack.
const MaxDepth = 512

// Valid reports whether b is one strict JSON value nested at most MaxDepth
// levels deep.
func Valid(b []byte) bool { return Check(b, MaxDepth) == nil }

// ValidObject reports whether b is one strict JSON object nested at most
// MaxDepth levels deep.
func ValidObject(b []byte) bool {
	i := SkipSpace(b, 0)
	return i < len(b) && b[i] == '{' && Valid(b)
}

// Check returns nil when b is exactly one strict JSON value (white space
// around it allowed) with containers nested at most maxDepth levels deep,
// and otherwise a *SyntaxError. The error is the first problem in the
// document, except that a repeated name in an object of more than 16
// members is found when the object closes. Repeated names are found in
// time linear in the object, with a hash seeded per process, so that no
// document can make the check quadratic.
func Check(b []byte, maxDepth int) error { return check(b, maxDepth, nil) }

// check is Check reporting to w (see CheckWalk) when w is not nil.
func check(b []byte, maxDepth int, w *Walk) error {
	if len(b) > math.MaxInt32 {
		return errAt(0, "document larger than 2 GiB")
	}
	c := checkers.Get().(*checker)
	c.b, c.max, c.walk = b, maxDepth, w
	i, err := c.value(SkipSpace(b, 0), 0)
	if err == nil {
		if i = SkipSpace(b, i); i != len(b) {
			err = errAt(i, "trailing data after the JSON value")
		}
	}
	c.reset()
	checkers.Put(c)
	if err != nil {
		return err
	}
	return nil
}

var checkers = sync.Pool{New: func() any { return &checker{} }}

var seed = maphash.MakeSeed()

// smallObject is the member count up to which a name is compared with the
// object's earlier names as it is read; larger objects are checked when
// they close, by a bucket sort on the names' hashes.
const smallObject = 16

// checker holds the scratch of one Check: the names of the members of the
// open objects (innermost last), decoded names that held escapes, and the
// buckets of the sort.
type checker struct {
	b     []byte
	max   int
	names []name
	arena []byte
	count []int32
	order []int32
	// The walk of CheckWalk, nil in Check: inArray is set while the
	// elements of the walked array are checked, walkDone once End
	// returned false.
	walk              *Walk
	inArray, walkDone bool
}

// name is one member name: a span of the document, or of the arena when it
// held escapes.
type name struct {
	hash    uint64 // set when a large object closes
	at      int32  // offset of the name's opening quote in the document
	off, n  int32
	inArena bool
	first   byte // the name's first byte, in a small object
}

// maxKept bounds the scratch a pooled checker keeps between documents.
const maxKept = 1 << 17

func (c *checker) reset() {
	c.b, c.walk, c.inArray, c.walkDone = nil, nil, false, false
	if cap(c.names) > maxKept || cap(c.count) > 2*maxKept || cap(c.order) > maxKept {
		c.names, c.count, c.order = nil, nil, nil
	}
	if cap(c.arena) > 1<<20 {
		c.arena = nil
	}
	c.names, c.arena = c.names[:0], c.arena[:0]
}

func (c *checker) bytesOf(n *name) []byte {
	if n.inArena {
		return c.arena[n.off : n.off+n.n]
	}
	return c.b[n.off : n.off+n.n : n.off+n.n]
}

func (c *checker) value(i, depth int) (int, *SyntaxError) {
	b := c.b
	if i >= len(b) {
		return i, errAt(i, "unexpected end of input")
	}
	switch ch := b[i]; {
	case ch == '"':
		end, _, err := ScanString(b, i)
		return end, err
	case ch == '{':
		return c.object(i, depth+1)
	case ch == '[':
		return c.array(i, depth+1)
	case ch == 't' || ch == 'f' || ch == 'n':
		return ScanLiteral(b, i)
	case ch == '-' || (ch >= '0' && ch <= '9'):
		return ScanNumber(b, i)
	}
	return i, errAt(i, "unexpected character "+strconv.QuoteRune(rune(b[i])))
}

func (c *checker) deep(i int) *SyntaxError {
	return errStrict(i, "nesting deeper than "+strconv.Itoa(c.max))
}

func (c *checker) array(i, depth int) (int, *SyntaxError) {
	if depth > c.max {
		return i, c.deep(i)
	}
	b := c.b
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err *SyntaxError
		at := i
		if i, err = c.value(i, depth); err != nil {
			return i, err
		}
		if c.inArray && depth == 2 {
			c.walkElement(b[at])
		}
		i = SkipSpace(b, i)
		if i >= len(b) {
			return i, errAt(i, "unexpected end of input in an array")
		}
		switch b[i] {
		case ']':
			return i + 1, nil
		case ',':
			i = SkipSpace(b, i+1)
		default:
			return i, errAt(i, "expected ',' or ']' in an array")
		}
	}
}

func (c *checker) object(i, depth int) (int, *SyntaxError) {
	if depth > c.max {
		return i, c.deep(i)
	}
	b := c.b
	base, arenaBase := len(c.names), len(c.arena)
	// The object's names are dropped when it closes; after an error the
	// whole check ends, so only the closing path drops them.
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, errAt(i, "expected a string key")
		}
		keyAt := i
		end, escaped, err := ScanString(b, i)
		if err != nil {
			return end, err
		}
		if !c.addName(i+1, end-1, escaped, base) {
			return i, errStrict(i, "duplicate object key")
		}
		i = SkipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return i, errAt(i, "expected ':' after an object key")
		}
		start := SkipSpace(b, i+1)
		if c.walk != nil && depth == 1 {
			i, err = c.walkValue(start)
		} else {
			i, err = c.value(start, depth)
		}
		if err != nil {
			return i, err
		}
		if c.walk != nil {
			c.walkMember(depth, b[keyAt+1:end-1], start, i)
		}
		i = SkipSpace(b, i)
		if i >= len(b) {
			return i, errAt(i, "unexpected end of input in an object")
		}
		switch b[i] {
		case '}':
			if len(c.names)-base > smallObject {
				if at := c.repeated(base); at >= 0 {
					return at, errStrict(at, "duplicate object key")
				}
			}
			c.names, c.arena = c.names[:base], c.arena[:arenaBase]
			return i + 1, nil
		case ',':
			i = SkipSpace(b, i+1)
		default:
			return i, errAt(i, "expected ',' or '}' in an object")
		}
	}
}

// addName records the member name held in b[start:end] of the object whose
// names begin at names[base], and reports false when the object is small
// and already has a member of that name.
func (c *checker) addName(start, end int, escaped bool, base int) bool {
	n := name{at: int32(start - 1), off: int32(start), n: int32(end - start)}
	if escaped {
		off := len(c.arena)
		c.arena = AppendUnescaped(c.arena, c.b[start:end])
		n.off, n.n, n.inArena = int32(off), int32(len(c.arena)-off), true
	}
	if members := c.names[base:]; len(members) < smallObject {
		key := c.bytesOf(&n)
		for k := range members {
			// Length and first byte first: most names differ there.
			if m := &members[k]; m.n == n.n && (n.n == 0 || m.first == key[0]) && bytes.Equal(c.bytesOf(m), key) {
				return false
			}
		}
		if n.n > 0 {
			n.first = key[0]
		}
	}
	c.names = append(c.names, n)
	return true
}

// repeated returns the offset of the first name of the object whose names
// begin at names[base] that repeats an earlier one, or -1. The names are
// spread over about as many buckets as there are names by the top bits of
// their hash (a counting sort: two passes, sequential), so that a bucket
// holds a few names and only names in one bucket are compared.
func (c *checker) repeated(base int) int {
	members := c.names[base:]
	for k := range members {
		members[k].hash = maphash.Bytes(seed, c.bytesOf(&members[k]))
	}
	shift := 64 - bits.Len(uint(len(members)))
	nb := 1<<(64-shift) + 1
	c.count = slices.Grow(c.count[:0], nb)[:nb]
	clear(c.count)
	for k := range members {
		c.count[members[k].hash>>shift+1]++
	}
	for k := 1; k < nb; k++ {
		c.count[k] += c.count[k-1]
	}
	c.order = slices.Grow(c.order[:0], len(members))[:len(members)]
	for k := range members {
		slot := &c.count[members[k].hash>>shift]
		c.order[*slot] = int32(k)
		*slot++
	}
	// count[k] is now the end of bucket k, the start of bucket k+1.
	first := -1
	for start := 0; start < len(members); {
		end := int(c.count[members[c.order[start]].hash>>shift])
		bucket := c.order[start:end]
		for x := 1; x < len(bucket); x++ {
			a := &members[bucket[x]]
			for y := range x {
				b := &members[bucket[y]]
				if a.hash == b.hash && bytes.Equal(c.bytesOf(a), c.bytesOf(b)) {
					later := int(max(a.at, b.at))
					if first < 0 || later < first {
						first = later
					}
				}
			}
		}
		start = end
	}
	return first
}
