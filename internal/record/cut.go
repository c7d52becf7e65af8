package record

// Cut returns the parts a payload is stored in: at most MaxParts, each but
// the last filling its allocation's size class exactly, the last taking
// the rest. A payload whose one allocation wastes at most 48 bytes is one
// part; an empty payload has none (every part is then nil).
func Cut(p []byte) [MaxParts][]byte {
	var out [MaxParts][]byte
	for i := range out {
		if len(p) == 0 {
			break
		}
		n := len(p)
		if a := sds(n); class(a)-a > 48 && i < MaxParts-1 {
			if f := fill(below(class(a))); f > 0 && f < n {
				n = f
			}
		}
		out[i], p = p[:n:n], p[n:]
	}
	return out
}

// sds is the bytes Redis allocates for a string of n bytes, before
// rounding: the header of the smallest sds type that holds n, and a NUL.
func sds(n int) int {
	switch {
	case n < 32:
		return n + 2
	case n < 256:
		return n + 4
	case n < 65536:
		return n + 6
	case n < 1<<32:
		return n + 10
	}
	return n + 18
}

// group is the power of two whose four size classes hold n (n > 64).
func group(n int) int {
	g := 64
	for g*2 < n {
		g *= 2
	}
	return g
}

// class is the jemalloc size class of an n-byte allocation: 8-byte steps
// to 64, then four classes per doubling.
func class(n int) int {
	if n <= 64 {
		return (n + 7) / 8 * 8
	}
	step := group(n) / 4
	return (n + step - 1) / step * step
}

// below is the size class just under class c.
func below(c int) int {
	if c <= 64 {
		return c - 8
	}
	return c - group(c)/4
}

// fill is the string length whose allocation is exactly c bytes, or 0.
func fill(c int) int {
	for _, h := range []int{2, 4, 6, 10, 18} {
		if c-h > 0 && sds(c-h) == c {
			return c - h
		}
	}
	return 0
}
