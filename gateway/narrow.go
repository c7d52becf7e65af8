package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/registry"
)

// Bounds a draft adds where an upstream schema sets none and the subset
// requires one. The operator reviews them like the rest of the draft.
const (
	DraftMaxLength = 4096 // maxLength of a string without one
	DraftMaxItems  = 64   // maxItems of an array without one
)

// SchemaNote is one change a draft made to an upstream input schema to
// bring it into the bounded subset.
type SchemaNote struct {
	Pointer string // RFC 6901 pointer into the upstream's schema; "" is the root
	Keyword string
	Reason  string
	// Refused is true for a feature the subset cannot express: the draft's
	// schema then accepts less than the upstream's (a property left out, a
	// null no longer accepted), and the entry is marked for review. False
	// for an adjustment that keeps what a call may carry within the subset's
	// bounds: a bound added, an object closed, an annotation dropped.
	Refused bool
}

func (n SchemaNote) String() string {
	kind := "adjusted"
	if n.Refused {
		kind = "refused"
	}
	return fmt.Sprintf("%s at %q, %q: %s", kind, pointerOrRoot(n.Pointer), n.Keyword, n.Reason)
}

// annotations are keywords that do not change which values a schema
// accepts; a draft drops them. format is one: JSON Schema 2020-12 makes it
// an annotation unless a validator opts in.
var annotations = map[string]string{
	"default":          "a default is the upstream's to apply; the agent sees none",
	"examples":         "examples are not in the subset",
	"$comment":         "comments are not in the subset",
	"deprecated":       "an annotation the subset does not carry",
	"readOnly":         "an annotation the subset does not carry",
	"writeOnly":        "an annotation the subset does not carry",
	"format":           "a format is an annotation in JSON Schema 2020-12; the upstream checks its own",
	"contentMediaType": "an annotation the subset does not carry",
	"contentEncoding":  "an annotation the subset does not carry",
}

// narrower brings one upstream input schema into the subset, noting every
// change.
type narrower struct {
	notes []SchemaNote
	nodes int
}

func (w *narrower) note(ptr, kw string, refused bool, format string, args ...any) {
	w.notes = append(w.notes, SchemaNote{Pointer: ptr, Keyword: kw, Reason: fmt.Sprintf(format, args...), Refused: refused})
}

// narrowSchema returns the draft input schema of an upstream schema and the
// changes made to it. The result is always an object schema; whether the
// registry accepts it is checked by the caller.
func narrowSchema(upstream any) (json.RawMessage, []SchemaNote) {
	w := &narrower{}
	var root any
	raw, err := json.Marshal(upstream)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		err = dec.Decode(&root)
	}
	m, ok := root.(map[string]any)
	if err != nil || !ok {
		w.note("", "", true, "the input schema is not a JSON object; the draft accepts only {}")
		m = map[string]any{}
	}
	out, ok := w.node(m, "", 1, true)
	if !ok || out["type"] != "object" {
		if ok {
			w.note("", "type", true, "the root of an input schema must be an object; the draft accepts only {}")
		}
		out = map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{}}
	}
	b, _ := json.Marshal(out)
	return b, w.notes
}

// node narrows the schema v at ptr. false: it cannot be expressed, and the
// caller leaves out the property that holds it. At the root, keywords that
// cannot be expressed are dropped instead.
func (w *narrower) node(v any, ptr string, depth int, root bool) (map[string]any, bool) {
	in, isObj := v.(map[string]any)
	if !isObj {
		w.note(ptr, "", true, "boolean schemas are not in the subset")
		return nil, false
	}
	if depth > registry.MaxSchemaDepth {
		w.note(ptr, "", true, "nested deeper than %d levels", registry.MaxSchemaDepth)
		return nil, false
	}
	if w.nodes++; w.nodes > registry.MaxSchemaNodes {
		w.note(ptr, "", true, "the schema has more than %d nodes", registry.MaxSchemaNodes)
		return nil, false
	}
	out := map[string]any{}
	ok := true
	for _, kw := range sortedNames(in) {
		val := in[kw]
		switch kw {
		case "$schema":
			if s, _ := val.(string); root && s == "https://json-schema.org/draft/2020-12/schema" {
				out[kw] = s
			} else {
				w.note(ptr, kw, false, "dropped: the subset is JSON Schema 2020-12, and its keywords mean the same in %v", val)
			}
		case "title", "description":
			s, isStr := val.(string)
			switch {
			case !isStr:
				w.note(ptr, kw, false, "dropped: not a string")
			case len(s) > registry.MaxAnnotationBytes:
				out[kw] = cutText(s, registry.MaxAnnotationBytes)
				w.note(ptr, kw, false, "cut to %d bytes", registry.MaxAnnotationBytes)
			default:
				out[kw] = s
			}
		case "type":
			t, fine := w.typeOf(val, ptr)
			if !fine {
				ok = false
				continue
			}
			out[kw] = t
		case "const":
			if s, isStr := val.(string); isStr {
				out["enum"] = []any{s}
				w.note(ptr, kw, false, "written as a one-value enum")
			} else {
				w.note(ptr, kw, true, "a const that is not a string is not in the subset")
				ok = false
			}
		case "enum", "minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems", "uniqueItems",
			"items", "properties", "required", "additionalProperties":
			out[kw] = val // checked below, against the node's type
		case "exclusiveMinimum", "exclusiveMaximum":
			out[kw] = val // integers only, below
		default:
			if reason, isAnn := annotations[kw]; isAnn {
				w.note(ptr, kw, false, "dropped: %s", reason)
				continue
			}
			reason, known := registry.RefusedKeyword(kw)
			if !known {
				reason = "unknown keyword"
			}
			if root && kw != "anyOf" && kw != "oneOf" && kw != "allOf" {
				w.note(ptr, kw, true, "dropped: %s", reason)
				continue
			}
			w.note(ptr, kw, true, "%s", reason)
			ok = false
		}
	}
	if !ok {
		return nil, false
	}
	if _, typed := out["type"]; !typed {
		t := inferType(out)
		if t == "" {
			w.note(ptr, "type", true, "missing, and nothing says which; the subset needs exactly one type")
			return nil, false
		}
		out["type"] = t
		w.note(ptr, "type", false, "%q, as its keywords say", t)
	}
	return w.bound(out, ptr, depth)
}

// typeOf reads a type: a name, or a list of one name and "null", which the
// draft narrows to the name.
func (w *narrower) typeOf(val any, ptr string) (string, bool) {
	switch t := val.(type) {
	case string:
		return t, true
	case []any:
		var names []string
		for _, e := range t {
			if s, _ := e.(string); s != "null" {
				names = append(names, fmt.Sprint(e))
			}
		}
		if len(names) == 1 && len(names) < len(t) {
			w.note(ptr, "type", true, "null is not accepted: type lists are not in the subset")
			return names[0], true
		}
	}
	w.note(ptr, "type", true, "type lists are not in the subset")
	return "", false
}

// inferType names the one type a node's keywords imply, or "".
func inferType(n map[string]any) string {
	has := func(kws ...string) bool {
		return slices.ContainsFunc(kws, func(k string) bool { _, ok := n[k]; return ok })
	}
	switch {
	case has("properties", "required", "additionalProperties"):
		return "object"
	case has("items", "minItems", "maxItems", "uniqueItems"):
		return "array"
	case has("minLength", "maxLength", "enum"):
		return "string"
	case has("minimum", "maximum"):
		return "number"
	}
	return ""
}

// bound checks the keywords of a typed node against its type and adds the
// bounds the subset requires.
func (w *narrower) bound(n map[string]any, ptr string, depth int) (map[string]any, bool) {
	typ, _ := n["type"].(string)
	applies := map[string][]string{
		"string":  {"minLength", "maxLength", "enum"},
		"integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
		"number":  {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
		"array":   {"minItems", "maxItems", "uniqueItems", "items"},
		"object":  {"properties", "required", "additionalProperties"},
	}
	for _, kw := range []string{"minLength", "maxLength", "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
		"minItems", "maxItems", "uniqueItems", "items", "properties", "required", "additionalProperties"} {
		if _, present := n[kw]; present && !slices.Contains(applies[typ], kw) {
			if kw == "enum" {
				w.note(ptr, kw, true, "an enum on a %s is not in the subset (only on strings)", typ)
				return nil, false
			}
			delete(n, kw)
			w.note(ptr, kw, false, "dropped: it does not apply to a %s", typ)
		}
	}
	switch typ {
	case "string":
		if e, present := n["enum"]; present {
			vals, _ := e.([]any)
			if len(vals) == 0 || len(vals) > registry.MaxEnum || slices.ContainsFunc(vals, func(v any) bool { _, s := v.(string); return !s }) {
				w.note(ptr, "enum", true, "an enum must be 1 to %d strings", registry.MaxEnum)
				return nil, false
			}
		}
		longest := 0
		if vals, _ := n["enum"].([]any); vals != nil {
			var unique []any
			for _, v := range vals {
				if !slices.Contains(unique, v) {
					unique = append(unique, v)
					longest = max(longest, utf8.RuneCountInString(v.(string)))
				}
			}
			if len(unique) < len(vals) {
				n["enum"] = unique
				w.note(ptr, "enum", false, "repeated values dropped")
			}
		}
		lo, hasLo := count(n["minLength"])
		hi, hasHi := count(n["maxLength"])
		switch {
		case !hasHi && n["maxLength"] != nil, !hasLo && n["minLength"] != nil:
			w.note(ptr, "maxLength", true, "lengths must be integers")
			return nil, false
		case !hasHi:
			hi = max(DraftMaxLength, lo, longest)
			w.note(ptr, "maxLength", false, "%d added: the subset bounds every string", hi)
		}
		if hi > registry.MaxStringLength {
			hi = registry.MaxStringLength
			w.note(ptr, "maxLength", true, "lowered to %d, the subset's largest", hi)
		}
		n["maxLength"] = hi
		if hasLo && lo > hi {
			w.note(ptr, "minLength", true, "greater than the largest maxLength")
			return nil, false
		}
		if vals, _ := n["enum"].([]any); vals != nil {
			for _, v := range vals {
				if k := utf8.RuneCountInString(v.(string)); k > hi || hasLo && k < lo {
					w.note(ptr, "enum", true, "a value is outside the string's own lengths")
					return nil, false
				}
			}
		}
	case "integer", "number":
		for _, b := range [][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
			x, present := n[b[0]]
			if !present {
				continue
			}
			delete(n, b[0])
			f, isNum := number(x)
			if typ != "integer" || !isNum || f != float64(int64(f)) {
				w.note(ptr, b[0], true, "an exclusive bound is in the subset only on integers")
				return nil, false
			}
			if b[1] == "minimum" {
				n[b[1]] = int64(f) + 1
			} else {
				n[b[1]] = int64(f) - 1
			}
			w.note(ptr, b[0], false, "written as %s %d", b[1], n[b[1]])
		}
		for _, b := range []struct {
			kw    string
			limit int64
		}{{"minimum", -registry.MaxSafeInteger}, {"maximum", registry.MaxSafeInteger}} {
			x, present := n[b.kw]
			if !present {
				n[b.kw] = b.limit
				w.note(ptr, b.kw, false, "%d added: the subset bounds every number", b.limit)
				continue
			}
			if f, isNum := number(x); !isNum || f < -registry.MaxSafeInteger || f > registry.MaxSafeInteger {
				n[b.kw] = b.limit
				w.note(ptr, b.kw, true, "set to %d, the subset's widest", b.limit)
			}
		}
	case "array":
		items, present := n["items"]
		if !present {
			w.note(ptr, "items", true, "an array without items admits anything; the subset needs its elements' schema")
			return nil, false
		}
		child, fine := w.node(items, ptr+"/items", depth+1, false)
		if !fine {
			return nil, false
		}
		n["items"] = child
		hi, hasHi := count(n["maxItems"])
		lo, hasLo := count(n["minItems"])
		switch {
		case !hasHi && n["maxItems"] != nil, !hasLo && n["minItems"] != nil:
			w.note(ptr, "maxItems", true, "item counts must be integers")
			return nil, false
		case !hasHi:
			hi = DraftMaxItems
			w.note(ptr, "maxItems", false, "%d added: the subset bounds every array", hi)
		case hi > registry.MaxArrayItems:
			hi = registry.MaxArrayItems
			w.note(ptr, "maxItems", true, "lowered to %d, the subset's largest", hi)
		}
		n["maxItems"] = hi
		if hasLo && lo > hi {
			w.note(ptr, "minItems", true, "greater than maxItems")
			return nil, false
		}
	case "object":
		return w.object(n, ptr, depth)
	case "boolean", "null":
	default:
		w.note(ptr, "type", true, "unknown type %q", typ)
		return nil, false
	}
	return n, true
}

// object closes an object and narrows its properties; a property that
// cannot be expressed is left out.
func (w *narrower) object(n map[string]any, ptr string, depth int) (map[string]any, bool) {
	switch ap := n["additionalProperties"].(type) {
	case bool:
		if ap {
			w.note(ptr, "additionalProperties", false, "set to false: the subset's objects are closed; the agent may send only the listed properties")
		}
	case nil:
		w.note(ptr, "additionalProperties", false, "false added: the subset's objects are closed; the agent may send only the listed properties")
	case map[string]any:
		if len(ap) == 0 {
			w.note(ptr, "additionalProperties", false, "set to false: the subset's objects are closed; the agent may send only the listed properties")
		} else {
			w.note(ptr+"/additionalProperties", "additionalProperties", true, "open objects (maps) are not in the subset: the draft accepts only the listed properties")
		}
	}
	n["additionalProperties"] = false
	props, _ := n["properties"].(map[string]any)
	if _, present := n["properties"]; present && props == nil {
		w.note(ptr, "properties", true, "must be an object")
		return nil, false
	}
	if len(props) > registry.MaxProperties {
		w.note(ptr, "properties", true, "more than %d properties", registry.MaxProperties)
		return nil, false
	}
	required := map[string]bool{}
	if rl, isList := n["required"].([]any); isList {
		for _, r := range rl {
			if s, isStr := r.(string); isStr {
				required[s] = true
			}
		}
	}
	kept := map[string]any{}
	for _, name := range sortedNames(props) {
		p := ptr + "/properties/" + escapePointer(name)
		child, fine := w.node(props[name], p, depth+1, false)
		if !fine {
			if required[name] {
				w.note(p, "", true, "left out, although the upstream requires it: calls will fail upstream; leave the tool out or have the upstream accept a simpler schema")
				delete(required, name)
			} else {
				w.note(p, "", true, "left out: the agent cannot pass it")
			}
			continue
		}
		kept[name] = child
	}
	n["properties"] = kept
	var names []string
	for name := range required {
		if _, listed := kept[name]; listed {
			names = append(names, name)
		} else if _, left := props[name]; !left {
			w.note(ptr, "required", false, "%q dropped: it is not among the properties", name)
		}
	}
	slices.Sort(names)
	if len(names) > 0 {
		n["required"] = names
	} else {
		delete(n, "required")
	}
	return n, true
}

// count reads a non-negative integer bound.
func count(v any) (int, bool) {
	f, ok := number(v)
	if !ok || f < 0 || f != float64(int64(f)) || f > 1<<31 {
		return 0, false
	}
	return int(f), true
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(x.String(), 64)
		return f, err == nil
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	}
	return 0, false
}

// notesText joins the refused features of notes into one line.
func notesText(notes []SchemaNote) string {
	var parts []string
	for _, n := range notes {
		if n.Refused {
			parts = append(parts, fmt.Sprintf("%s %s: %s", pointerOrRoot(n.Pointer), n.Keyword, n.Reason))
		}
	}
	return strings.Join(parts, "; ")
}
