package registry

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// MaxSafeInteger is 2^53−1, the largest integer every JSON consumer (and
// IEEE-754 binary64) represents exactly. Numbers beyond it are refused, never
// rounded: two parties would otherwise disagree about the value they signed.
const MaxSafeInteger = 1<<53 - 1

// MaxJSONDepth bounds the nesting of a document given to Canonicalize.
const MaxJSONDepth = 64

// kind is the JSON type of a parsed value.
type kind uint8

const (
	kindNull kind = iota
	kindFalse
	kindTrue
	kindNumber
	kindString
	kindArray
	kindObject
)

// value is a parsed JSON value. Object members are kept sorted in RFC 8785
// order (UTF-16 code units), which makes serialization, duplicate detection,
// equality and schema matching single linear passes.
type value struct {
	kind kind
	num  float64
	str  string
	arr  []value
	obj  []member
}

type member struct {
	key string
	val value
}

// parseOptions are the bounds a parse runs under.
type parseOptions struct {
	maxDepth    int  // container nesting, the outermost container is depth 1
	maxItems    int  // elements per array; 0 means unbounded
	safeNumbers bool // refuse numbers whose magnitude exceeds MaxSafeInteger
	code        canonical.Code
}

// strictOptions is the profile of Canonicalize: any top-level value, safe numbers.
var strictOptions = parseOptions{maxDepth: MaxJSONDepth, safeNumbers: true, code: canonical.CodeInvalidArgument}

// parse parses exactly one JSON value from data, refusing anything RFC 8259
// does not allow and everything the profile bounds.
func parse(data []byte, opt parseOptions) (value, error) {
	p := parser{data: data, opt: opt}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return value{}, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return value{}, p.fail("trailing data after the JSON value")
	}
	return v, nil
}

type parser struct {
	data []byte
	pos  int
	opt  parseOptions
	buf  []byte // scratch for strings with escapes
}

func (p *parser) fail(reason string) error {
	return &SyntaxError{Offset: int64(p.pos), Reason: reason, code: p.opt.code}
}

func (p *parser) failAt(off int, reason string) error {
	return &SyntaxError{Offset: int64(off), Reason: reason, code: p.opt.code}
}

func (p *parser) skipSpace() { p.pos = strictjson.SkipSpace(p.data, p.pos) }

func (p *parser) literal(v value) (value, error) {
	end, serr := strictjson.ScanLiteral(p.data, p.pos)
	if serr != nil {
		return value{}, p.failAt(serr.Offset, serr.Reason)
	}
	p.pos = end
	return v, nil
}

func (p *parser) value(depth int) (value, error) {
	if p.pos >= len(p.data) {
		return value{}, p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.string()
		return value{kind: kindString, str: s}, err
	case c == 't':
		return p.literal(value{kind: kindTrue})
	case c == 'f':
		return p.literal(value{kind: kindFalse})
	case c == 'n':
		return p.literal(value{kind: kindNull})
	case c == '-' || (c >= '0' && c <= '9'):
		f, err := p.number()
		return value{kind: kindNumber, num: f}, err
	default:
		return value{}, p.fail("unexpected character " + strconv.QuoteRune(rune(c)))
	}
}

func (p *parser) object(depth int) (value, error) {
	start := p.pos
	if depth > p.opt.maxDepth {
		return value{}, p.fail("nesting deeper than " + strconv.Itoa(p.opt.maxDepth))
	}
	p.pos++ // '{'
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return value{kind: kindObject, obj: []member{}}, nil
	}
	var members []member
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return value{}, p.fail("expected a string key")
		}
		key, err := p.string()
		if err != nil {
			return value{}, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return value{}, p.fail("expected ':' after an object key")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(depth)
		if err != nil {
			return value{}, err
		}
		members = append(members, member{key: key, val: v})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return value{}, p.fail("unexpected end of input in an object")
		}
		if p.data[p.pos] == '}' {
			p.pos++
			break
		}
		if p.data[p.pos] != ',' {
			return value{}, p.fail("expected ',' or '}' in an object")
		}
		p.pos++
		p.skipSpace()
	}
	if len(members) > 1 {
		slices.SortFunc(members, func(a, b member) int { return compareUTF16(a.key, b.key) })
		for i := 1; i < len(members); i++ {
			if members[i].key == members[i-1].key {
				return value{}, p.failAt(start, "duplicate object key "+strconv.Quote(members[i].key))
			}
		}
	}
	return value{kind: kindObject, obj: members}, nil
}

func (p *parser) array(depth int) (value, error) {
	if depth > p.opt.maxDepth {
		return value{}, p.fail("nesting deeper than " + strconv.Itoa(p.opt.maxDepth))
	}
	p.pos++ // '['
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return value{kind: kindArray, arr: []value{}}, nil
	}
	var items []value
	for {
		if p.opt.maxItems > 0 && len(items) == p.opt.maxItems {
			return value{}, p.fail("array longer than " + strconv.Itoa(p.opt.maxItems) + " items")
		}
		v, err := p.value(depth)
		if err != nil {
			return value{}, err
		}
		items = append(items, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return value{}, p.fail("unexpected end of input in an array")
		}
		if p.data[p.pos] == ']' {
			p.pos++
			break
		}
		if p.data[p.pos] != ',' {
			return value{}, p.fail("expected ',' or ']' in an array")
		}
		p.pos++
		p.skipSpace()
	}
	return value{kind: kindArray, arr: items}, nil
}

// string parses a JSON string at p.pos (the opening quote) and returns its
// decoded text, which is always valid UTF-8 without lone surrogates.
func (p *parser) string() (string, error) {
	buf, end, escaped, serr := strictjson.DecodeString(p.buf[:0], p.data, p.pos)
	if serr != nil {
		return "", p.failAt(serr.Offset, serr.Reason)
	}
	raw := p.data[p.pos+1 : end-1]
	p.pos = end
	if !escaped {
		// One allocation: most keys and values take this path.
		return string(raw), nil
	}
	p.buf = buf
	return string(buf), nil
}

// number parses the RFC 8259 number grammar and converts it to the nearest
// binary64, refusing values that overflow, underflow to zero or, under the
// safe profile, exceed MaxSafeInteger.
func (p *parser) number() (float64, error) {
	start := p.pos
	d := p.data
	i, serr := strictjson.ScanNumber(d, start)
	if serr != nil {
		return 0, p.failAt(serr.Offset, serr.Reason)
	}
	intStart := start
	if d[start] == '-' {
		intStart++
	}
	simple := true
	for _, c := range d[intStart:i] {
		if c < '0' || c > '9' {
			simple = false
			break
		}
	}
	p.pos = i
	text := d[start:i]
	if simple && i-intStart <= 15 {
		// Up to 15 digits is below 2^53: exact without strconv.
		var n int64
		for _, c := range d[intStart:i] {
			n = n*10 + int64(c-'0')
		}
		if start != intStart {
			n = -n
		}
		return float64(n), nil
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, p.failAt(start, "number out of range: "+string(text))
	}
	if f == 0 && hasNonZeroMantissa(text) {
		return 0, p.failAt(start, "number underflows to zero: "+string(text))
	}
	if p.opt.safeNumbers && math.Abs(f) > MaxSafeInteger {
		return 0, p.failAt(start, "number outside the safe integer range: "+string(text))
	}
	return f, nil
}

func hasNonZeroMantissa(text []byte) bool {
	for _, c := range text {
		if c == 'e' || c == 'E' {
			return false
		}
		if c >= '1' && c <= '9' {
			return true
		}
	}
	return false
}

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785
// section 3.2.3 requires. UTF-8 byte order equals code point order, which
// differs only where a supplementary character meets U+E000..U+FFFF.
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	ua, ub := firstUnit(ra), firstUnit(rb)
	if ua != ub {
		return int(ua) - int(ub)
	}
	return int(ra) - int(rb)
}

func firstUnit(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}

// appendCanonical appends the RFC 8785 form of v.
func appendCanonical(dst []byte, v *value) ([]byte, error) {
	switch v.kind {
	case kindNull:
		return append(dst, "null"...), nil
	case kindFalse:
		return append(dst, "false"...), nil
	case kindTrue:
		return append(dst, "true"...), nil
	case kindNumber:
		return appendNumber(dst, v.num)
	case kindString:
		return strictjson.AppendQuoted(dst, v.str), nil
	case kindArray:
		dst = append(dst, '[')
		for i := range v.arr {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendCanonical(dst, &v.arr[i]); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case kindObject:
		dst = append(dst, '{')
		for i := range v.obj {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strictjson.AppendQuoted(dst, v.obj[i].key)
			dst = append(dst, ':')
			var err error
			if dst, err = appendCanonical(dst, &v.obj[i].val); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	return dst, canonical.Errorf(canonical.CodeInvalidArgument, "registry: unknown JSON kind %d", v.kind)
}

// appendNumber writes f as ECMAScript's Number.prototype.toString does
// (RFC 8785 section 3.2.2.3). Go's shortest round-trip digits are the same
// digits ECMAScript chooses; only the layout differs, so the digits and the
// decimal exponent are taken from strconv's 'e' form and laid out here.
func appendNumber(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, canonical.Errorf(canonical.CodeInvalidArgument, "registry: %v has no JSON form", f)
	}
	if f == 0 {
		return append(dst, '0'), nil // also -0
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	var scratch [32]byte
	e := strconv.AppendFloat(scratch[:0], f, 'e', -1, 64) // d[.ddd]e±XX
	var digits [17]byte
	k := 0
	i := 0
	for ; e[i] != 'e'; i++ {
		if e[i] != '.' {
			digits[k] = e[i]
			k++
		}
	}
	exp, _ := strconv.Atoi(string(e[i+1:]))
	n := exp + 1 // value = 0.d1d2…dk × 10^n
	ds := digits[:k]
	switch {
	case k <= n && n <= 21:
		dst = append(dst, ds...)
		for j := k; j < n; j++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, ds[:n]...)
		dst = append(dst, '.')
		dst = append(dst, ds[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for j := 0; j < -n; j++ {
			dst = append(dst, '0')
		}
		dst = append(dst, ds...)
	default:
		dst = append(dst, ds[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, ds[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst, nil
}

// Canonicalize parses data as one strict JSON value and returns its RFC 8785
// canonical form. Duplicate keys, invalid UTF-8, lone surrogates, numbers
// beyond ±MaxSafeInteger, nesting deeper than MaxJSONDepth and trailing data
// are errors (INVALID_ARGUMENT, as a *SyntaxError); nothing is coerced.
func Canonicalize(data []byte) ([]byte, error) {
	v, err := parse(data, strictOptions)
	if err != nil {
		return nil, err
	}
	return appendCanonical(make([]byte, 0, len(data)), &v)
}

// equal reports JSON equality: numbers by value, objects regardless of
// member order (members are kept sorted), arrays element-wise.
func equal(a, b *value) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case kindNumber:
		return a.num == b.num
	case kindString:
		return a.str == b.str
	case kindArray:
		if len(a.arr) != len(b.arr) {
			return false
		}
		for i := range a.arr {
			if !equal(&a.arr[i], &b.arr[i]) {
				return false
			}
		}
		return true
	case kindObject:
		if len(a.obj) != len(b.obj) {
			return false
		}
		for i := range a.obj {
			if a.obj[i].key != b.obj[i].key || !equal(&a.obj[i].val, &b.obj[i].val) {
				return false
			}
		}
		return true
	}
	return true
}
