package canonical_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

// storeInternals are names that only store implementations use; they live
// in canonical/internal/storeimpl, not in canonical's exported API.
var storeInternals = map[string]bool{"BeginArgs": true, "FinishCompletion": true, "ValidateBegin": true}

// TestExportsNoStoreInternals fails when canonical exports what users must
// not call: BeginArgs, FinishCompletion, or a Validate method on
// BeginRequest (stores check a request with storeimpl.ValidateBegin).
func TestExportsNoStoreInternals(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	parsed := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed++
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					if storeInternals[d.Name.Name] {
						t.Errorf("%s: canonical exports func %s", name, d.Name.Name)
					}
					continue
				}
				recv := d.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if id, ok := recv.(*ast.Ident); ok && id.Name == "BeginRequest" && d.Name.Name == "Validate" {
					t.Errorf("%s: canonical exports method BeginRequest.%s", name, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					var names []*ast.Ident
					switch s := s.(type) {
					case *ast.TypeSpec:
						names = []*ast.Ident{s.Name}
					case *ast.ValueSpec:
						names = s.Names
					}
					for _, id := range names {
						if storeInternals[id.Name] {
							t.Errorf("%s: canonical exports %s", name, id.Name)
						}
					}
				}
			}
		}
	}
	if parsed == 0 {
		t.Fatal("no source files of package canonical found")
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[canonical.BeginRequest](), reflect.TypeFor[*canonical.BeginRequest]()} {
		if _, ok := typ.MethodByName("Validate"); ok {
			t.Errorf("%v has a Validate method", typ)
		}
	}
}
