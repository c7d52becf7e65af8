package strictjson

// Walk is what CheckWalk reports while it checks a document whose value is
// an object: the object's members, and the members of the elements of one
// of its arrays. It lets a reader take what it needs from a document in
// the same pass that checks it.
type Walk struct {
	// Top, when set, is called with each member of the top-level object:
	// its name, decoded, and the offsets of the start and the end of its
	// value. name is valid only during the call.
	Top func(name []byte, start, end int)
	// Array names the member of the top-level object whose elements are
	// reported to Member and End, when its value is an array.
	Array string
	// Member is called with each member of each object element of that
	// array, in document order: the name undecoded (the bytes between its
	// quotes) and the value as a sub-slice of the document.
	Member func(name, value []byte)
	// End is called after each element, with whether it was an object.
	// When it returns false, Member and End are not called again, and the
	// check goes on to the end of the document.
	End func(isObject bool) bool
}

// CheckWalk is Check that reports to w, as it checks, the members of the
// top-level object and the elements of the array w.Array names. Nothing
// is reported when the value is not an object. Reports made before an
// error in the document are not taken back: a caller uses what it was
// told only when CheckWalk returns nil.
func CheckWalk(b []byte, maxDepth int, w *Walk) error {
	if i := SkipSpace(b, 0); i >= len(b) || b[i] != '{' {
		w = nil
	}
	return check(b, maxDepth, w)
}

// walkMember is called by object, when a walk is on, after each member's
// value: at depth 1 it reports the member to Top, at depth 3 (inside an
// element of the walked array) to Member.
func (c *checker) walkMember(depth int, raw []byte, start, end int) {
	w := c.walk
	switch {
	case depth == 1 && w.Top != nil:
		w.Top(c.bytesOf(&c.names[len(c.names)-1]), start, end)
	case depth == 3 && c.inArray && !c.walkDone && w.Member != nil:
		w.Member(raw, c.b[start:end])
	}
}

// walkValue checks the value of a member of the top-level object, marking
// the walked array as entered while its elements are checked.
func (c *checker) walkValue(i int) (int, *SyntaxError) {
	n := &c.names[len(c.names)-1]
	if c.walk.Array == "" || i >= len(c.b) || c.b[i] != '[' || string(c.bytesOf(n)) != c.walk.Array {
		return c.value(i, 1)
	}
	c.inArray = true
	end, err := c.array(i, 2)
	c.inArray = false
	return end, err
}

// walkElement reports the end of an element of the walked array.
func (c *checker) walkElement(elem byte) {
	if c.walkDone || c.walk.End == nil {
		return
	}
	if !c.walk.End(elem == '{') {
		c.walkDone = true
	}
}
