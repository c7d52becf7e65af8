package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// The tests below are the verification points of the registry ADR, in its
// order.

func TestADR01_ImmutableRegistryExactVersionNoRuntimeRegister(t *testing.T) {
	def := searchDef()
	v2 := searchDef()
	v2.Version = "2.0.0-rc.1"
	r := mustNew(t, def, v2)

	// Mutating what was passed to New changes nothing.
	def.InputSchema[2] = 'X'
	def.Permissions[0] = "evil.perm"
	tool, ok := r.Lookup("kb.search", "1.0.0")
	if !ok {
		t.Fatal("exact version not found")
	}
	if got := tool.Permissions(); !slices.Equal(got, []string{"kb.audit", "kb.read"}) {
		t.Fatalf("permissions changed after New: %v", got)
	}
	// Nor does mutating what the registry hands out.
	tool.Permissions()[0] = "evil.perm"
	tool.InputSchema()[0] = 'X'
	r.Tools()[0] = nil
	if tool.Permissions()[0] != "kb.audit" || tool.InputSchema()[0] != '{' || r.Tools()[0] == nil {
		t.Fatal("registry state is reachable through its accessors")
	}
	d := tool.Definition()
	d.Permissions[0] = "evil.perm"
	if tool.Permissions()[0] != "kb.audit" {
		t.Fatal("Definition() shares state")
	}

	// Exact versions only: no latest, range, prefix, padding or case folding.
	for _, v := range []string{"1.0", "1", "v1.0.0", "latest", "", " 1.0.0", "1.0.0 ", "^1.0.0", "1.0.x", "2.0.0", "2.0.0-rc.1+b"} {
		if _, ok := r.Lookup("kb.search", v); ok {
			t.Fatalf("version %q resolved", v)
		}
	}
	for _, n := range []string{"KB.search", "kb.search ", "kb", "kb.*", ""} {
		if _, ok := r.Lookup(n, "1.0.0"); ok {
			t.Fatalf("name %q resolved", n)
		}
	}
	if _, ok := r.Lookup("kb.search", "2.0.0-rc.1"); !ok {
		t.Fatal("pre-release version not found")
	}
	if r.Len() != 2 {
		t.Fatalf("Len = %d", r.Len())
	}

	// (name, version) is unique.
	_, err := New(searchDef(), searchDef())
	wantCode(t, err, canonical.CodeInvalidArgument)

	// 0 to 128 definitions.
	empty := mustNew(t)
	if empty.Len() != 0 {
		t.Fatal("empty registry not empty")
	}
	many := make([]Definition, MaxDefinitions+1)
	for i := range many {
		many[i] = searchDef()
		many[i].Version = fmt.Sprintf("1.0.%d", i)
	}
	mustNew(t, many[:MaxDefinitions]...)
	_, err = New(many...)
	wantCode(t, err, canonical.CodeInvalidArgument)

	// Names and versions are checked at construction.
	for _, name := range []string{"", "KB.search", "kb..search", "kb.", ".kb", "1kb", "kb search", "kb/search", "kb.séarch", strings.Repeat("a", 65)} {
		d := searchDef()
		d.Name = name
		_, err := New(d)
		wantCode(t, err, canonical.CodeInvalidArgument)
	}
	for _, version := range []string{"", "v1.0.0", "1.0", "01.0.0", "1.0.0+build", "1.0.0-", "1.0.0-01", "1.0.0-a..b", "1.0.0-a_b", "1.0.0 "} {
		d := searchDef()
		d.Version = version
		_, err := New(d)
		wantCode(t, err, canonical.CodeInvalidArgument)
	}
	for _, version := range []string{"0.0.0", "10.20.30", "1.0.0-alpha", "1.0.0-0.3.7", "1.0.0-x.7.z.92", "1.0.0-alpha-a.b-c"} {
		if !ValidVersion(version) {
			t.Fatalf("%q is canonical SemVer", version)
		}
	}
	// Definition fields are bounded.
	bad := []func(*Definition){
		func(d *Definition) { d.Description = "" },
		func(d *Definition) { d.Description = strings.Repeat("x", MaxDescription+1) },
		func(d *Definition) { d.Description = "\xff" },
		func(d *Definition) { d.Effect = "delete" },
		func(d *Definition) { d.Risk = "" },
		func(d *Definition) { d.Timeout = 0 },
		func(d *Definition) { d.Timeout = 3601 * time.Second },
		func(d *Definition) { d.Timeout = 1500 * time.Millisecond },
		func(d *Definition) { d.Permissions = []string{"a", "a"} },
		func(d *Definition) { d.Permissions = []string{"tool.call:other"} },
		func(d *Definition) { d.Permissions = []string{"Kb.read"} },
		func(d *Definition) {
			d.Permissions = nil
			for i := 0; i <= MaxPermissions; i++ {
				d.Permissions = append(d.Permissions, "p"+strconv.Itoa(i))
			}
		},
		func(d *Definition) { d.InputSchema = nil },
	}
	for i, mutate := range bad {
		d := searchDef()
		mutate(&d)
		_, err := New(d)
		wantCode(t, err, canonical.CodeInvalidArgument)
		_ = i
	}
	edge := searchDef()
	edge.Timeout = time.Hour
	edge.Permissions = nil
	for i := 0; i < MaxPermissions; i++ {
		edge.Permissions = append(edge.Permissions, "p"+strconv.Itoa(i))
	}
	mustNew(t, edge)

	// There is no way to add a definition after New.
	var methods []string
	rt := reflect.TypeOf(r)
	for i := 0; i < rt.NumMethod(); i++ {
		methods = append(methods, rt.Method(i).Name)
	}
	if !slices.Equal(methods, []string{"Len", "Lookup", "Prepare", "PrepareRead", "Tools"}) {
		t.Fatalf("*Registry methods = %v", methods)
	}
}

// TestADR02_ExportedSurfaceIsExactlyTheContract is the Go form of "root and
// subpath exports agree": the package exports exactly this API, each name
// documented, and nothing that registers, scans or executes.
func TestADR02_ExportedSurfaceIsExactlyTheContract(t *testing.T) {
	want := []string{
		"ActionDomain", "CallPermissionPrefix", "Canonicalize", "Decision", "Definition",
		"Effect", "Effect.Valid", "EffectExecute", "EffectExternal", "EffectRead", "EffectWrite",
		"Fence", "MaxAnnotationBytes", "MaxArrayItems", "MaxDefinitions", "MaxDescription",
		"MaxEnum", "MaxInputBytes", "MaxJSONDepth", "MaxNameBytes", "MaxOutputBytes",
		"MaxPermissionLen", "MaxPermissions", "MaxProperties", "MaxSafeInteger", "MaxSchemaDepth",
		"MaxSchemaNodes", "MaxStringLength", "MaxTimeout", "MaxVersionBytes", "MinTimeout", "New",
		"Plan", "Plan.ActionDigest", "Plan.CanonicalInput", "Plan.Fence", "Plan.Input", "Plan.InputDigest",
		"Plan.Permissions", "Plan.Project", "Plan.Status", "Plan.Subject", "Plan.Tool",
		"Policy", "PolicyFunc", "PolicyFunc.Authorize", "Principal", "RefusedKeyword", "Registry", "Registry.Len",
		"Registry.Lookup", "Registry.Prepare", "Registry.PrepareRead", "Registry.Tools", "Request", "Risk", "Risk.Valid",
		"RiskCritical", "RiskHigh", "RiskLow", "RiskMedium", "SchemaError", "SchemaError.Error",
		"SchemaError.Unwrap", "Status", "StatusApprovalRequired", "StatusReady", "SyntaxError",
		"SyntaxError.Error", "SyntaxError.Unwrap", "Tool", "Tool.CanonicalOutput", "Tool.Definition",
		"Tool.Description", "Tool.Effect", "Tool.HasOutputSchema", "Tool.InputSchema", "Tool.Name", "Tool.OutputSchema",
		"Tool.Permissions", "Tool.Risk", "Tool.Timeout", "Tool.Version", "ValidName", "ValidVersion",
		"ValidationError", "ValidationError.Error", "ValidationError.Unwrap", "Verdict",
		"VerdictAllow", "VerdictDeny", "VerdictRequireApproval",
	}
	got, undocumented := exportedNames(t)
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("exported API drifted:\n got %v\nwant %v", got, want)
	}
	// Error and Unwrap implement interfaces; everything else needs a doc comment.
	var missing []string
	for _, n := range undocumented {
		if !strings.HasSuffix(n, ".Error") && !strings.HasSuffix(n, ".Unwrap") {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("exported names without a doc comment: %v", missing)
	}
}

func packageFiles(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*.go")
	ok(t, err)
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(fset, p, nil, goparser.ParseComments)
		ok(t, err)
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatal("no package files")
	}
	return fset, files
}

func exportedNames(t *testing.T) (names, undocumented []string) {
	_, files := packageFiles(t)
	add := func(name string, doc ...*ast.CommentGroup) {
		names = append(names, name)
		for _, d := range doc {
			if d != nil {
				return
			}
		}
		undocumented = append(undocumented, name)
	}
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					add(d.Name.Name, d.Doc)
					continue
				}
				rt := d.Recv.List[0].Type
				if s, ok := rt.(*ast.StarExpr); ok {
					rt = s.X
				}
				add(rt.(*ast.Ident).Name+"."+d.Name.Name, d.Doc)
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							add(s.Name.Name, s.Doc, d.Doc)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								add(n.Name, s.Doc, s.Comment, d.Doc)
							}
						}
					}
				}
			}
		}
	}
	return names, undocumented
}

func TestADR03_SchemaExactSubset(t *testing.T) {
	// Every keyword of the subset, on every type, compiles.
	full := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,"title":"t","description":"d",
	  "properties":{
	    "n":{"type":"null"},
	    "b":{"type":"boolean"},
	    "s":{"type":"string","minLength":1,"maxLength":8.0,"enum":["a","bb"]},
	    "i":{"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991},
	    "x":{"type":"number","minimum":-1.5,"maximum":1.5},
	    "a":{"type":"array","minItems":0,"maxItems":3,"uniqueItems":true,"items":{"type":"string","maxLength":3}},
	    "u":{"type":"array","maxItems":3,"items":{"type":"array","maxItems":2,"items":{"type":"object","additionalProperties":false,"properties":{"k":{"type":"null"}}}}},
	    "o":{"type":"object","additionalProperties":false,"properties":{},"required":[]}
	  },"required":["n","s"]}`
	mustNew(t, withInput(full))

	refusals := []struct{ schema, path, keyword string }{
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"$ref":"#/x"}}}`, "/properties/a", "$ref"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"oneOf":[]}}}`, "/properties/a", "oneOf"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"anyOf":[]}}}`, "/properties/a", "anyOf"},
		{`{"type":"object","additionalProperties":false,"allOf":[]}`, "", "allOf"},
		{`{"type":"object","additionalProperties":false,"not":{}}`, "", "not"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string","maxLength":3,"pattern":"^a"}}}`, "/properties/a", "pattern"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string","maxLength":3,"format":"email"}}}`, "/properties/a", "format"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string","maxLength":3,"default":"x"}}}`, "/properties/a", "default"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string","maxLength":3,"x-extra":1}}}`, "/properties/a", "x-extra"},
		{`{"type":"object","additionalProperties":false,"properties":{"a/b~c":{"type":"string","maxLength":3,"const":"x"}}}`, "/properties/a~1b~0c", "const"},
		{`{"type":"object"}`, "", "additionalProperties"},
		{`{"type":"object","additionalProperties":true}`, "", "additionalProperties"},
		{`{"type":"object","additionalProperties":{"type":"null"}}`, "", "additionalProperties"},
		{`{"type":"object","additionalProperties":false,"properties":{"o":{"type":"object"}}}`, "/properties/o", "additionalProperties"},
		{`{"type":"string","maxLength":3}`, "", "type"},
		{`{"additionalProperties":false,"properties":{}}`, "", "type"},
		{`{"type":["object","null"],"additionalProperties":false}`, "", "type"},
		{`{"type":"object","additionalProperties":false,"properties":{"s":{"type":"string"}}}`, "/properties/s", "maxLength"},
		{`{"type":"object","additionalProperties":false,"properties":{"s":{"type":"string","maxLength":2,"minLength":3}}}`, "/properties/s", "minLength"},
		{`{"type":"object","additionalProperties":false,"properties":{"s":{"type":"string","maxLength":2,"enum":["abc"]}}}`, "/properties/s", "enum"},
		{`{"type":"object","additionalProperties":false,"properties":{"s":{"type":"string","maxLength":2,"enum":[1]}}}`, "/properties/s", "enum"},
		{`{"type":"object","additionalProperties":false,"properties":{"s":{"type":"string","maxLength":2,"enum":["a","a"]}}}`, "/properties/s", "enum"},
		{`{"type":"object","additionalProperties":false,"properties":{"s":{"type":"string","maxLength":2,"enum":[]}}}`, "/properties/s", "enum"},
		{`{"type":"object","additionalProperties":false,"properties":{"s":{"type":"string","maxLength":-1}}}`, "/properties/s", "maxLength"},
		{`{"type":"object","additionalProperties":false,"properties":{"s":{"type":"string","maxLength":1.5}}}`, "/properties/s", "maxLength"},
		{`{"type":"object","additionalProperties":false,"properties":{"i":{"type":"integer","maximum":5}}}`, "/properties/i", "minimum"},
		{`{"type":"object","additionalProperties":false,"properties":{"i":{"type":"integer","minimum":5}}}`, "/properties/i", "maximum"},
		{`{"type":"object","additionalProperties":false,"properties":{"i":{"type":"number","minimum":5,"maximum":4}}}`, "/properties/i", "minimum"},
		{`{"type":"object","additionalProperties":false,"properties":{"i":{"type":"number","minimum":0,"maximum":"5"}}}`, "/properties/i", "maximum"},
		{`{"type":"object","additionalProperties":false,"properties":{"i":{"type":"number","minimum":0,"maximum":5,"exclusiveMaximum":5}}}`, "/properties/i", "exclusiveMaximum"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","items":{"type":"null"}}}}`, "/properties/a", "maxItems"},
		// Every array declares its items, and they are a bounded schema of
		// the subset: an items-free array would admit open objects.
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","maxItems":3}}}`, "/properties/a", "items"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","maxItems":3,"uniqueItems":true}}}`, "/properties/a", "items"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","maxItems":3,"items":{}}}}`, "/properties/a/items", "type"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","maxItems":3,"items":{"type":"object"}}}}`, "/properties/a/items", "additionalProperties"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","maxItems":3,"items":{"type":"string"}}}}`, "/properties/a/items", "maxLength"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","maxItems":3,"items":{"type":"array","maxItems":3}}}}`, "/properties/a/items", "items"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","maxItems":3,"items":[{"type":"null"}]}}}`, "/properties/a/items", "items"},
		{`{"type":"object","additionalProperties":false,"properties":{"o":{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","maxItems":1,"items":{"type":"object","additionalProperties":{}}}}}}}`, "/properties/o/properties/a/items", "additionalProperties"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","maxItems":2,"minItems":3,"items":{"type":"null"}}}}`, "/properties/a", "minItems"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","maxItems":2,"items":true}}}`, "/properties/a/items", "items"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","maxItems":2,"items":{"type":"null"},"prefixItems":[]}}}`, "/properties/a", "prefixItems"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","maxItems":2,"items":{"type":"null"},"uniqueItems":1}}}`, "/properties/a", "uniqueItems"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":false}}`, "/properties/a", "properties"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"null","maxLength":1}}}`, "/properties/a", "maxLength"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"boolean","enum":[true]}}}`, "/properties/a", "enum"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"integer","minimum":0,"maximum":1,"maxItems":1}}}`, "/properties/a", "maxItems"},
		{`{"type":"object","additionalProperties":false,"required":["a"]}`, "", "required"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"null"}},"required":["a","a"]}`, "", "required"},
		{`{"type":"object","additionalProperties":false,"patternProperties":{}}`, "", "patternProperties"},
		{`{"type":"object","additionalProperties":false,"$defs":{}}`, "", "$defs"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"null"}}}`, "/properties/a", "$schema"},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false}`, "", "$schema"},
	}
	for _, c := range refusals {
		_, err := New(withInput(c.schema))
		wantSchemaError(t, err, c.path, c.keyword)
	}
	// Output schemas follow the same subset, at any root type.
	d := searchDef()
	d.OutputSchema = []byte(`{"type":"string","maxLength":4}`)
	mustNew(t, d)
	d.OutputSchema = []byte(`{"type":"string"}`)
	_, err := New(d)
	wantSchemaError(t, err, "", "maxLength")
	var se *SchemaError
	if !errors.As(err, &se) || se.Schema != "output" || se.Tool != "kb.search@1.0.0" {
		t.Fatalf("schema error does not name tool and schema: %+v", se)
	}
	// A schema that is not strict JSON is refused as JSON, not coerced.
	for _, s := range []string{`{"type":"object","type":"object","additionalProperties":false}`, `{"type":"object","additionalProperties":false} x`, `{"type":"object","additionalProperties":false,"properties":{"i":{"type":"integer","minimum":0,"maximum":9007199254740993}}}`} {
		_, err := New(withInput(s))
		var syn *SyntaxError
		if !errors.As(err, &syn) {
			t.Fatalf("%s: want *SyntaxError, got %v", s, err)
		}
		wantCode(t, err, canonical.CodeInvalidArgument)
	}
}

// nest builds an input schema whose deepest node is at the given depth.
func nest(depth int) string {
	s := `{"type":"null"}`
	for i := 1; i < depth; i++ {
		s = `{"type":"object","additionalProperties":false,"properties":{"a":` + s + `}}`
	}
	return s
}

func objectWith(n int, prop func(i int) string) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","additionalProperties":false,"properties":{`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%03d":%s`, i, prop(i))
	}
	b.WriteString(`}}`)
	return b.String()
}

func TestADR04_SchemaDepthNodeAndPropertyLimits(t *testing.T) {
	// Depth: 8 schema nodes on a path is the limit.
	mustNew(t, withInput(nest(MaxSchemaDepth)))
	_, err := New(withInput(nest(MaxSchemaDepth + 1)))
	wantSchemaError(t, err, strings.Repeat("/properties/a", MaxSchemaDepth), "properties")

	// Properties: 64 per object.
	null := func(int) string { return `{"type":"null"}` }
	mustNew(t, withInput(objectWith(MaxProperties, null)))
	_, err = New(withInput(objectWith(MaxProperties+1, null)))
	wantSchemaError(t, err, "", "properties")

	// Nodes: 256 per schema. Root + 51 objects × 5 = 256.
	group := func(int) string { return objectWith(4, null) }
	mustNew(t, withInput(objectWith(51, group)))
	tooMany := strings.TrimSuffix(objectWith(51, group), "}}") + `,"zzz":{"type":"null"}}}`
	_, err = New(withInput(tooMany))
	wantSchemaError(t, err, "/properties/zzz", "properties")

	// Enum: 64 values.
	enum := func(n int) string {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = strconv.Quote("v" + strconv.Itoa(i))
		}
		return `{"type":"object","additionalProperties":false,"properties":{"e":{"type":"string","maxLength":8,"enum":[` + strings.Join(vals, ",") + `]}}}`
	}
	mustNew(t, withInput(enum(MaxEnum)))
	_, err = New(withInput(enum(MaxEnum + 1)))
	wantSchemaError(t, err, "/properties/e", "enum")

	// Arrays: maxItems at most 256, and no array in data exceeds 256 items.
	arr := func(n int) string {
		return `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","maxItems":` + strconv.Itoa(n) +
			`,"items":{"type":"array","maxItems":1,"items":{"type":"integer","minimum":0,"maximum":0}}}}}`
	}
	r := mustNew(t, withInput(arr(MaxArrayItems)))
	_, err = New(withInput(arr(MaxArrayItems + 1)))
	wantSchemaError(t, err, "/properties/a", "maxItems")
	tool, _ := r.Lookup("kb.search", "1.0.0")
	items := func(n int) []byte {
		return []byte(`{"a":[` + strings.TrimSuffix(strings.Repeat("[0],", n), ",") + `]}`)
	}
	if _, err := tool.canonicalInput(items(MaxArrayItems)); err != nil {
		t.Fatal(err)
	}
	_, err = tool.canonicalInput(items(MaxArrayItems + 1))
	wantCode(t, err, canonical.CodeInvalidInput)

	// Data nesting is bounded like schema nesting, by the parser, before any
	// schema is consulted: one level less parses and then fails the schema.
	deep := func(n int) []byte {
		return []byte(`{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`)
	}
	_, err = tool.canonicalInput(deep(MaxSchemaDepth - 1))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("data at the depth bound: want a schema violation, got %v", err)
	}
	_, err = tool.canonicalInput(deep(MaxSchemaDepth))
	var syn *SyntaxError
	if !errors.As(err, &syn) || !strings.Contains(syn.Reason, "nesting") {
		t.Fatalf("data past the depth bound: want a nesting *SyntaxError, got %v", err)
	}
	wantCode(t, err, canonical.CodeInvalidInput)
}

func TestADR05_CanonicalInputOutputUnknownFieldsUniqueArrays(t *testing.T) {
	r := mustNew(t, searchDef())
	tool, _ := r.Lookup("kb.search", "1.0.0")

	got, err := tool.canonicalInput([]byte(" {\n \"tags\" : [\"b\",\"a\"], \"query\":\"caf\\u00e9\",\"limit\":1.0e1 }"))
	ok(t, err)
	if want := `{"limit":10,"query":"café","tags":["b","a"]}`; string(got) != want {
		t.Fatalf("canonical input %s, want %s", got, want)
	}

	invalid := []struct{ input, path, keyword string }{
		{`{"query":"x","extra":1}`, "/extra", "additionalProperties"},
		{`{"query":"x","tags":["a","a"]}`, "/tags/1", "uniqueItems"},
		{`{"query":"x","tags":["a","\u0061"]}`, "/tags/1", "uniqueItems"},
		{`{}`, "", "required"},
		{`{"query":""}`, "/query", "minLength"},
		{`{"query":"x","limit":0}`, "/limit", "minimum"},
		{`{"query":"x","limit":51}`, "/limit", "maximum"},
		{`{"query":"x","limit":1.5}`, "/limit", "type"},
		{`{"query":"x","limit":"1"}`, "/limit", "type"},
		{`{"query":1}`, "/query", "type"},
		{`{"query":"x","mode":"fuzzy"}`, "/mode", "enum"},
		{`{"query":"x","tags":["123456789012345678901234567890123"]}`, "/tags/0", "maxLength"},
		{`[]`, "", "type"},
	}
	for _, c := range invalid {
		_, err := tool.canonicalInput([]byte(c.input))
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Path != c.path || ve.Keyword != c.keyword {
			t.Fatalf("%s: want %q at %q, got %v", c.input, c.keyword, c.path, err)
		}
		wantCode(t, err, canonical.CodeInvalidInput)
	}
	// Strings are counted in code points: 256 emoji fit a maxLength of 256.
	_, err = tool.canonicalInput([]byte(`{"query":"` + strings.Repeat("😂", 256) + `"}`))
	ok(t, err)
	_, err = tool.canonicalInput([]byte(`{"query":"` + strings.Repeat("😂", 257) + `"}`))
	wantCode(t, err, canonical.CodeInvalidInput)
	// Strict JSON: a duplicate key is an error, never last-wins.
	_, err = tool.canonicalInput([]byte(`{"query":"a","query":"b"}`))
	var syn *SyntaxError
	if !errors.As(err, &syn) {
		t.Fatalf("duplicate key: %v", err)
	}
	wantCode(t, err, canonical.CodeInvalidInput)

	// Outputs: canonical, validated, failures are the tool's.
	out, err := tool.CanonicalOutput([]byte(`{"hits":[{"score":0.50,"id":"d1"}],"truncated":false}`))
	ok(t, err)
	if want := `{"hits":[{"id":"d1","score":0.5}],"truncated":false}`; string(out) != want {
		t.Fatalf("canonical output %s, want %s", out, want)
	}
	_, err = tool.CanonicalOutput([]byte(`{"hits":[{"id":"d1","score":0.5,"debug":"x"}]}`))
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Path != "/hits/0/debug" {
		t.Fatalf("output unknown field: %v", err)
	}
	wantCode(t, err, canonical.CodeExecutionFailed)
}

func TestADR06_NoOutputSchemaOnlyNull(t *testing.T) {
	d := searchDef()
	d.OutputSchema = nil
	tool, _ := mustNew(t, d).Lookup("kb.search", "1.0.0")
	if tool.OutputSchema() != nil || tool.HasOutputSchema() {
		t.Fatal("absent output schema must stay absent")
	}
	if typed, _ := mustNew(t, searchDef()).Lookup("kb.search", "1.0.0"); !typed.HasOutputSchema() {
		t.Fatal("declared output schema not reported")
	}
	out, err := tool.CanonicalOutput([]byte(" null\n"))
	ok(t, err)
	if string(out) != "null" {
		t.Fatalf("got %s", out)
	}
	for _, s := range []string{`{}`, `0`, `""`, `false`, `[]`, `"null"`, ``, `null null`} {
		_, err := tool.CanonicalOutput([]byte(s))
		wantCode(t, err, canonical.CodeExecutionFailed)
	}
}

func TestADR07_SameFenceYieldsDigestBoundReadyPlan(t *testing.T) {
	r := mustNew(t, searchDef())
	spy := &spyPolicy{}
	plan, err := r.prepare(context.Background(), spy, searchRequest(`{ "query" : "redis ttl", "limit": 5 }`), testNow, false)
	ok(t, err)
	if plan.Status() != StatusReady || plan.Fence() != fenceA {
		t.Fatalf("status %s fence %+v", plan.Status(), plan.Fence())
	}
	if want := []string{"tool.call:kb.search", "kb.audit", "kb.read"}; !slices.Equal(spy.calls(), want) || !slices.Equal(plan.Permissions(), want) {
		t.Fatalf("asked %v, plan %v", spy.calls(), plan.Permissions())
	}
	input := `{"limit":5,"query":"redis ttl"}`
	if string(plan.Input()) != input {
		t.Fatalf("input %s", plan.Input())
	}
	inputDigest := sha256.Sum256([]byte(input))
	if plan.InputDigest() != inputDigest {
		t.Fatal("input digest is not SHA-256 of the canonical input")
	}
	preimage := `{"domain":"toolcanon/tool-invocation@v1","effect":"read","input_sha256":"` + hex.EncodeToString(inputDigest[:]) +
		`","permissions":["tool.call:kb.search","kb.audit","kb.read"],"project":"proj-1","risk":"low","subject":"user:alice","timeout_seconds":30,"tool":{"name":"kb.search","version":"1.0.0"}}`
	if plan.ActionDigest() != sha256.Sum256([]byte(preimage)) {
		t.Fatal("action digest does not match the documented preimage")
	}
	if plan.Tool().Name() != "kb.search" || plan.Project() != "proj-1" || plan.Subject() != "user:alice" {
		t.Fatal("plan does not expose its identity")
	}
	// Same call, other spelling: same digests. Any bound field changes them.
	same, err := r.prepare(context.Background(), &spyPolicy{}, searchRequest(`{"limit":5.0,"query":"redis\u0020ttl"}`), testNow, false)
	ok(t, err)
	if same.ActionDigest() != plan.ActionDigest() || same.InputDigest() != plan.InputDigest() {
		t.Fatal("equivalent inputs gave different digests")
	}
	other := searchRequest(`{"limit":5,"query":"redis ttl"}`)
	other.Principal.Subject = "user:bob"
	bob, err := r.prepare(context.Background(), &spyPolicy{}, other, testNow, false)
	ok(t, err)
	if bob.ActionDigest() == plan.ActionDigest() || bob.InputDigest() != plan.InputDigest() {
		t.Fatal("subject must change the action digest only")
	}
	other = searchRequest(`{"limit":6,"query":"redis ttl"}`)
	six, err := r.prepare(context.Background(), &spyPolicy{}, other, testNow, false)
	ok(t, err)
	if six.ActionDigest() == plan.ActionDigest() {
		t.Fatal("input must change the action digest")
	}
	// Plans hand out copies.
	plan.Input()[0] = 'X'
	if plan.Input()[0] != '{' {
		t.Fatal("plan input is mutable")
	}
}

// projectPolicy is a small project policy engine as hosts run it: role
// bindings per subject under one project version and role-binding version;
// agents may hold roles, but every tool.call by an agent needs a human's
// approval.
type projectPolicy struct {
	fence    Fence
	bindings map[string][]string // subject -> roles
	roles    map[string][]string // role -> permissions ("*" suffix = prefix match)
}

func (p *projectPolicy) Authorize(_ context.Context, project string, pr Principal, perm string) (Decision, error) {
	if project != "proj-1" {
		return Decision{Verdict: VerdictDeny}, nil
	}
	granted := false
	for _, role := range p.bindings[pr.Subject] {
		for _, g := range p.roles[role] {
			if g == perm || strings.HasSuffix(g, "*") && strings.HasPrefix(perm, strings.TrimSuffix(g, "*")) {
				granted = true
			}
		}
	}
	if !granted {
		return Decision{Verdict: VerdictDeny}, nil
	}
	if strings.HasPrefix(pr.Subject, "agent:") && strings.HasPrefix(perm, CallPermissionPrefix) {
		return Decision{Verdict: VerdictRequireApproval, Fence: p.fence}, nil
	}
	return Decision{Verdict: VerdictAllow, Fence: p.fence}, nil
}

func TestADR08_AgentToolCallRequiresApprovalUnderProjectPolicy(t *testing.T) {
	write := searchDef()
	write.Name, write.Effect, write.Risk, write.Permissions = "kb.delete", EffectWrite, RiskHigh, []string{"kb.write"}
	r := mustNew(t, searchDef(), write)
	pol := &projectPolicy{
		fence:    fenceA,
		bindings: map[string][]string{"user:alice": {"editor"}, "agent:planner": {"editor"}, "agent:intern": {"reader"}},
		roles: map[string][]string{
			"editor": {"tool.call:*", "kb.read", "kb.audit", "kb.write"},
			"reader": {"tool.call:kb.search", "kb.read"},
		},
	}
	call := func(subject, tool string) (*Plan, error) {
		req := searchRequest(`{"query":"q"}`)
		req.Principal.Subject, req.Tool = subject, tool
		return r.prepare(context.Background(), pol, req, testNow, false)
	}
	human, err := call("user:alice", "kb.search")
	ok(t, err)
	if human.Status() != StatusReady {
		t.Fatalf("human call: %s", human.Status())
	}
	for _, tool := range []string{"kb.search", "kb.delete"} {
		agent, err := call("agent:planner", tool)
		ok(t, err)
		if agent.Status() != StatusApprovalRequired {
			t.Fatalf("agent call of %s: %s, want approval_required", tool, agent.Status())
		}
		// The plan is digest-bound, so an approval binds this exact action.
		if agent.ActionDigest() == ([32]byte{}) || string(agent.Input()) != `{"query":"q"}` || agent.Fence() != fenceA {
			t.Fatal("approval plan is not digest-bound")
		}
	}
	// A role without the permission is denied, not escalated to approval.
	_, err = call("agent:intern", "kb.search")
	wantCode(t, err, canonical.CodeUnauthorized)
}

func TestADR09_DenyShortCircuitsBeforeInputIsParsed(t *testing.T) {
	r := mustNew(t, searchDef())
	malformed := []string{
		`{"query":`,                            // truncated
		`{"query":"a","query":"b"}`,            // duplicate key
		"\xff\xfe",                             // not UTF-8
		`{"query":"x"} trailing`,               // trailing data
		strings.Repeat("[", 100000),            // deep
		strings.Repeat(" ", 6*MaxInputBytes+1), // over the raw budget
	}
	for _, deniedPerm := range []string{"tool.call:kb.search", "kb.audit", "kb.read"} {
		for _, input := range malformed {
			spy := &spyPolicy{answers: map[string]Decision{deniedPerm: {Verdict: VerdictDeny}}}
			_, err := r.prepare(context.Background(), spy, searchRequest(input), testNow, false)
			wantCode(t, err, canonical.CodeUnauthorized)
			var syn *SyntaxError
			var ve *ValidationError
			if errors.As(err, &syn) || errors.As(err, &ve) {
				t.Fatalf("deny of %s reported an input error: %v", deniedPerm, err)
			}
			// Nothing after the first deny is consulted.
			calls := spy.calls()
			if calls[len(calls)-1] != deniedPerm {
				t.Fatalf("policy consulted after deny: %v", calls)
			}
		}
	}
	// The same malformed input is an input error once the policy allows.
	_, err := r.prepare(context.Background(), &spyPolicy{}, searchRequest(`{"query":`), testNow, false)
	wantCode(t, err, canonical.CodeInvalidInput)
	// A deny wins over an approval and over a fence mismatch seen earlier.
	spy := &spyPolicy{answers: map[string]Decision{
		"tool.call:kb.search": {Verdict: VerdictRequireApproval, Fence: fenceB},
		"kb.read":             {Verdict: VerdictDeny},
	}}
	_, err = r.prepare(context.Background(), spy, searchRequest(`not json`), testNow, false)
	wantCode(t, err, canonical.CodeUnauthorized)
}

func TestADR10_PolicyUnavailableMalformedDecisionMixedFenceFailClosed(t *testing.T) {
	r := mustNew(t, searchDef())
	storeDown := errors.New("policy store: connection refused")
	cases := map[string]*spyPolicy{
		"policy error":            {errs: map[string]error{"kb.read": storeDown}},
		"policy panic":            {panics: map[string]bool{"kb.audit": true}},
		"unknown verdict":         {answers: map[string]Decision{"kb.read": {Verdict: "ALLOW", Fence: fenceA}}},
		"empty verdict":           {answers: map[string]Decision{"kb.read": {Fence: fenceA}}},
		"empty fence":             {answers: map[string]Decision{"kb.read": {Verdict: VerdictAllow}}},
		"half fence":              {answers: map[string]Decision{"kb.read": {Verdict: VerdictAllow, Fence: Fence{ProjectVersion: "p-12"}}}},
		"malformed fence":         {answers: map[string]Decision{"kb.read": {Verdict: VerdictAllow, Fence: Fence{"p 12", "rb-40"}}}},
		"mixed fence":             {answers: map[string]Decision{"kb.read": {Verdict: VerdictAllow, Fence: fenceB}}},
		"mixed fence on approval": {answers: map[string]Decision{"tool.call:kb.search": {Verdict: VerdictRequireApproval, Fence: fenceB}}},
		"all empty fences": {answers: map[string]Decision{
			"tool.call:kb.search": {Verdict: VerdictAllow}, "kb.read": {Verdict: VerdictAllow}, "kb.audit": {Verdict: VerdictAllow},
		}},
	}
	for name, spy := range cases {
		plan, err := r.prepare(context.Background(), spy, searchRequest(`{"query":"q"}`), testNow, false)
		if plan != nil {
			t.Fatalf("%s: got a plan", name)
		}
		wantCode(t, err, canonical.CodePolicyUnavailable)
	}
	_, err := r.prepare(context.Background(), &spyPolicy{errs: map[string]error{"kb.read": storeDown}}, searchRequest(`{"query":"q"}`), testNow, false)
	if !errors.Is(err, storeDown) {
		t.Fatal("policy error is not kept as the cause")
	}
	_, err = r.prepare(context.Background(), nil, searchRequest(`{"query":"q"}`), testNow, false)
	wantCode(t, err, canonical.CodePolicyUnavailable)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	spy := &spyPolicy{}
	_, err = r.prepare(ctx, spy, searchRequest(`{"query":"q"}`), testNow, false)
	wantCode(t, err, canonical.CodeDeadlineExceeded)
	if len(spy.calls()) != 0 {
		t.Fatal("policy consulted with a dead context")
	}
	// PolicyFunc adapts a function.
	var fn Policy = PolicyFunc(func(context.Context, string, Principal, string) (Decision, error) {
		return Decision{Verdict: VerdictAllow, Fence: fenceA}, nil
	})
	_, err = r.prepare(context.Background(), fn, searchRequest(`{"query":"q"}`), testNow, false)
	ok(t, err)
}

func TestADR11_ExpiredPrincipalAndExtendedRequestRefused(t *testing.T) {
	r := mustNew(t, searchDef())
	principals := map[string]Principal{
		"expired":        {Subject: "user:alice", ExpiresAt: testNow.Add(-time.Second)},
		"expires now":    {Subject: "user:alice", ExpiresAt: testNow},
		"no expiry":      {Subject: "user:alice"},
		"empty subject":  {ExpiresAt: testNow.Add(time.Hour)},
		"space subject":  {Subject: "user alice", ExpiresAt: testNow.Add(time.Hour)},
		"control":        {Subject: "user:\nalice", ExpiresAt: testNow.Add(time.Hour)},
		"oversized":      {Subject: strings.Repeat("u", 257), ExpiresAt: testNow.Add(time.Hour)},
		"non-ASCII name": {Subject: "user:élise", ExpiresAt: testNow.Add(time.Hour)},
	}
	for name, p := range principals {
		spy := &spyPolicy{}
		req := searchRequest(`{"query":"q"}`)
		req.Principal = p
		_, err := r.prepare(context.Background(), spy, req, testNow, false)
		wantCode(t, err, canonical.CodeUnauthorized)
		if len(spy.calls()) != 0 {
			t.Fatalf("%s: policy consulted for an invalid principal", name)
		}
	}
	// Prepare itself uses the wall clock.
	expired := searchRequest(`{"query":"q"}`)
	expired.Principal.ExpiresAt = time.Now().Add(-time.Minute)
	_, err := r.Prepare(context.Background(), &spyPolicy{}, expired)
	wantCode(t, err, canonical.CodeUnauthorized)

	// The envelope is exact: it has these fields and no room for more, and
	// every field is taken byte for byte.
	fields := func(v any) []string {
		var names []string
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			names = append(names, rt.Field(i).Name)
		}
		return names
	}
	if got := fields(Request{}); !slices.Equal(got, []string{"Project", "Principal", "Tool", "Version", "Input"}) {
		t.Fatalf("Request fields %v", got)
	}
	if got := fields(Principal{}); !slices.Equal(got, []string{"Subject", "ExpiresAt"}) {
		t.Fatalf("Principal fields %v", got)
	}
	extended := map[string]func(*Request){
		"tool with version":   func(q *Request) { q.Tool = "kb.search@1.0.0" },
		"tool with space":     func(q *Request) { q.Tool = "kb.search " },
		"tool upper case":     func(q *Request) { q.Tool = "KB.search" },
		"version range":       func(q *Request) { q.Version = "^1.0.0" },
		"version prefix":      func(q *Request) { q.Version = "v1.0.0" },
		"version with build":  func(q *Request) { q.Version = "1.0.0+sha.1" },
		"version latest":      func(q *Request) { q.Version = "latest" },
		"version empty":       func(q *Request) { q.Version = "" },
		"project with suffix": func(q *Request) { q.Project = "proj-1/other" },
		"project with brace":  func(q *Request) { q.Project = "{proj-1}" },
		"project empty":       func(q *Request) { q.Project = "" },
		"project too long":    func(q *Request) { q.Project = strings.Repeat("p", 129) },
	}
	for name, mutate := range extended {
		spy := &spyPolicy{}
		req := searchRequest(`{"query":"q"}`)
		mutate(&req)
		_, err := r.prepare(context.Background(), spy, req, testNow, false)
		if code := canonical.CodeOf(err); code != canonical.CodeUnknownTool && code != canonical.CodeInvalidArgument {
			t.Fatalf("%s: got %v", name, err)
		}
		if len(spy.calls()) != 0 {
			t.Fatalf("%s: policy consulted for a malformed envelope", name)
		}
	}
	// An input with fields beyond the schema is an extended request too.
	_, err = r.prepare(context.Background(), &spyPolicy{}, searchRequest(`{"query":"q","approved":true}`), testNow, false)
	wantCode(t, err, canonical.CodeInvalidInput)
}

func TestADR12_CanonicalEnvelopeByteBudget(t *testing.T) {
	big := withInput(`{"type":"object","additionalProperties":false,"properties":{"q":{"type":"string","maxLength":262144}},"required":["q"]}`)
	big.OutputSchema = []byte(`{"type":"string","maxLength":262144}`)
	r := mustNew(t, big)
	tool, _ := r.Lookup("kb.search", "1.0.0")
	input := func(n int, pad string) string { return `{` + pad + `"q":"` + strings.Repeat("x", n) + `"}` }
	overhead := len(input(0, ""))

	plan, err := r.prepare(context.Background(), &spyPolicy{}, searchRequest(input(MaxInputBytes-overhead, "")), testNow, false)
	ok(t, err)
	if len(plan.Input()) != MaxInputBytes {
		t.Fatalf("canonical input %d bytes", len(plan.Input()))
	}
	_, err = r.prepare(context.Background(), &spyPolicy{}, searchRequest(input(MaxInputBytes-overhead+1, "")), testNow, false)
	wantCode(t, err, canonical.CodeInvalidInput)
	// The budget is on canonical bytes: insignificant whitespace does not count…
	_, err = r.prepare(context.Background(), &spyPolicy{}, searchRequest(input(MaxInputBytes-overhead, strings.Repeat(" ", 1000))), testNow, false)
	ok(t, err)
	// …and escapes count as what they decode to: "\u0078" is one byte.
	_, err = r.prepare(context.Background(), &spyPolicy{}, searchRequest(`{"q":"`+strings.Repeat(`\u0078`, MaxInputBytes-overhead)+`"}`), testNow, false)
	ok(t, err)
	// Canonical forms can be longer than the raw text: 1e-6 becomes 0.000001.
	num := withInput(`{"type":"object","additionalProperties":false,"properties":{"n":{"type":"array","maxItems":256,"items":{"type":"number","minimum":0,"maximum":1}}}}`)
	nr := mustNew(t, num)
	ntool, _ := nr.Lookup("kb.search", "1.0.0")
	got, err := ntool.canonicalInput([]byte(`{"n":[1e-6]}`))
	ok(t, err)
	if string(got) != `{"n":[0.000001]}` {
		t.Fatalf("got %s", got)
	}
	// Raw text is bounded too, so a huge padded input is not even parsed.
	_, err = r.prepare(context.Background(), &spyPolicy{}, searchRequest(input(1, strings.Repeat(" ", 6*MaxInputBytes))), testNow, false)
	wantCode(t, err, canonical.CodeInvalidInput)

	// Output: 256 KiB canonical.
	out := func(n int) []byte { return []byte(`"` + strings.Repeat("y", n) + `"`) }
	o, err := tool.CanonicalOutput(out(MaxOutputBytes - 2))
	ok(t, err)
	if len(o) != MaxOutputBytes {
		t.Fatalf("canonical output %d bytes", len(o))
	}
	_, err = tool.CanonicalOutput(out(MaxOutputBytes - 1))
	wantCode(t, err, canonical.CodeResultTooLarge)
	_, err = tool.CanonicalOutput([]byte(`"y"` + strings.Repeat(" ", 6*MaxOutputBytes)))
	wantCode(t, err, canonical.CodeResultTooLarge)
}

// TestADR13_NoFilesystemProcessNetworkTimerOrExecuteAuthority checks the
// package source: it imports nothing that reaches the file system, processes,
// the network or unsafe memory, starts no goroutine or timer, and its types
// hold no function a caller could execute.
func TestADR13_NoFilesystemProcessNetworkTimerOrExecuteAuthority(t *testing.T) {
	allowed := map[string]bool{
		"cmp": true, "context": true, "crypto/sha256": true, "encoding/hex": true, "fmt": true,
		"math": true, "slices": true, "strconv": true, "strings": true, "time": true,
		"unicode/utf16": true, "unicode/utf8": true, "errors": true,
		"github.com/toolcanon/toolcanon/canonical": true,
		// Pure functions over byte slices, standard library only.
		"github.com/toolcanon/toolcanon/internal/strictjson": true,
	}
	timers := map[string]bool{"After": true, "AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true, "Sleep": true}
	fset, files := packageFiles(t)
	for _, f := range files {
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !allowed[path] {
				t.Errorf("%s imports %q", fset.Position(imp.Pos()), path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s starts a goroutine", fset.Position(x.Pos()))
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && id.Name == "time" && timers[x.Sel.Name] {
					t.Errorf("%s uses time.%s", fset.Position(x.Pos()), x.Sel.Name)
				}
			}
			return true
		})
	}
	for _, v := range []any{Definition{}, Tool{}, Plan{}, Registry{}, Request{}, Principal{}, Decision{}, Fence{}} {
		if path := funcField(reflect.TypeOf(v), map[reflect.Type]bool{}); path != "" {
			t.Errorf("%T holds a function at %s", v, path)
		}
	}
}

// funcField finds a func, chan or interface anywhere inside t.
func funcField(t reflect.Type, seen map[reflect.Type]bool) string {
	if seen[t] {
		return ""
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
		return t.String()
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return funcField(t.Elem(), seen)
	case reflect.Map:
		if p := funcField(t.Key(), seen); p != "" {
			return p
		}
		return funcField(t.Elem(), seen)
	case reflect.Struct:
		if t == reflect.TypeOf(time.Time{}) {
			return ""
		}
		for i := 0; i < t.NumField(); i++ {
			if p := funcField(t.Field(i).Type, seen); p != "" {
				return t.Field(i).Name + "." + p
			}
		}
	}
	return ""
}
