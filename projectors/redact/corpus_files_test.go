package redact_test

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/projectors/redact"
)

// The corpora under testdata were written for this project, apart from the
// redactor's rules, to try it on lines it was not built from:
// planted.txt holds log lines of the classes that leaked from an
// independent corpus and their neighbours, each with the values it plants;
// ordinary.txt holds log lines and prose with nothing sensitive, where
// "user", "token", "key", "secret" and "password" are ordinary words.

// Planted is one line of testdata/planted.txt.
type Planted struct {
	Class, Line string
	Secrets     []string
}

func readPlanted(tb testing.TB, path string) []Planted {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []Planted
	class := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "## "):
			class = l[3:]
		case l == "" || strings.HasPrefix(l, "# "):
		default:
			parts := strings.Split(l, " ‖ ")
			if len(parts) < 2 {
				tb.Fatalf("%s: a planted line names no secret: %q", path, l)
			}
			out = append(out, Planted{Class: class, Line: parts[0], Secrets: parts[1:]})
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func readLines(tb testing.TB, path string) []string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "# ") {
			out = append(out, l)
		}
	}
	return out
}

// leaks returns the secrets of p that survive in out, as they are or JSON
// escaped, whole or in part: of a secret of 10 bytes or more, any run of
// half its length (at least 8 bytes) counts, since a secret cut in two is
// still mostly shown.
func leaks(p Planted, out string) []string {
	var found []string
	for _, s := range p.Secrets {
		enc, _ := json.Marshal(s)
		encS := strings.Trim(string(enc), `"`)
		if partlyLeaked(out, s) || (encS != s && partlyLeaked(out, encS)) {
			found = append(found, s)
		}
	}
	return found
}

func partlyLeaked(out, s string) bool {
	if leaked(out, s) {
		return true
	}
	if len(s) < 10 {
		return false
	}
	w := max(8, len(s)/2)
	for k := 0; k+w <= len(s); k++ {
		if strings.Contains(out, s[k:k+w]) {
			return true
		}
	}
	return false
}

// TestRedactionCorpus prints both figures of the corpora through the
// redactor: planted secrets that leak (must be 0) and ordinary lines that
// change (at most 0.5%).
func TestRedactionCorpus(t *testing.T) {
	planted := readPlanted(t, "testdata/planted.txt")
	secrets, leakCount := 0, 0
	for _, p := range planted {
		out := redact.String(p.Line)
		secrets += len(p.Secrets)
		for _, s := range leaks(p, out) {
			leakCount++
			t.Errorf("%s: %q leaks\n  in:  %s\n  out: %s", p.Class, s, p.Line, out)
		}
	}
	ordinary := readLines(t, "testdata/ordinary.txt")
	changed := 0
	for _, l := range ordinary {
		if out := redact.String(l); out != l {
			changed++
			t.Logf("false redaction:\n  in:  %s\n  out: %s", l, out)
		}
	}
	rate := 100 * float64(changed) / float64(len(ordinary))
	t.Logf("redaction corpus: redactor: planted %d lines, %d secrets, %d leaks; ordinary %d lines, %d changed (%.2f%%)",
		len(planted), secrets, leakCount, len(ordinary), changed, rate)
	if len(planted) < 200 || len(ordinary) < 1000 {
		t.Fatalf("corpora too small: %d planted, %d ordinary lines", len(planted), len(ordinary))
	}
	if 1000*changed > 5*len(ordinary) {
		t.Errorf("%d of %d ordinary lines changed: over 0.5%%", changed, len(ordinary))
	}
}
