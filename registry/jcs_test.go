package registry

import (
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/toolcanon/toolcanon/canonical"
)

// rfcOptions is the plain RFC 8785 profile: every finite binary64 number.
// The tool profile is stricter (safe integers only); the RFC's own vectors
// use numbers such as 1E30, so they are checked against this profile, and
// the strict profile is checked to refuse exactly those.
var rfcOptions = parseOptions{maxDepth: MaxJSONDepth, code: canonical.CodeInvalidArgument}

func canonicalizeRFC(data []byte) ([]byte, error) {
	v, err := parse(data, rfcOptions)
	if err != nil {
		return nil, err
	}
	return appendCanonical(nil, &v)
}

func TestJCSVectors(t *testing.T) {
	dir := suiteTestdata(t, "jcs")
	inputs, err := filepath.Glob(filepath.Join(dir, "input", "*.json"))
	ok(t, err)
	if len(inputs) != 6 {
		t.Fatalf("want the six RFC 8785 vector files, found %d", len(inputs))
	}
	exact, strictExact := 0, 0
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		raw, err := os.ReadFile(in)
		ok(t, err)
		want, err := os.ReadFile(filepath.Join(dir, "output", name+".json"))
		ok(t, err)
		hexText, err := os.ReadFile(filepath.Join(dir, "outhex", name+".txt"))
		ok(t, err)
		wantHex, err := hex.DecodeString(strings.Join(strings.Fields(string(hexText)), ""))
		ok(t, err)
		if string(want) != string(wantHex) {
			t.Fatalf("%s: output/ and outhex/ disagree", name)
		}

		got, err := canonicalizeRFC(raw)
		ok(t, err, name)
		if string(got) != string(want) {
			t.Fatalf("%s:\n got %q\nwant %q", name, got, want)
		}
		again, err := canonicalizeRFC(got)
		ok(t, err, name)
		if string(again) != string(got) {
			t.Fatalf("%s: canonical form is not a fixed point", name)
		}
		exact++

		strict, err := Canonicalize(raw)
		if name == "values" {
			// 1E30 is beyond ±(2^53−1): the tool profile refuses it, by name.
			var se *SyntaxError
			if !errors.As(err, &se) || !strings.Contains(se.Reason, "1E30") {
				t.Fatalf("values: strict profile must refuse 1E30, got %v", err)
			}
			continue
		}
		ok(t, err, name)
		if string(strict) != string(want) {
			t.Fatalf("%s strict:\n got %q\nwant %q", name, strict, want)
		}
		strictExact++
	}
	t.Logf("JCS vectors: %d/%d byte-exact (RFC profile); %d byte-exact and 1 refused (strict profile)", exact, len(inputs), strictExact)
}

func TestJCSAppendixBNumbers(t *testing.T) {
	f, err := os.Open(suiteTestdata(t, "jcs", "rfc8785-appendix-b-numbers.csv"))
	ok(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	ok(t, err)
	if strings.Join(rows[0], ",") != "ieee754_hex,expected,note" || len(rows) != 27 {
		t.Fatalf("unexpected table shape: %v, %d rows", rows[0], len(rows))
	}
	checked, refused := 0, 0
	for _, row := range rows[1:] {
		bits, err := strconv.ParseUint(row[0], 16, 64)
		ok(t, err)
		fv := math.Float64frombits(bits)
		got, err := appendNumber(nil, fv)
		if row[1] == "ERROR" {
			if err == nil {
				t.Fatalf("%s (%s): want an error, got %q", row[0], row[2], got)
			}
			refused++
			continue
		}
		ok(t, err, row[0])
		if string(got) != row[1] {
			t.Fatalf("%s (%s): got %q want %q", row[0], row[2], got, row[1])
		}
		if o := es6Number(fv); o != row[1] { // the sweep's oracle holds to the table too
			t.Fatalf("%s (%s): es6Number gives %q want %q", row[0], row[2], o, row[1])
		}
		back, err := strconv.ParseFloat(string(got), 64)
		ok(t, err)
		if math.Abs(back) != math.Abs(fv) {
			t.Fatalf("%s: %q does not read back", row[0], got)
		}
		checked++
	}
	t.Logf("Appendix B: %d numbers exact, %d refused", checked, refused)
}

// TestJCSNumberSweepAgainstOracle compares the number formatter with
// es6Number over a deterministic sweep of bit patterns and of every
// decimal exponent, so each layout branch and boundary is crossed.
func TestJCSNumberSweepAgainstOracle(t *testing.T) {
	check := func(f float64) {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return
		}
		got, err := appendNumber(nil, f)
		ok(t, err)
		want := es6Number(f)
		if string(got) != string(want) {
			t.Fatalf("%016x: got %s want %s", math.Float64bits(f), got, want)
		}
	}
	x := uint64(0x0010000000000000)
	for i := 0; i < 20000; i++ {
		check(math.Float64frombits(x))
		check(math.Float64frombits(x >> 12))
		x = x*6364136223846793005 + 1442695040888963407
	}
	for e := -324; e <= 308; e++ {
		for _, m := range []float64{1, 1.5, 9.999999999999999, 123456789.123, 5} {
			check(m * math.Pow(10, float64(e)))
			check(-m * math.Pow(10, float64(e)))
		}
	}
}

func TestStrictParserRefusals(t *testing.T) {
	bad := map[string]string{
		"duplicate key":          `{"a":1,"a":2}`,
		"duplicate after escape": `{"a":1,"\u0061":2}`,
		"nested duplicate":       `[{"x":{"k":1,"k":1}}]`,
		"invalid utf8":           "\"\xff\"",
		"invalid utf8 in key":    "{\"\xff\":1}",
		"utf8 surrogate":         "\"\xed\xa0\x80\"",
		"overlong utf8":          "\"\xc0\xaf\"",
		"truncated utf8":         "\"\xe2\x82\"",
		"lone high surrogate":    `"\ud800"`,
		"lone high then text":    `"\ud800x"`,
		"lone low surrogate":     `"\udc00"`,
		"reversed pair":          `"\udc00\ud800"`,
		"high then non-low":      `"\ud800\u0041"`,
		"unsafe integer":         `9007199254740992`,
		"unsafe negative":        `-9007199254740992`,
		"unsafe exponent":        `1e16`,
		"overflow":               `1e400`,
		"underflow":              `1e-400`,
		"nan":                    `NaN`,
		"infinity":               `Infinity`,
		"leading zero":           `01`,
		"plus sign":              `+1`,
		"bare dot":               `1.`,
		"bare exponent":          `1e`,
		"hex":                    `0x10`,
		"trailing data":          `{} {}`,
		"trailing comma":         `[1,]`,
		"object trailing comma":  `{"a":1,}`,
		"single quotes":          `'a'`,
		"raw control":            "\"a\tb\"",
		"bad escape":             `"\x41"`,
		"short unicode escape":   `"\u41"`,
		"empty":                  ``,
		"only space":             ` `,
		"bom":                    "\xef\xbb\xbf{}",
		"comment":                `{} // c`,
		"unterminated":           `{"a":`,
		"too deep":               strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1),
		"nul byte after":         "{}\x00",
		"vertical tab space":     "\v{}",
		"non-string key":         `{1:2}`,
	}
	for name, in := range bad {
		_, err := Canonicalize([]byte(in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("%s: want *SyntaxError, got %T %v", name, err, err)
		}
		if !errors.Is(err, canonical.ErrInvalidArgument) || canonical.CodeOf(err) != canonical.CodeInvalidArgument {
			t.Fatalf("%s: error %v does not carry INVALID_ARGUMENT", name, err)
		}
	}
	good := map[string]string{
		`9007199254740991`:                  `9007199254740991`,
		`-9007199254740991`:                 `-9007199254740991`,
		`-0`:                                `0`,
		`0.0e10`:                            `0`,
		`1E2`:                               `100`,
		`1e-7`:                              `1e-7`,
		`0.000001`:                          `0.000001`,
		`"\u00e9\ud83d\ude02"`:              `"é😂"`,
		`"\u001f\u007f"`:                    `"\u001f` + "\x7f" + `"`,
		`"\/\b\f\n\r\t"`:                    `"/\b\f\n\r\t"`,
		`{"b":[],"a":{}}`:                   `{"a":{},"b":[]}`,
		" \t\r\n[ true , false , null ] \n": `[true,false,null]`,
		strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth): strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth),
	}
	for in, want := range good {
		got, err := Canonicalize([]byte(in))
		ok(t, err, in)
		if string(got) != want {
			t.Fatalf("%q: got %q want %q", in, got, want)
		}
	}
}

func TestCompareUTF16(t *testing.T) {
	less := [][2]string{
		{"\U0001F602", "\uFB33"}, // D83D DE02 < FB33, though U+1F602 > U+FB33
		{"\U0001F602", "\U0001F603"},
		{"\U0001F602", "\U0010FFFF"},
		{"\uD7FF", "\U00010000"},
		{"a", "ab"},
		{"", "a"},
		{"\u00e9", "\u20ac"},
		{"x\U0001F602", "x\uE000"},
	}
	for _, p := range less {
		if compareUTF16(p[0], p[1]) >= 0 || compareUTF16(p[1], p[0]) <= 0 {
			t.Fatalf("%q must sort before %q", p[0], p[1])
		}
	}
	if compareUTF16("é", "é") != 0 {
		t.Fatal("equal strings must compare equal")
	}
}

// TestJCSDifferentialGenerated compares with jcsOracle on generated
// documents that both must accept, so the comparison is never vacuous.
func TestJCSDifferentialGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		genValue(rng, &b, 0)
		doc := []byte(b.String())
		theirs, err := jcsOracle(doc)
		ok(t, err, string(doc))
		ours, err := Canonicalize(doc)
		if err != nil {
			// Only magnitude can make the strict profile refuse what the oracle takes.
			if !strings.Contains(err.Error(), "safe integer range") {
				t.Fatalf("%s: %v", doc, err)
			}
			ours, err = canonicalizeRFC(doc)
			ok(t, err, string(doc))
		}
		if string(ours) != string(theirs) {
			t.Fatalf("%s:\nours   %s\ntheirs %s", doc, ours, theirs)
		}
	}
}

// es6Number is the oracle of the number sweep: ECMAScript's
// Number::toString (RFC 8785 section 3.2.2.3), written from the spec's steps
// over the shortest round-trip digits strconv gives.
func es6Number(f float64) string {
	if f == 0 {
		return "0"
	}
	if f < 0 {
		return "-" + es6Number(-f)
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1 // f = 0.digits × 10^n
	switch {
	case k <= n && n <= 21:
		return digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return "0." + strings.Repeat("0", -n) + digits
	}
	sign := "+"
	if n-1 < 0 {
		sign = "-"
	}
	abs := n - 1
	if abs < 0 {
		abs = -abs
	}
	if k == 1 {
		return digits + "e" + sign + strconv.Itoa(abs)
	}
	return digits[:1] + "." + digits[1:] + "e" + sign + strconv.Itoa(abs)
}

// jcsOracle canonicalizes data by RFC 8785 over encoding/json's decoding:
// members sorted by their names' UTF-16 code units, strings with the short
// escapes and lower-case \u00xx for the other controls, numbers by es6Number.
func jcsOracle(data []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	var b strings.Builder
	var write func(v any) error
	write = func(v any) error {
		switch v := v.(type) {
		case nil:
			b.WriteString("null")
		case bool:
			b.WriteString(strconv.FormatBool(v))
		case float64:
			b.WriteString(es6Number(v))
		case string:
			oracleString(&b, v)
		case []any:
			b.WriteByte('[')
			for i, e := range v {
				if i > 0 {
					b.WriteByte(',')
				}
				if err := write(e); err != nil {
					return err
				}
			}
			b.WriteByte(']')
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Slice(keys, func(i, j int) bool {
				return slices.Compare(utf16.Encode([]rune(keys[i])), utf16.Encode([]rune(keys[j]))) < 0
			})
			b.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					b.WriteByte(',')
				}
				oracleString(&b, k)
				b.WriteByte(':')
				if err := write(v[k]); err != nil {
					return err
				}
			}
			b.WriteByte('}')
		default:
			return fmt.Errorf("unexpected %T", v)
		}
		return nil
	}
	if err := write(v); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

func oracleString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
