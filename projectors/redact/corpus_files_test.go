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

// corpusFigures counts, through redact, the planted secrets of the
// planted files that leak and the lines of the ordinary files that change;
// each leak is given to leakLog and each change to changeLog, when set.
func corpusFigures(t *testing.T, redact func(string) string, planted, ordinary []string, leakLog, changeLog func(format string, args ...any)) (lines, secrets, leakCount, nOrdinary, changed int) {
	t.Helper()
	for _, path := range planted {
		for _, p := range readPlanted(t, path) {
			out := redact(p.Line)
			lines++
			secrets += len(p.Secrets)
			for _, s := range leaks(p, out) {
				leakCount++
				if leakLog != nil {
					leakLog("%s: %s: %q leaks\n  in:  %s\n  out: %s", path, p.Class, s, p.Line, out)
				}
			}
		}
	}
	for _, path := range ordinary {
		for _, l := range readLines(t, path) {
			nOrdinary++
			if out := redact(l); out != l {
				changed++
				if changeLog != nil {
					changeLog("%s: false redaction:\n  in:  %s\n  out: %s", path, l, out)
				}
			}
		}
	}
	return
}

// The corpora, by name. The held-out files were written before the rules
// of the second round and are never tuned on; the training files are what
// those rules were written from; testdata/gitleaks holds the true- and
// false-positive examples of gitleaks' rule generators (see its README).
var (
	firstPlanted   = []string{"testdata/planted.txt"}
	firstOrdinary  = []string{"testdata/ordinary.txt"}
	trainPlanted   = []string{"testdata/round2/planted.txt"}
	trainOrdinary  = []string{"testdata/round2/ordinary.txt"}
	heldPlanted    = []string{"testdata/heldout/planted.txt"}
	heldOrdinary   = []string{"testdata/heldout/ordinary.txt"}
	extPlanted     = []string{"testdata/gitleaks/true-positives.txt"}
	extOrdinary    = []string{"testdata/gitleaks/false-positives.txt"}
	wholePlanted   = append(append(append([]string{}, firstPlanted...), trainPlanted...), heldPlanted...)
	wholeOrdinary  = append(append(append([]string{}, firstOrdinary...), trainOrdinary...), heldOrdinary...)
	reportedCorpus = []struct {
		name              string
		planted, ordinary []string
	}{
		{"whole corpus", wholePlanted, wholeOrdinary},
		{"held-out part", heldPlanted, heldOrdinary},
		{"external (gitleaks examples)", extPlanted, extOrdinary},
	}
)

func logFigures(t *testing.T, who, name string, lines, secrets, leakCount, nOrdinary, changed int) {
	t.Helper()
	t.Logf("redaction corpus: %s: %s: planted %d lines, %d secrets, %d leaks; ordinary %d lines, %d changed (%.2f%%)",
		who, name, lines, secrets, leakCount, nOrdinary, changed, 100*float64(changed)/float64(max(nOrdinary, 1)))
}

// TestRedactionCorpus prints both figures of the corpora through the
// redactor: planted secrets that leak and ordinary lines that change. On
// the first corpus and on the training part leaks must be 0 and changes at
// most 0.5%; the held-out part and the external examples are measured, not
// held to a figure, so that they keep measuring what unseen logs do.
func TestRedactionCorpus(t *testing.T) {
	for _, c := range []struct {
		name                    string
		planted, ordinary       []string
		minPlanted, minOrdinary int
	}{
		{"first corpus", firstPlanted, firstOrdinary, 200, 1000},
		{"training part", trainPlanted, trainOrdinary, 100, 200},
	} {
		lines, secrets, leakCount, n, changed := corpusFigures(t, redact.String, c.planted, c.ordinary, t.Errorf, t.Logf)
		logFigures(t, "redactor", c.name, lines, secrets, leakCount, n, changed)
		if lines < c.minPlanted || n < c.minOrdinary {
			t.Fatalf("%s too small: %d planted, %d ordinary lines", c.name, lines, n)
		}
		if 1000*changed > 5*n {
			t.Errorf("%s: %d of %d ordinary lines changed: over 0.5%%", c.name, changed, n)
		}
	}
	for _, c := range reportedCorpus {
		var log func(string, ...any)
		if testing.Verbose() && c.name == "held-out part" {
			log = t.Logf
		}
		lines, secrets, leakCount, n, changed := corpusFigures(t, redact.String, c.planted, c.ordinary, log, log)
		logFigures(t, "redactor", c.name, lines, secrets, leakCount, n, changed)
	}
}
