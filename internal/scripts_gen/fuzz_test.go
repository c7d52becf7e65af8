package main

import (
	"fmt"
	"strings"
	"testing"
)

// renderShapes writes shapes back as one RETURNS line.
func renderShapes(shapes []Shape) string {
	var parts []string
	for _, sh := range shapes {
		var outs []string
		for _, o := range sh.Outcomes {
			outs = append(outs, fmt.Sprintf("%q", o))
		}
		elems := []string{strings.Join(outs, "|")}
		for _, f := range sh.Fields {
			elems = append(elems, f.Name+" "+f.Type)
		}
		parts = append(parts, "{"+strings.Join(elems, ", ")+"}")
	}
	return strings.Join(parts, " | ")
}

// FuzzParseReturns feeds arbitrary RETURNS blocks to the header parser. It
// must never panic; what it accepts must be a declaration a decoder can
// follow (outcomes declared once, one type per element name) and must read
// back the same when written out again.
func FuzzParseReturns(f *testing.F) {
	for _, seed := range []string{
		`{"OK"}`,
		`{"OK"|"EXISTS", status string, created_ms int, raw bytes}  doc`,
		"\n--   {\"NOT_FOUND\"} | {\"INVALID_TRANSITION\", status string}\n--   refusals write nothing",
		`{"OK", a int} | {"NO", a string}`,
		`{"OK", {a int}}`,
		`{"OK"} | then`,
		`{"A"|"B"|"C", x_1 bytes} | {"D"}`,
		`{`,
		`}{"OK"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, returns string) {
		if len(returns) > 4096 {
			return
		}
		src := strings.Replace(header, `-- RETURNS {"OK"}`, "-- RETURNS "+strings.ReplaceAll(returns, "\n", "\n-- "), 1) + "\nreturn 1\n"
		s, err := Parse("demo.lua", src)
		if err != nil {
			return
		}
		if len(s.Shapes) == 0 {
			t.Fatalf("accepted %q without a shape", returns)
		}
		if err := checkShapes(s.Shapes); err != nil {
			t.Fatalf("accepted %q: %v", returns, err)
		}
		again := &Script{}
		if err := again.parseShapes(renderShapes(s.Shapes)); err != nil {
			t.Fatalf("shapes of %q do not read back: %v", returns, err)
		}
		if fmt.Sprint(again.Shapes) != fmt.Sprint(s.Shapes) {
			t.Fatalf("%q read back as %v, was %v", returns, again.Shapes, s.Shapes)
		}
	})
}
