package registry

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

var fuzzSeeds = []string{
	`{}`, `[]`, `null`, `true`, `0`, `-0`, `1.5e300`, `9007199254740991`, `9007199254740992`,
	`{"b":1,"a":[1,2,{"c":null}]}`, `{"a":1,"a":2}`, `"\ud83d\ude02"`, `"\ud800"`, "\"\xff\"",
	`[1e-7,1e21,1e-6,123456789012345678]`, `{"\u20ac":1,"\r":2,"\ufb33":3,"\ud83d\ude02":4}`,
	` [ 1 , 2 ] `, `[1,]`, `01`, `{"a":"\u0000\u001f\"\\\/"}`, `1e400`, `1e-400`,
}

func addSeeds(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	inputs, err := filepath.Glob(filepath.Join(suiteTestdata(f, "jcs"), "input", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range inputs {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// checkCanonical fails unless out is valid JSON that canonicalizes to itself.
func checkCanonical(t *testing.T, out []byte, opt parseOptions) {
	t.Helper()
	if !json.Valid(out) {
		t.Fatalf("output is not JSON: %q", out)
	}
	v, err := parse(out, opt)
	if err != nil {
		t.Fatalf("output %q does not parse: %v", out, err)
	}
	again, err := appendCanonical(nil, &v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, out) {
		t.Fatalf("not a fixed point:\n%q\n%q", out, again)
	}
}

func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opt := range []parseOptions{strictOptions, rfcOptions} {
			v, err := parse(data, opt)
			if err != nil {
				if canonical.CodeOf(err) != canonical.CodeInvalidArgument {
					t.Fatalf("parse error without its code: %v", err)
				}
				continue
			}
			// We accept a subset of RFC 8259, so encoding/json must agree.
			if !json.Valid(data) {
				t.Fatalf("accepted JSON that encoding/json rejects: %q", data)
			}
			out, err := appendCanonical(nil, &v)
			if err != nil {
				t.Fatal(err)
			}
			checkCanonical(t, out, opt)
		}
	})
}

func FuzzCanonicalize(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Canonicalize(data)
		if err != nil {
			return
		}
		checkCanonical(t, out, strictOptions)
		twice, err := Canonicalize(out)
		if err != nil || !bytes.Equal(twice, out) {
			t.Fatalf("Canonicalize is not idempotent: %q -> %q (%v)", out, twice, err)
		}
		// The strict profile only narrows the RFC profile.
		rfc, err := canonicalizeRFC(data)
		if err != nil || !bytes.Equal(rfc, out) {
			t.Fatalf("strict and RFC profiles disagree on %q: %q vs %q (%v)", data, out, rfc, err)
		}
	})
}

// FuzzJCSDifferential compares with jcsOracle, an RFC 8785 canonicalizer
// written from the RFC over encoding/json's decoding, on every input both
// accept. The oracle is laxer than us (duplicate keys, invalid UTF-8), so
// only agreement is required.
func FuzzJCSDifferential(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		theirs, err := jcsOracle(data)
		if err != nil {
			return
		}
		if ours, err := Canonicalize(data); err == nil && !bytes.Equal(ours, theirs) {
			t.Fatalf("strict differs from the oracle on %q:\nours   %q\ntheirs %q", data, ours, theirs)
		}
		if ours, err := canonicalizeRFC(data); err == nil && !bytes.Equal(ours, theirs) {
			t.Fatalf("RFC profile differs from the oracle on %q:\nours   %q\ntheirs %q", data, ours, theirs)
		}
	})
}

func FuzzCompileSchema(f *testing.F) {
	f.Add([]byte(searchInputSchema), []byte(`{"query":"q","limit":3,"tags":["a"]}`))
	f.Add([]byte(searchOutputSchema), []byte(`{"hits":[{"id":"x","score":0.5}]}`))
	f.Add([]byte(nest(MaxSchemaDepth)), []byte(`{"a":{"a":{"a":null}}}`))
	f.Add([]byte(`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","maxItems":3,"uniqueItems":true}}}`), []byte(`{"a":[1,{"b":1},[1]]}`))
	f.Add([]byte(`{"type":"object","additionalProperties":false,"properties":{"e":{"type":"string","maxLength":3,"enum":["a","b"]}},"required":["e"]}`), []byte(`{"e":"b"}`))
	f.Add([]byte(`{"type":"object","$ref":"#"}`), []byte(`{}`))
	f.Add([]byte(`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","maxItems":3,"items":{"type":"object","additionalProperties":false,"properties":{"b":{"type":"integer","minimum":0,"maximum":9}}}}}}`), []byte(`{"a":[{"b":1},{"c":2}]}`))
	f.Add([]byte(`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","maxItems":2,"items":{"type":"array","maxItems":2,"items":{"type":"null"}}}}}`), []byte(`{"a":[[null],[]]}`))
	f.Fuzz(func(t *testing.T, schema, datum []byte) {
		for _, strict := range []bool{true, false} {
			n, canon, err := compileSchema(schema, &compiler{strict: strict, tool: "f@1.0.0", which: "input"}, strict)
			if err != nil {
				if canonical.CodeOf(err) != canonical.CodeInvalidArgument {
					t.Fatalf("schema refusal without INVALID_ARGUMENT: %v", err)
				}
				continue
			}
			if strict {
				if path := unbounded(n, ""); path != "" {
					t.Fatalf("strict schema %q compiled with an unbounded node at %q", schema, path)
				}
			}
			checkCanonical(t, canon, parseOptions{maxDepth: schemaDocumentDepth, safeNumbers: true})
			// A schema compiles the same from its canonical form.
			if _, canon2, err := compileSchema(canon, &compiler{strict: strict, tool: "f@1.0.0", which: "input"}, strict); err != nil || !bytes.Equal(canon, canon2) {
				t.Fatalf("canonical schema does not recompile: %v", err)
			}
			out, err := canonicalValue(datum, n, canonical.CodeInvalidInput, maxRawInputBytes, MaxInputBytes, "input")
			if err != nil {
				if canonical.CodeOf(err) != canonical.CodeInvalidInput {
					t.Fatalf("input refusal without INVALID_INPUT: %v", err)
				}
				continue
			}
			checkCanonical(t, out, parseOptions{maxDepth: MaxSchemaDepth, safeNumbers: true})
			again, err := canonicalValue(out, n, canonical.CodeInvalidInput, maxRawInputBytes, MaxInputBytes, "input")
			if err != nil || !bytes.Equal(again, out) {
				t.Fatalf("canonical input does not revalidate to itself: %v", err)
			}
		}
	})
}

// unbounded returns the path of the first node of a compiled schema that the
// strict subset should have refused: no single type, a string without
// maxLength, a number without both bounds, an array without maxItems or
// items, an open object. "" means every node is bounded.
func unbounded(n *node, path string) string {
	if n == nil {
		return path + " (nil)"
	}
	switch n.types {
	case typeNull, typeBoolean:
	case typeString:
		if n.maxLength < 0 {
			return path
		}
	case typeInteger, typeNumber:
		if !n.hasMinimum || !n.hasMaximum {
			return path
		}
	case typeArray:
		if n.maxItems < 0 || n.items == nil {
			return path
		}
		return unbounded(n.items, path+"/items")
	case typeObject:
		if !n.closed {
			return path
		}
		for _, p := range n.props {
			if bad := unbounded(p.schema, path+"/properties/"+pointerEscape(p.name)); bad != "" {
				return bad
			}
		}
	default:
		return path
	}
	return ""
}
