package redact

import (
	"bytes"
	"go/scanner"
	"go/token"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Random values of every common alphabet, 16 bytes and longer, are
// generated.
func TestGeneratedRandomValues(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const b62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	for _, a := range []struct{ name, alphabet string }{
		{"base62", b62}, {"base64", b62 + "+/"}, {"base64url", b62 + "-_"}, {"base32", "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"},
		{"base58", "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"}, {"hex", "0123456789abcdef"},
		{"lower alnum", "abcdefghijklmnopqrstuvwxyz0123456789"}, {"upper alnum", "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"},
		{"lower", "abcdefghijklmnopqrstuvwxyz"},
	} {
		for _, n := range []int{16, 20, 24, 32, 40, 64} {
			missed := 0
			const tries = 1000
			for range tries {
				b := make([]byte, n)
				for k := range b {
					b[k] = a.alphabet[r.IntN(len(a.alphabet))]
				}
				if !generatedAnywhere(b) {
					missed++
				}
			}
			if missed > tries*3/100 {
				t.Errorf("%s of %d bytes: %d of %d not found generated", a.name, n, missed, tries)
			}
		}
	}
}

// generatedAnywhere reports whether the generated-value pass masks part of
// v standing alone.
func generatedAnywhere(v []byte) bool {
	rw := &rewriter{src: v}
	redactGenerated(rw)
	return len(rw.spans) > 0
}

// The identifiers and words of the repository's Go sources, minShort bytes
// and longer, are names: hardly any is generated.
func TestGeneratedNotNames(t *testing.T) {
	names := map[string]bool{}
	err := filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.Contains(p, "testdata") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var s scanner.Scanner
		fs := token.NewFileSet()
		s.Init(fs.AddFile(p, -1, len(src)), src, nil, 0)
		for {
			_, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok == token.IDENT && len(lit) >= minShort {
				names[lit] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var flagged []string
	for n := range names {
		if generated([]byte(n)) {
			flagged = append(flagged, n)
		}
	}
	sort.Strings(flagged)
	t.Logf("%d of %d identifiers of %d bytes or more look generated: %s", len(flagged), len(names), minShort, strings.Join(flagged, " "))
	if len(names) < 1000 || len(flagged)*100 > len(names) {
		t.Errorf("%d of %d identifiers look generated: over 1%%", len(flagged), len(names))
	}
}

// With LOGHUB_DIR naming a directory of log files (*.log), the share of
// their white-space separated tokens that the redactor changes, and those
// that the generated-value pass masks, with examples. The samples are
// research material: read where the user keeps them, never copied here.
func TestGeneratedLoghub(t *testing.T) {
	dir := os.Getenv("LOGHUB_DIR")
	if dir == "" {
		t.Skip("LOGHUB_DIR names no directory of Loghub samples")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.log"))
	if len(files) == 0 {
		t.Fatalf("no */*.log under %s", dir)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tokens, changed, generatedN := 0, 0, 0
		seen := map[string]bool{}
		var examples []string
		for _, line := range bytes.Split(src, []byte("\n")) {
			out := string(AppendRedacted(nil, line))
			in := strings.Fields(string(line))
			kept := map[string]int{}
			for _, w := range strings.Fields(out) {
				kept[w]++
			}
			for _, w := range in {
				tokens++
				if kept[w] > 0 {
					kept[w]--
				} else {
					changed++
				}
			}
			rw := &rewriter{src: line}
			redactGenerated(rw)
			for _, sp := range rw.spans {
				generatedN++
				if v := string(line[sp.start:sp.end]); !seen[v] {
					seen[v] = true
					examples = append(examples, v)
				}
			}
		}
		sort.Strings(examples)
		if len(examples) > 12 {
			examples = examples[:12]
		}
		t.Logf("loghub %s: %d tokens, %d changed by the redactor (%.2f%%), %d values masked as generated (%.2f%%), %d distinct: %s",
			filepath.Base(f), tokens, changed, 100*float64(changed)/float64(tokens), generatedN, 100*float64(generatedN)/float64(tokens),
			len(seen), strings.Join(examples, " "))
	}
}

// A long value is measured against its alphabet: a long hexadecimal or
// lower-case key is generated, a pattern repeated is not; a name of short
// parts is not either.
func TestGeneratedLongAndNames(t *testing.T) {
	for v, want := range map[string]bool{
		"standard_d34676fdd8219397e39b49f6b3000d4d07c6d375bf62ffd84e89e52a94551fae5bafadd7618a8e5f0dc71f3004cd21bb0e96c556b4c5caa527abc4c390d99120": true,
		"uu8oneowdjuzomy6psx0dwdhcenkgulfg3k2hzywy7onzixfmv2421qrpp8exlj1":                                                                          true,
		strings.Repeat("abcdefgh", 10):         false,
		strings.Repeat("Xk9q", 20):             false,
		"emqx-5.8.3-debian12-amd64.deb":        false,
		"mlflow-2.18.0-py3-none-any.whl":       false,
		"x86_64-unknown-linux-gnu":             false,
		"8f14e45f-ceea-467f-a0e3-1b2c3d4e5f60": true,
	} {
		if got := generated([]byte(v)); got != want {
			t.Errorf("generated(%q) = %v, want %v", v, got, want)
		}
	}
}

// Words in camel case are a program's names, however often their case
// switches; random letters of both cases seldom read so.
func TestGeneratedCamelCase(t *testing.T) {
	for _, v := range []string{"SetRetryBudgetOnDial", "parseHeaderIntoMap", "OpenWriteCloseFile", "LoadUserByNameID",
		"fillRowFromCsvLine", "GetKeyForIdOrTag", "putRowAtEndOfMap", "RunJobNowOrSkip"} {
		if generated([]byte(v)) {
			t.Errorf("generated(%q) = true, want false", v)
		}
	}
	r := rand.New(rand.NewPCG(13, 14))
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	for _, n := range []int{12, 16, 24} {
		read := 0
		const tries = 20000
		for range tries {
			b := make([]byte, n)
			for k := range b {
				b[k] = letters[r.IntN(len(letters))]
			}
			if camelWords(b) {
				read++
			}
		}
		if read*200 > tries {
			t.Errorf("random letters of %d bytes: %d of %d read as camel-case words", n, read, tries)
		}
	}
}

// Words of one case joined by '/' or '.' are words still; a value with a
// part of mixed case and digits is judged as before.
func TestGeneratedCaseWordsJoined(t *testing.T) {
	for v, want := range map[string]bool{
		"see XQPOPMIN/XQPOPMAX and VPMADDWD/VPMADDUBSW": false,
		"see go/gccgoimportdata":                        false,
		"key Qx7vLp2n/Tz9KmWq+abc":                      true,
	} {
		if got := generatedAnywhere([]byte(v)); got != want {
			t.Errorf("%q: masked %v, want %v", v, got, want)
		}
	}
}

// A short value, 8 to 11 letters and digits, is generated when its
// characters alone tell it from a name: most random values of every common
// alphabet are; names that mix words, capitals and digits are not.
func TestGeneratedShortValues(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, a := range []struct {
		name, alphabet string
		least          int // of 1000 found generated
	}{
		{"base62", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 700},
		{"hex", "0123456789abcdef", 850},
		{"lower alnum", "abcdefghijklmnopqrstuvwxyz0123456789", 450},
		{"upper alnum", "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 450},
	} {
		for n := minShort; n < minGenerated; n++ {
			found := 0
			for range 1000 {
				b := make([]byte, n)
				for k := range b {
					b[k] = a.alphabet[r.IntN(len(a.alphabet))]
				}
				if generatedAnywhere(b) {
					found++
				}
			}
			if found < a.least {
				t.Errorf("%s of %d bytes: %d of 1000 found generated, want %d or more", a.name, n, found, a.least)
			}
		}
	}
	for v, want := range map[string]bool{
		"rQ7vK2xWm9": true, "Zt4pL8qXc": true, "x9k2m7q4": true, "7QX2KD9M4B": true, "b3f9e07a12": true,
		"Leopold80": false, "win10x64": false, "MyAppWeb": false, "msDrawMap": false, "python312": false,
		"Windows11": false, "MaxInt64": false, "endOfRun": false, "ipv6only": false, "20261206": false,
		"A01234567": false, "x86y64": false, "GPT4oMini": false, "cafe0123": false, "2fef6f71": true,
	} {
		if got := generated([]byte(v)); got != want {
			t.Errorf("generated(%q) = %v, want %v", v, got, want)
		}
	}
}
