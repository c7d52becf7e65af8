package progress_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/progress"
)

func TestParseReportValid(t *testing.T) {
	in := ` {"claims": [
	  {"kind": "positive", "cites": ["call_1", "toolu_01.x-y"], "text": "found \u00e9 \ud83d\ude00"},
	  {"text": "nothing", "kind": "negative", "cites": ["call_2"]}
	]} `
	r, err := progress.ParseReport([]byte(in), progress.ReportLimits{})
	if err != nil {
		t.Fatal(err)
	}
	want := progress.Report{Claims: []progress.Claim{
		{Text: "found é 😀", Kind: progress.Positive, Cites: []string{"call_1", "toolu_01.x-y"}},
		{Text: "nothing", Kind: progress.Negative, Cites: []string{"call_2"}},
	}}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("got %+v", r)
	}
}

func TestParseReportRefusals(t *testing.T) {
	lim := progress.ReportLimits{MaxBytes: 300, MaxClaims: 2, MaxCites: 2, MaxTextBytes: 8}
	c := func(body string) string { return `{"claims":[` + body + `]}` }
	ok := `{"text":"t","kind":"positive","cites":["a"]}`
	cases := []struct {
		name, in string
		path     string
	}{
		{"empty", ``, "report"},
		{"not json", `claims`, "report"},
		{"array", `[]`, "report"},
		{"null", `null`, "report"},
		{"no claims field", `{}`, "report"},
		{"unknown field", `{"claims":[` + ok + `],"x":1}`, "report"},
		{"repeated field", `{"claims":[` + ok + `],"claims":[` + ok + `]}`, "report"},
		{"repeated escaped field", `{"claims":[` + ok + `],"cl\u0061ims":[` + ok + `]}`, "report"},
		{"claim repeated escaped field", c(`{"text":"t","kind":"positive","\u0074ext":"u","cites":["a"]}`), "claims[0]"},
		{"trailing comma", c(ok + `,`), "claims[1]"},
		{"claims null", `{"claims":null}`, "report"},
		{"claims object", `{"claims":{}}`, "report"},
		{"zero claims", c(``), "report"},
		{"too many claims", c(ok + "," + ok + "," + ok), "report"},
		{"trailing data", c(ok) + `{}`, "report"},
		{"trailing garbage", c(ok) + `x`, "report"},
		{"unclosed", `{"claims":[` + ok, "report"},
		{"too large", c(ok + strings.Repeat(" ", 300)), "report"},
		{"invalid utf8", c(`{"text":"` + "\xff" + `","kind":"positive","cites":["a"]}`), "report"},
		{"lone high surrogate", c(`{"text":"\ud800","kind":"positive","cites":["a"]}`), "report"},
		{"lone low surrogate", c(`{"text":"\udc00x","kind":"positive","cites":["a"]}`), "report"},
		{"high then non-low", c(`{"text":"\ud800\u0041","kind":"positive","cites":["a"]}`), "report"},
		{"claim not object", c(`"x"`), "claims[0]"},
		{"claim unknown field", c(`{"text":"t","kind":"positive","cites":["a"],"why":"x"}`), "claims[0]"},
		{"claim repeated field", c(`{"text":"t","text":"u","kind":"positive","cites":["a"]}`), "claims[0]"},
		{"claim missing cites", c(`{"text":"t","kind":"positive"}`), "claims[0]"},
		{"claim missing text", c(ok + `,{"kind":"positive","cites":["a"]}`), "claims[1]"},
		{"text blank", c(`{"text":"  ","kind":"positive","cites":["a"]}`), "claims[0]"},
		{"text too long", c(`{"text":"ééééé","kind":"positive","cites":["a"]}`), "claims[0]"},
		{"text number", c(`{"text":1,"kind":"positive","cites":["a"]}`), "claims[0]"},
		{"kind unknown", c(`{"text":"t","kind":"maybe","cites":["a"]}`), "claims[0]"},
		{"kind null", c(`{"text":"t","kind":null,"cites":["a"]}`), "claims[0]"},
		{"cites empty", c(`{"text":"t","kind":"positive","cites":[]}`), "claims[0]"},
		{"cites string", c(`{"text":"t","kind":"positive","cites":"a"}`), "claims[0]"},
		{"too many cites", c(`{"text":"t","kind":"positive","cites":["a","b","c"]}`), "claims[0]"},
		{"cite invalid", c(`{"text":"t","kind":"positive","cites":["a","b:c"]}`), "claims[0].cites[1]"},
		{"cite not string", c(`{"text":"t","kind":"positive","cites":[1]}`), "claims[0].cites[0]"},
		{"cite repeated", c(`{"text":"t","kind":"negative","cites":["a","a"]}`), "claims[0].cites[1]"},
		{"cite too long", c(`{"text":"t","kind":"negative","cites":["` + strings.Repeat("a", 129) + `"]}`), "claims[0].cites[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := progress.ParseReport([]byte(tc.in), lim)
			var pe *progress.ParseError
			if !errors.As(err, &pe) || r.Claims != nil {
				t.Fatalf("got %+v, %v; want a parse error", r, err)
			}
			if pe.Path() != tc.path {
				t.Fatalf("path %s (%v); want %s", pe.Path(), err, tc.path)
			}
		})
	}
	if _, err := progress.ParseReport([]byte(c(ok)), progress.ReportLimits{MaxBytes: 2 << 20}); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
		t.Fatalf("limits over the ceiling: %v", err)
	}
}

var fuzzLimits = progress.ReportLimits{MaxBytes: 4096, MaxClaims: 4, MaxCites: 3, MaxTextBytes: 64}

// FuzzParseReport: whatever the input, ParseReport does not panic and either
// refuses it with a *ParseError whose fix is short fixed text, or returns a
// report within the limits that survives a JSON round trip unchanged.
func FuzzParseReport(f *testing.F) {
	for _, s := range []string{
		validReport, unknownReport, malformedReport, noEvidenceReport, excludedReport,
		`{"claims":[{"text":"\ud83d\ude00 ok","kind":"negative","cites":["a","b","c"]}]}`,
		`{"claims":[{"text":"\ud800","kind":"positive","cites":["a"]}]}`,
		`{"claims":[{"text":"t","kind":"positive","cites":["a"]}]} `,
		`{"claims":[]}`, `{}`, `[]`, `null`, ``, `{"claims":[[[[[[`, `{"claims":[{"text":"t","kind":"positive","cites":["a","a"]}]}`,
		"{\"claims\":[{\"text\":\"\xff\",\"kind\":\"positive\",\"cites\":[\"a\"]}]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := progress.ParseReport(data, fuzzLimits)
		if err != nil {
			var pe *progress.ParseError
			if !errors.As(err, &pe) || len(pe.Fix) == 0 || len(pe.Fix) > 200 || r.Claims != nil {
				t.Fatalf("error %v (%T), report %+v", err, err, r)
			}
			if pe.Claim >= fuzzLimits.MaxClaims || pe.Cite >= fuzzLimits.MaxCites {
				t.Fatalf("error position out of bounds: %+v", pe)
			}
			return
		}
		if len(data) > fuzzLimits.MaxBytes || !utf8.Valid(data) {
			t.Fatalf("accepted %d bytes, valid UTF-8 %v", len(data), utf8.Valid(data))
		}
		if len(r.Claims) == 0 || len(r.Claims) > fuzzLimits.MaxClaims {
			t.Fatalf("%d claims", len(r.Claims))
		}
		for _, c := range r.Claims {
			if strings.TrimSpace(c.Text) == "" || len(c.Text) > fuzzLimits.MaxTextBytes || !utf8.ValidString(c.Text) {
				t.Fatalf("text %q", c.Text)
			}
			if c.Kind != progress.Positive && c.Kind != progress.Negative {
				t.Fatalf("kind %q", c.Kind)
			}
			if len(c.Cites) == 0 || len(c.Cites) > fuzzLimits.MaxCites {
				t.Fatalf("%d cites", len(c.Cites))
			}
			seen := map[string]bool{}
			for _, id := range c.Cites {
				if canonical.ValidateToolCallID(id) != nil || seen[id] {
					t.Fatalf("cite %q", id)
				}
				seen[id] = true
			}
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := progress.ParseReport(again, progress.ReportLimits{})
		if err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, r, r2)
		}
	})
}
