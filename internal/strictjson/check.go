package strictjson

import (
	"bytes"
	"hash/maphash"
	"math"
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
// and otherwise a *SyntaxError at the first problem. Duplicate member names
// are found in expected constant time per member, with a hash seeded per
// process, so that no document can make the check quadratic.
func Check(b []byte, maxDepth int) error {
	if len(b) > math.MaxInt32 {
		return errAt(0, "document larger than 2 GiB")
	}
	c := checkers.Get().(*checker)
	c.b, c.max = b, maxDepth
	if c.serial > math.MaxUint32-uint32(len(b)) {
		// Serials would wrap within this document: start afresh.
		c.serial, c.index.slots = 0, nil
	}
	c.first = c.serial + 1
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

// smallObject is the member count up to which names are compared by a scan
// of the object's earlier names; larger objects are indexed.
const smallObject = 16

// checker holds the scratch of one Check: the names of the members of the
// open objects (innermost last), decoded names that held escapes, and the
// index of the names of large objects.
type checker struct {
	b     []byte
	max   int
	names []name
	arena []byte
	index index
	open  []uint32 // serials of the open objects, outermost first
	// serial numbers objects across documents, so that index slots of an
	// earlier document (serial below first) read as empty.
	serial, first uint32
}

// name is one member name: a span of the document, or of the arena when it
// held escapes.
type name struct {
	hash    uint64
	off, n  int32
	prev    int32 // in a large object: 1 + the position of the previous name with the same hash, or 0
	inArena bool
}

func (c *checker) reset() {
	c.b = nil
	if cap(c.names) > maxKeptSlots/2 {
		c.names = nil
	}
	if cap(c.arena) > 1<<20 {
		c.arena = nil
	}
	c.names, c.arena = c.names[:0], c.arena[:0]
	c.index.live = 0
	if len(c.index.slots) > maxKeptSlots {
		c.index.slots = nil
	}
	c.open = c.open[:0]
}

// index finds the names of large objects by (object, hash), with open
// addressing. Slots of closed objects stay until the index grows; their
// serial never matches again.
type index struct {
	slots []slot
	live  int
}

type slot struct {
	hash   uint64
	object uint32 // serial of the object; below checker.first: empty
	head   int32  // 1 + position in names of the object's last name with this hash
}

// maxKeptSlots bounds the index a pooled checker keeps between documents.
const maxKeptSlots = 1 << 18

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
	return errAt(i, "nesting deeper than "+strconv.Itoa(c.max))
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
		if i, err = c.value(i, depth); err != nil {
			return i, err
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
	c.serial++
	c.open = append(c.open, c.serial)
	defer func() {
		c.names, c.arena, c.open = c.names[:base], c.arena[:arenaBase], c.open[:len(c.open)-1]
	}()
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, errAt(i, "expected a string key")
		}
		end, escaped, err := ScanString(b, i)
		if err != nil {
			return end, err
		}
		if !c.addName(i+1, end-1, escaped, base) {
			return i, errAt(i, "duplicate object key")
		}
		i = SkipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return i, errAt(i, "expected ':' after an object key")
		}
		if i, err = c.value(SkipSpace(b, i+1), depth); err != nil {
			return i, err
		}
		i = SkipSpace(b, i)
		if i >= len(b) {
			return i, errAt(i, "unexpected end of input in an object")
		}
		switch b[i] {
		case '}':
			return i + 1, nil
		case ',':
			i = SkipSpace(b, i+1)
		default:
			return i, errAt(i, "expected ',' or '}' in an object")
		}
	}
}

// addName records the member name held in b[start:end] of the object whose
// names begin at names[base], and reports false when the object already
// has a member of that name.
func (c *checker) addName(start, end int, escaped bool, base int) bool {
	n := name{off: int32(start), n: int32(end - start)}
	if escaped {
		off := len(c.arena)
		c.arena = AppendUnescaped(c.arena, c.b[start:end])
		n = name{off: int32(off), n: int32(len(c.arena) - off), inArena: true}
	}
	key := c.bytesOf(&n)
	n.hash = maphash.Bytes(seed, key)
	members := c.names[base:]
	if len(members) < smallObject {
		for k := range members {
			if members[k].hash == n.hash && bytes.Equal(c.bytesOf(&members[k]), key) {
				return false
			}
		}
	} else {
		obj := c.open[len(c.open)-1]
		if len(members) == smallObject {
			for k := range members {
				c.indexName(obj, int32(base+k))
			}
		}
		if s := c.find(obj, n.hash); s.object >= c.first {
			for k := s.head; k > 0; k = c.names[k-1].prev {
				if bytes.Equal(c.bytesOf(&c.names[k-1]), key) {
					return false
				}
			}
		}
	}
	c.names = append(c.names, n)
	if len(members)+1 > smallObject {
		c.indexName(c.open[len(c.open)-1], int32(len(c.names)-1))
	}
	return true
}

// find returns the index slot of the names of object obj with hash, or the
// empty slot where they belong.
func (c *checker) find(obj uint32, hash uint64) *slot {
	x := &c.index
	if len(x.slots) == 0 {
		x.slots = make([]slot, 64)
	}
	mask := uint64(len(x.slots) - 1)
	for i := hash & mask; ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.object < c.first || (s.object == obj && s.hash == hash) {
			return s
		}
	}
}

// indexName makes names[k], a name of the open object obj, the head of its
// hash's chain.
func (c *checker) indexName(obj uint32, k int32) {
	x := &c.index
	if 2*(x.live+1) > len(x.slots) {
		c.grow()
	}
	h := c.names[k].hash
	s := c.find(obj, h)
	if s.object >= c.first {
		c.names[k].prev = s.head
	} else {
		c.names[k].prev = 0
		*s = slot{hash: h, object: obj}
		x.live++
	}
	s.head = k + 1
}

// grow doubles the index, keeping the slots of the open objects and
// dropping those of closed ones.
func (c *checker) grow() {
	x := &c.index
	old := x.slots
	x.slots = make([]slot, max(64, 2*len(old)))
	x.live = 0
	for _, s := range old {
		if s.object < c.first || !c.isOpen(s.object) {
			continue
		}
		*c.find(s.object, s.hash) = s
		x.live++
	}
}

// isOpen reports whether object obj is still open; serials increase along
// the stack of open objects.
func (c *checker) isOpen(obj uint32) bool {
	_, ok := slices.BinarySearch(c.open, obj)
	return ok
}
