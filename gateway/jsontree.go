package gateway

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// The configuration is parsed into a small tree that remembers where each
// value starts, so that every error can name its line and JSON pointer. The
// parser is strict: duplicate keys, invalid UTF-8, control characters in
// strings, lone surrogate escapes, nesting deeper than maxTreeDepth and
// trailing data are refused. It is one pass over at most MaxConfigBytes.

const maxTreeDepth = 32

type jkind byte

const (
	jObject jkind = 'o'
	jArray  jkind = 'a'
	jString jkind = 's'
	jNumber jkind = 'n'
	jBool   jkind = 'b'
	jNull   jkind = 'z'
)

// String names the kind as an error message does.
func (k jkind) String() string {
	switch k {
	case jObject:
		return "an object"
	case jArray:
		return "an array"
	case jString:
		return "a string"
	case jNumber:
		return "a number"
	case jBool:
		return "true or false"
	}
	return "null"
}

// jnode is one parsed value.
type jnode struct {
	kind  jkind
	off   int    // offset of the value's first byte
	raw   []byte // the value's bytes in the document
	str   string // decoded string, number literal, or "true"/"false"
	keys  []string
	vals  []*jnode // object members, in document order
	elems []*jnode
}

// member returns the value of key, or nil.
func (n *jnode) member(key string) *jnode {
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

// treeError is a syntax error at a byte offset.
type treeError struct {
	off    int
	reason string
}

// Error returns the reason.
func (e *treeError) Error() string { return e.reason }

type treeParser struct {
	data []byte
	i    int
}

func parseTree(data []byte) (*jnode, error) {
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, size := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			off += size
		}
		return nil, &treeError{off, "the file is not valid UTF-8"}
	}
	p := &treeParser{data: data}
	p.space()
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.data) {
		return nil, &treeError{p.i, "unexpected data after the end of the document"}
	}
	return n, nil
}

func (p *treeParser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

func (p *treeParser) fail(reason string) error { return &treeError{p.i, reason} }

func (p *treeParser) value(depth int) (*jnode, error) {
	if depth > maxTreeDepth {
		return nil, p.fail("nesting deeper than 32 levels")
	}
	if p.i >= len(p.data) {
		return nil, p.fail("unexpected end of the document")
	}
	start := p.i
	var n *jnode
	var err error
	switch c := p.data[p.i]; {
	case c == '{':
		n, err = p.object(depth)
	case c == '[':
		n, err = p.array(depth)
	case c == '"':
		var s string
		s, err = p.string()
		n = &jnode{kind: jString, str: s}
	case c == 't':
		n, err = p.literal("true", jBool)
	case c == 'f':
		n, err = p.literal("false", jBool)
	case c == 'n':
		n, err = p.literal("null", jNull)
	case c == '-' || c >= '0' && c <= '9':
		n, err = p.number()
	default:
		return nil, p.fail("unexpected character " + strconv.QuoteRune(rune(c)))
	}
	if err != nil {
		return nil, err
	}
	n.off = start
	n.raw = p.data[start:p.i]
	return n, nil
}

func (p *treeParser) literal(word string, k jkind) (*jnode, error) {
	if !bytes.HasPrefix(p.data[p.i:], []byte(word)) {
		return nil, p.fail("invalid literal")
	}
	p.i += len(word)
	return &jnode{kind: k, str: word}, nil
}

func (p *treeParser) number() (*jnode, error) {
	start := p.i
	end, err := strictjson.ScanNumber(p.data, p.i)
	if err != nil {
		return nil, &treeError{err.Offset, "invalid number"}
	}
	p.i = end
	return &jnode{kind: jNumber, str: string(p.data[start:end])}, nil
}

// string decodes the string at p.i with the project's strict lexer: escapes
// decoded, control characters, invalid escapes and lone surrogate escapes
// refused.
func (p *treeParser) string() (string, error) {
	out, end, escaped, err := strictjson.DecodeString(nil, p.data, p.i)
	if err != nil {
		return "", &treeError{err.Offset, err.Reason}
	}
	start := p.i
	p.i = end
	if !escaped {
		return string(p.data[start+1 : end-1]), nil
	}
	return string(out), nil
}

func (p *treeParser) object(depth int) (*jnode, error) {
	n := &jnode{kind: jObject}
	p.i++
	p.space()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return n, nil
	}
	for {
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			return nil, p.fail("expected a member name in double quotes")
		}
		keyOff := p.i
		k, err := p.string()
		if err != nil {
			return nil, err
		}
		if n.member(k) != nil {
			return nil, &treeError{keyOff, "member " + strconv.Quote(k) + " appears twice"}
		}
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return nil, p.fail("expected ':' after a member name")
		}
		p.i++
		p.space()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.keys = append(n.keys, k)
		n.vals = append(n.vals, v)
		p.space()
		if p.i < len(p.data) && p.data[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.data) && p.data[p.i] == '}' {
			p.i++
			return n, nil
		}
		return nil, p.fail("expected ',' or '}' after a member")
	}
}

func (p *treeParser) array(depth int) (*jnode, error) {
	n := &jnode{kind: jArray}
	p.i++
	p.space()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return n, nil
	}
	for {
		p.space()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.elems = append(n.elems, v)
		p.space()
		if p.i < len(p.data) && p.data[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.data) && p.data[p.i] == ']' {
			p.i++
			return n, nil
		}
		return nil, p.fail("expected ',' or ']' after an element")
	}
}

// position returns the 1-based line and column (in bytes) of off in data.
func position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	col = off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}
