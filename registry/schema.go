package registry

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/canonical"
)

// Bounds of the schema subset and of the values it admits.
const (
	MaxSchemaDepth      = 8      // schema nodes on any path from the root, root included
	MaxSchemaNodes      = 256    // schema nodes in one schema
	MaxProperties       = 64     // properties of one object schema
	MaxEnum             = 64     // values of one enum
	MaxArrayItems       = 256    // elements of any array in an input or output
	MaxStringLength     = 262144 // largest maxLength, in code points
	MaxAnnotationBytes  = 4096   // title and description of a schema node
	schemaDocumentDepth = 64     // JSON nesting of a schema document
	draft202012         = "https://json-schema.org/draft/2020-12/schema"
)

type typeMask uint8

const (
	typeNull typeMask = 1 << iota
	typeBoolean
	typeInteger
	typeNumber
	typeString
	typeArray
	typeObject
)

var typeNames = map[string]typeMask{
	"null": typeNull, "boolean": typeBoolean, "integer": typeInteger, "number": typeNumber,
	"string": typeString, "array": typeArray, "object": typeObject,
}

// applies lists, for each keyword that constrains one type, that type.
// Under the strict subset a keyword on a node of another type is refused:
// it would silently constrain nothing.
var applies = map[string]typeMask{
	"minLength": typeString, "maxLength": typeString, "enum": typeString,
	"minimum": typeInteger | typeNumber, "maximum": typeInteger | typeNumber,
	"minItems": typeArray, "maxItems": typeArray, "uniqueItems": typeArray, "items": typeArray,
	"properties": typeObject, "required": typeObject, "additionalProperties": typeObject,
}

// refused names the JSON Schema keywords deliberately left out of the subset.
var refused = map[string]string{
	"$ref":                  "references are not in the subset",
	"$dynamicRef":           "references are not in the subset",
	"$defs":                 "definitions are not in the subset",
	"$id":                   "schema identifiers are not in the subset",
	"$anchor":               "anchors are not in the subset",
	"oneOf":                 "composition is not in the subset",
	"anyOf":                 "composition is not in the subset",
	"allOf":                 "composition is not in the subset",
	"not":                   "composition is not in the subset",
	"if":                    "conditionals are not in the subset",
	"then":                  "conditionals are not in the subset",
	"else":                  "conditionals are not in the subset",
	"pattern":               "regular expressions are not in the subset",
	"patternProperties":     "regular expressions are not in the subset",
	"format":                "formats are not in the subset",
	"default":               "defaults would coerce input; not in the subset",
	"const":                 "not in the subset; use a one-value enum on a string",
	"prefixItems":           "tuples are not in the subset",
	"contains":              "not in the subset",
	"propertyNames":         "not in the subset",
	"dependentSchemas":      "not in the subset",
	"dependentRequired":     "not in the subset",
	"unevaluatedProperties": "not in the subset",
	"unevaluatedItems":      "not in the subset",
	"exclusiveMinimum":      "not in the subset; use minimum",
	"exclusiveMaximum":      "not in the subset; use maximum",
	"multipleOf":            "not in the subset",
	"minProperties":         "not in the subset",
	"maxProperties":         "not in the subset",
	"minContains":           "not in the subset",
	"maxContains":           "not in the subset",
}

// RefusedKeyword returns why the subset leaves out the JSON Schema keyword
// kw; false for a keyword it does not name (in the subset, or unknown).
func RefusedKeyword(kw string) (reason string, ok bool) {
	reason, ok = refused[kw]
	return reason, ok
}

// node is one compiled schema node. A nil *node admits any value; the strict
// compiler never produces one.
type node struct {
	types       typeMask // 0: any type
	minLength   int      // -1: absent
	maxLength   int      // -1: absent
	minimum     float64
	maximum     float64
	hasMinimum  bool
	hasMaximum  bool
	minItems    int // -1: absent
	maxItems    int // -1: absent
	uniqueItems bool
	items       *node
	props       []property // sorted like object members
	required    []string   // sorted like object members
	closed      bool
	enum        []value // nil: absent
}

type property struct {
	name   string
	schema *node
}

// compiler compiles one schema document.
type compiler struct {
	strict bool   // every node must name its type and carry the bounds the subset requires
	tool   string // name@version, for errors
	which  string // "input" or "output"
	nodes  int
}

func (c *compiler) fail(path, keyword, format string, args ...any) error {
	return &SchemaError{Tool: c.tool, Schema: c.which, Path: path, Keyword: keyword, Reason: fmt.Sprintf(format, args...)}
}

// compileSchema parses and compiles a schema document and returns the
// compiled root and the document's canonical bytes.
func compileSchema(raw []byte, c *compiler, rootObject bool) (*node, []byte, error) {
	doc, err := parse(raw, parseOptions{maxDepth: schemaDocumentDepth, safeNumbers: true, code: canonical.CodeInvalidArgument})
	if err != nil {
		return nil, nil, canonical.Wrap(canonical.CodeInvalidArgument, err, c.tool+" "+c.which+" schema")
	}
	n, err := c.compile(&doc, "", 1, "")
	if err != nil {
		return nil, nil, err
	}
	if rootObject && (n == nil || n.types != typeObject) {
		return nil, nil, c.fail("", "type", "the root of an input schema must be an object")
	}
	b, err := appendCanonical(nil, &doc)
	if err != nil {
		return nil, nil, err
	}
	return n, b, nil
}

func (c *compiler) compile(v *value, path string, depth int, via string) (*node, error) {
	if v.kind != kindObject {
		return nil, c.fail(path, via, "a schema must be a JSON object; boolean schemas are not in the subset")
	}
	if depth > MaxSchemaDepth {
		return nil, c.fail(path, via, "schema nested deeper than %d levels", MaxSchemaDepth)
	}
	c.nodes++
	if c.nodes > MaxSchemaNodes {
		return nil, c.fail(path, via, "schema has more than %d nodes", MaxSchemaNodes)
	}
	n := &node{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
	var items, props, required *value
	for i := range v.obj {
		m := &v.obj[i]
		kw, val := m.key, &m.val
		switch kw {
		case "$schema":
			if depth != 1 || val.kind != kindString || val.str != draft202012 {
				return nil, c.fail(path, kw, "only %q, and only at the root", draft202012)
			}
		case "title", "description":
			if val.kind != kindString || len(val.str) > MaxAnnotationBytes {
				return nil, c.fail(path, kw, "must be a string of at most %d bytes", MaxAnnotationBytes)
			}
		case "type":
			if val.kind != kindString {
				return nil, c.fail(path, kw, "must be a single type name; type lists are not in the subset")
			}
			t, ok := typeNames[val.str]
			if !ok {
				return nil, c.fail(path, kw, "unknown type %q", val.str)
			}
			n.types = t
		case "enum":
			if val.kind != kindArray || len(val.arr) == 0 || len(val.arr) > MaxEnum {
				return nil, c.fail(path, kw, "must be an array of 1 to %d values", MaxEnum)
			}
			for j := range val.arr {
				for k := 0; k < j; k++ {
					if equal(&val.arr[j], &val.arr[k]) {
						return nil, c.fail(path, kw, "values must be unique")
					}
				}
			}
			n.enum = val.arr
		case "minLength", "maxLength":
			k, err := c.count(path, kw, val, MaxStringLength)
			if err != nil {
				return nil, err
			}
			if kw == "minLength" {
				n.minLength = k
			} else {
				n.maxLength = k
			}
		case "minItems", "maxItems":
			k, err := c.count(path, kw, val, MaxArrayItems)
			if err != nil {
				return nil, err
			}
			if kw == "minItems" {
				n.minItems = k
			} else {
				n.maxItems = k
			}
		case "minimum", "maximum":
			// The strict parser already refused numbers beyond ±MaxSafeInteger.
			if val.kind != kindNumber {
				return nil, c.fail(path, kw, "must be a number within ±(2^53-1)")
			}
			if kw == "minimum" {
				n.minimum, n.hasMinimum = val.num, true
			} else {
				n.maximum, n.hasMaximum = val.num, true
			}
		case "uniqueItems":
			if val.kind != kindTrue && val.kind != kindFalse {
				return nil, c.fail(path, kw, "must be a boolean")
			}
			n.uniqueItems = val.kind == kindTrue
		case "items":
			items = val
		case "properties":
			if val.kind != kindObject || len(val.obj) > MaxProperties {
				return nil, c.fail(path, kw, "must be an object of at most %d properties", MaxProperties)
			}
			props = val
		case "required":
			if val.kind != kindArray || len(val.arr) > MaxProperties {
				return nil, c.fail(path, kw, "must be an array of at most %d names", MaxProperties)
			}
			required = val
		case "additionalProperties":
			if val.kind != kindFalse {
				return nil, c.fail(path, kw, "must be false; open objects are not in the subset")
			}
			n.closed = true
		default:
			if reason, ok := refused[kw]; ok {
				return nil, c.fail(path, kw, "%s", reason)
			}
			return nil, c.fail(path, kw, "unknown keyword")
		}
	}
	if c.strict {
		if err := c.requireBounds(n, v, path); err != nil {
			return nil, err
		}
	}
	if n.minLength >= 0 && n.maxLength >= 0 && n.minLength > n.maxLength {
		return nil, c.fail(path, "minLength", "greater than maxLength")
	}
	if n.hasMinimum && n.hasMaximum && n.minimum > n.maximum {
		return nil, c.fail(path, "minimum", "greater than maximum")
	}
	if n.minItems >= 0 && n.maxItems >= 0 && n.minItems > n.maxItems {
		return nil, c.fail(path, "minItems", "greater than maxItems")
	}
	if items != nil {
		child, err := c.compile(items, path+"/items", depth+1, "items")
		if err != nil {
			return nil, err
		}
		n.items = child
	}
	if props != nil {
		n.props = make([]property, 0, len(props.obj))
		for i := range props.obj {
			m := &props.obj[i]
			child, err := c.compile(&m.val, path+"/properties/"+pointerEscape(m.key), depth+1, "properties")
			if err != nil {
				return nil, err
			}
			n.props = append(n.props, property{name: m.key, schema: child})
		}
	}
	if required != nil {
		names := make([]string, 0, len(required.arr))
		for i := range required.arr {
			r := &required.arr[i]
			if r.kind != kindString {
				return nil, c.fail(path, "required", "must list property names")
			}
			names = append(names, r.str)
		}
		slices.SortFunc(names, compareUTF16)
		for i := 1; i < len(names); i++ {
			if names[i] == names[i-1] {
				return nil, c.fail(path, "required", "names must be unique")
			}
		}
		if n.closed {
			for _, name := range names {
				if n.property(name) == nil {
					return nil, c.fail(path, "required", "%q is not among the properties of a closed object", name)
				}
			}
		}
		n.required = names
	}
	if c.strict && n.enum != nil {
		for i := range n.enum {
			if e := n.check(&n.enum[i]); e != nil {
				return nil, c.fail(path, "enum", "value %d fails this schema's own %q", i, e.keyword)
			}
		}
	}
	return n, nil
}

// requireBounds enforces what the strict subset demands of each type.
func (c *compiler) requireBounds(n *node, v *value, path string) error {
	if n.types == 0 {
		return c.fail(path, "type", "missing; every schema node names exactly one type")
	}
	for i := range v.obj {
		if t, ok := applies[v.obj[i].key]; ok && t&n.types == 0 {
			return c.fail(path, v.obj[i].key, "does not apply to this type")
		}
	}
	switch n.types {
	case typeString:
		if n.maxLength < 0 {
			return c.fail(path, "maxLength", "required for strings")
		}
	case typeInteger, typeNumber:
		if !n.hasMinimum {
			return c.fail(path, "minimum", "required for numbers")
		}
		if !n.hasMaximum {
			return c.fail(path, "maximum", "required for numbers")
		}
	case typeArray:
		if n.maxItems < 0 {
			return c.fail(path, "maxItems", "required for arrays")
		}
		// Without items an array admits anything, open objects included.
		// items itself is compiled under the same rules.
		if !has(v, "items") {
			return c.fail(path, "items", "required for arrays")
		}
	case typeObject:
		if !n.closed {
			return c.fail(path, "additionalProperties", "must be false; open objects are not in the subset")
		}
	}
	return nil
}

// has reports whether the schema object v has the keyword kw.
func has(v *value, kw string) bool {
	for i := range v.obj {
		if v.obj[i].key == kw {
			return true
		}
	}
	return false
}

// count reads a non-negative integral count; 2.0 is the integer 2, as in JSON Schema.
func (c *compiler) count(path, kw string, v *value, limit int) (int, error) {
	if v.kind != kindNumber || v.num < 0 || v.num != math.Trunc(v.num) || v.num > float64(limit) {
		return 0, c.fail(path, kw, "must be an integer from 0 to %d", limit)
	}
	return int(v.num), nil
}

func (n *node) property(name string) *node {
	i, ok := slices.BinarySearchFunc(n.props, name, func(p property, s string) int { return compareUTF16(p.name, s) })
	if !ok {
		return nil
	}
	return n.props[i].schema
}

// violation is a validation failure on its way up; segs holds the path in
// reverse, so that nothing is allocated for values that pass.
type violation struct {
	segs    []string
	keyword string
	reason  string
}

func (e *violation) at(seg string) *violation {
	e.segs = append(e.segs, seg)
	return e
}

func (e *violation) toError(code canonical.Code) error {
	var path []byte
	for i := len(e.segs) - 1; i >= 0; i-- {
		path = append(path, '/')
		path = append(path, pointerEscape(e.segs[i])...)
	}
	return &ValidationError{Path: string(path), Keyword: e.keyword, Reason: e.reason, code: code}
}

func fails(keyword, format string, args ...any) *violation {
	return &violation{keyword: keyword, reason: fmt.Sprintf(format, args...)}
}

func hasType(mask typeMask, v *value) bool {
	switch v.kind {
	case kindNull:
		return mask&typeNull != 0
	case kindTrue, kindFalse:
		return mask&typeBoolean != 0
	case kindString:
		return mask&typeString != 0
	case kindArray:
		return mask&typeArray != 0
	case kindObject:
		return mask&typeObject != 0
	case kindNumber:
		return mask&typeNumber != 0 || (mask&typeInteger != 0 && v.num == math.Trunc(v.num))
	}
	return false
}

// check validates v against n. Keywords constrain only values of their own
// type, as in JSON Schema; the strict compiler makes that distinction moot by
// requiring exactly one type per node.
func (n *node) check(v *value) *violation {
	if n == nil {
		return nil
	}
	if n.types != 0 && !hasType(n.types, v) {
		return fails("type", "wrong type")
	}
	if n.enum != nil {
		found := false
		for i := range n.enum {
			if equal(&n.enum[i], v) {
				found = true
				break
			}
		}
		if !found {
			return fails("enum", "not one of the allowed values")
		}
	}
	switch v.kind {
	case kindString:
		if n.minLength >= 0 || n.maxLength >= 0 {
			k := utf8.RuneCountInString(v.str)
			if n.maxLength >= 0 && k > n.maxLength {
				return fails("maxLength", "longer than %d characters", n.maxLength)
			}
			if n.minLength >= 0 && k < n.minLength {
				return fails("minLength", "shorter than %d characters", n.minLength)
			}
		}
	case kindNumber:
		if n.hasMinimum && v.num < n.minimum {
			return fails("minimum", "less than the minimum")
		}
		if n.hasMaximum && v.num > n.maximum {
			return fails("maximum", "greater than the maximum")
		}
	case kindArray:
		if n.maxItems >= 0 && len(v.arr) > n.maxItems {
			return fails("maxItems", "more than %d items", n.maxItems)
		}
		if n.minItems >= 0 && len(v.arr) < n.minItems {
			return fails("minItems", "fewer than %d items", n.minItems)
		}
		for i := range v.arr {
			if e := n.items.check(&v.arr[i]); e != nil {
				return e.at(strconv.Itoa(i))
			}
		}
		if n.uniqueItems {
			for i := 1; i < len(v.arr); i++ {
				for j := 0; j < i; j++ {
					if equal(&v.arr[i], &v.arr[j]) {
						return fails("uniqueItems", "items %d and %d are equal", j, i).at(strconv.Itoa(i))
					}
				}
			}
		}
	case kindObject:
		// Both lists are sorted the same way: one merge pass.
		p := 0
		for i := range v.obj {
			m := &v.obj[i]
			for p < len(n.props) && compareUTF16(n.props[p].name, m.key) < 0 {
				p++
			}
			if p < len(n.props) && n.props[p].name == m.key {
				if e := n.props[p].schema.check(&m.val); e != nil {
					return e.at(m.key)
				}
				continue
			}
			if n.closed {
				return fails("additionalProperties", "unknown property").at(m.key)
			}
		}
		for _, name := range n.required {
			if _, ok := slices.BinarySearchFunc(v.obj, name, func(m member, s string) int { return compareUTF16(m.key, s) }); !ok {
				return fails("required", "missing property %q", name)
			}
		}
	}
	return nil
}
