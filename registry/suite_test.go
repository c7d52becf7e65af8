package registry

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

type suiteGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
	// Refused is the project's own addition to the format (testdata/subset):
	// where the strict subset must refuse the schema, and for which keyword.
	Refused *struct {
		Path    string `json:"path"`
		Keyword string `json:"keyword"`
	} `json:"refused"`
}

// suiteWrap places a suite schema (a schema for any value) under property
// "v" of a closed root object, since an input root must be an object. The
// suite's root "$schema" moves to the wrapper's root, the one place the
// subset accepts it.
func suiteWrap(t *testing.T, schema json.RawMessage) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(schema, &m); err == nil {
		if s, ok := m["$schema"]; ok {
			delete(m, "$schema")
			inner, err := json.Marshal(m)
			ok2(t, err)
			return []byte(`{"$schema":` + string(s) + `,"type":"object","additionalProperties":false,"properties":{"v":` + string(inner) + `},"required":["v"]}`)
		}
	}
	return []byte(`{"type":"object","additionalProperties":false,"properties":{"v":` + string(schema) + `},"required":["v"]}`)
}

func ok2(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestJSONSchemaTestSuite runs every group of the shared draft 2020-12 files.
//
// Strict subset (what New accepts): a group whose wrapped schema compiles
// must validate every test exactly as the suite says; every other group must
// be refused at construction with a *SchemaError. The suite's keyword tests
// are deliberately type-agnostic, so few groups fit; the validation
// semantics of every keyword are then exercised by compiling each group
// without the "type and bounds are required" rule (all refusals of
// keywords, boolean schemas, type lists and open additionalProperties still
// apply) and checking those groups too.
func TestJSONSchemaTestSuite(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(suiteTestdata(t, "json-schema-test-suite", "draft2020-12"), "*.json"))
	ok(t, err)
	// The vendored copy holds 13 keyword files with 74 groups (see its README).
	if len(files) != 13 {
		t.Fatalf("want the 13 vendored suite files, found %d", len(files))
	}
	var total, accepted, refused, acceptedTests int
	var semGroups, semTests, semRefused int
	for _, file := range files {
		raw, err := os.ReadFile(file)
		ok(t, err)
		var groups []suiteGroup
		ok(t, json.Unmarshal(raw, &groups))
		for _, g := range groups {
			total++
			name := filepath.Base(file) + ": " + g.Description
			wrapped := suiteWrap(t, g.Schema)

			strictNode, _, err := compileSchema(wrapped, &compiler{strict: true, tool: "suite@1.0.0", which: "input"}, true)
			if err != nil {
				var se *SchemaError
				if !errors.As(err, &se) || !errors.Is(err, canonical.ErrInvalidArgument) {
					t.Fatalf("%s: refusal is not a *SchemaError with INVALID_ARGUMENT: %v", name, err)
				}
				if se.Keyword == "" && se.Path != "" {
					t.Fatalf("%s: refusal names no keyword: %v", name, err)
				}
				refused++
			} else {
				accepted++
				acceptedTests += runSuiteTests(t, name, strictNode, g)
			}

			lenientNode, _, err := compileSchema(wrapped, &compiler{strict: false, tool: "suite@1.0.0", which: "input"}, true)
			if err != nil {
				semRefused++
				continue
			}
			semGroups++
			semTests += runSuiteTests(t, name+" (semantics)", lenientNode, g)
		}
	}
	t.Logf("strict subset: %d groups total, %d accepted (%d tests validated as the suite says), %d refused at construction", total, accepted, acceptedTests, refused)
	t.Logf("keyword semantics (type/bounds rule off): %d groups compiled, %d tests validated as the suite says, %d groups refused", semGroups, semTests, semRefused)
	if total != 74 {
		t.Fatalf("want the 74 groups of the vendored suite files, read %d", total)
	}
	if accepted == 0 || refused == 0 || accepted+refused != total {
		t.Fatalf("counts do not add up: accepted %d + refused %d != total %d (both must be non-zero)", accepted, refused, total)
	}
	if semGroups == 0 || semGroups+semRefused != total || semGroups < accepted {
		t.Fatalf("semantic counts do not add up: %d + %d != %d", semGroups, semRefused, total)
	}

	// The upstream array groups are type-agnostic and unbounded, so none
	// reaches the subset's array rules; the project's own groups, in the
	// suite's format, do: every array declares maxItems and items, and items
	// is itself a bounded schema of the subset.
	raw, err := os.ReadFile(filepath.Join(suiteTestdata(t, "subset"), "arrays.json"))
	ok(t, err)
	var groups []suiteGroup
	ok(t, json.Unmarshal(raw, &groups))
	var subAccepted, subTests, subRefused int
	for _, g := range groups {
		name := "subset arrays: " + g.Description
		n, _, err := compileSchema(suiteWrap(t, g.Schema), &compiler{strict: true, tool: "suite@1.0.0", which: "input"}, true)
		if g.Refused != nil {
			wantSchemaError(t, err, g.Refused.Path, g.Refused.Keyword)
			subRefused++
			continue
		}
		if err != nil {
			t.Fatalf("%s: refused: %v", name, err)
		}
		subAccepted++
		subTests += runSuiteTests(t, name, n, g)
	}
	t.Logf("subset array groups: %d groups, %d accepted (%d tests validated as stated), %d refused at the stated keyword", len(groups), subAccepted, subTests, subRefused)
	if subAccepted == 0 || subRefused == 0 || subAccepted+subRefused != len(groups) {
		t.Fatalf("subset array counts do not add up: %d + %d != %d (both must be non-zero)", subAccepted, subRefused, len(groups))
	}
}

func runSuiteTests(t *testing.T, name string, n *node, g suiteGroup) int {
	t.Helper()
	for _, tc := range g.Tests {
		datum := []byte(`{"v":` + string(tc.Data) + `}`)
		_, err := canonicalValue(datum, n, canonical.CodeInvalidInput, maxRawInputBytes, MaxInputBytes, "input")
		if got := err == nil; got != tc.Valid {
			t.Errorf("%s / %s: valid=%v, suite says %v (err: %v)", name, tc.Description, got, tc.Valid, err)
		}
		if err != nil && !errors.Is(err, canonical.ErrInvalidInput) {
			t.Errorf("%s / %s: error does not carry INVALID_INPUT: %v", name, tc.Description, err)
		}
	}
	return len(g.Tests)
}
