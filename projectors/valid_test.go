package projectors_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/projectors"
)

func TestValid(t *testing.T) {
	good := []string{`{}`, `[]`, `"x"`, `0`, `-0.5e+10`, ` {"a":[1,true,false,null,"\u00e9\n\"",{"b":{}}]} `,
		`"` + strings.Repeat("abcdefgh", 9) + `é"`, `[1e5,2E-3,-1]`}
	bad := []string{``, `{`, `{"a"}`, `{"a":}`, `[1,]`, `01`, `1.`, `-`, `"\x"`, `"\u12g4"`, "\"\x01\"", "\"\xff\"",
		`{"a":1,}`, `tru`, `[1] 2`, `"abc`, `{"a" 1}`, `+1`, `.5`, strings.Repeat("[", 600) + strings.Repeat("]", 600),
		// Strict: a lone surrogate or a repeated name is refused, as
		// everywhere else in the module.
		`"\ud800"`, `["x\udc00"]`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`}
	for _, s := range good {
		if !projectors.Valid([]byte(s)) {
			t.Errorf("rejected %q", s)
		}
	}
	for _, s := range bad {
		if projectors.Valid([]byte(s)) {
			t.Errorf("accepted %q", s)
		}
	}
}

// FuzzValid checks Valid against encoding/json.Valid plus UTF-8 validity:
// what Valid accepts both accept, and a document both accept that has no
// object and no \u escape (so no repeated name and no surrogate) and is
// within the depth bound, Valid accepts.
func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x\u00e9"]}`, `[1,2`, "\"\xff\"", `{"k":"` + strings.Repeat("z", 40) + `\"q"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ours := projectors.Valid(b)
		want := json.Valid(b) && utf8.Valid(b)
		plain := bytes.Count(b, []byte("[")) < projectors.MaxDepth && !bytes.ContainsRune(b, '{') && !bytes.Contains(b, []byte(`\u`))
		if ours && !want || (want && plain && !ours) {
			t.Fatalf("Valid(%q) = %v, encoding/json and utf8 say %v", b, ours, want)
		}
	})
}
