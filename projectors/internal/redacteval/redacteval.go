// Package redacteval measures redaction on evaluation sets: planted
// secrets that leak, ordinary lines whose words do not survive, lines that
// must stay byte for byte. Its tests and commands share one reading of the
// sets and one definition of each figure.
package redacteval

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Set is one evaluation set: a directory holding planted.txt (lines with
// the values they plant, "line ‖ value ‖ value", "## class" headers),
// ordinary.txt (lines with nothing sensitive) and, optionally,
// verbatim.txt (lines that must come out byte-identical: public values in
// the positions that prove them public).
type Set struct {
	Name     string
	Planted  []Planted
	Ordinary []string
	Verbatim []string
	// Training sets are those the rules were written from: none of their
	// planted values may leak. Tuned sets have been looked at while the
	// rules were tuned; the others (Blind) are measured, never tuned on.
	Training, Tuned bool
}

// Blind reports whether the set was never tuned on: its figures are
// reported, not held to a bound.
func (s Set) Blind() bool { return !s.Tuned }

// Gated reports whether the corpus test holds the set to its bounds: every
// tuned set but those just written, whose figures are reported until the
// rules have been measured against them.
func (s Set) Gated() bool { return s.Tuned && !slices.Contains(ungated, s.Name) }

// Planted is one line of planted.txt.
type Planted struct {
	Class, Line string
	Secrets     []string
}

// The roles of the sets by directory name. The root of the sets is the
// first corpus; gitleaks holds gitleaks' generator examples under their
// own file names; every other directory is a tuned set, except blind,
// blind2, blind7, blind8, blind10, blind11, blind12, blind13, blind15,
// blind21, blind22, blind23, blind24, blind25, blind26, blind27, blind28, blind29, blind30, blind31, blind32, blind33 and blind34, which are written apart and never tuned on. dev2,
// dev3, dev4, dev5, blind3, blind4, blind5, blind6, blind9, blind14,
// blind16, blind17, blind18, blind19 and blind20 are development sets
// written apart from the rules (the blind ones measured as held-out sets
// first, their READMEs keeping the figures): tuned on, and held to the
// tuned sets' bounds (ungated names a set not held to them yet: blind9,
// blind14, blind16, blind17, blind18, blind19 and blind20, tuned on only
// since their held-out measurements, and dev3, dev4 and dev5, each written
// apart as a development set and measured once before it was read).
var (
	training = []string{"first", "round2"}
	untuned  = []string{"blind", "blind2", "blind7", "blind8", "blind10", "blind11", "blind12", "blind13", "blind15", "blind21", "blind22", "blind23", "blind24", "blind25", "blind26", "blind27", "blind28", "blind29", "blind30", "blind31", "blind32", "blind33", "blind34"}
	ungated  = []string{"blind9", "blind14", "blind16", "blind17", "blind18", "blind19", "blind20", "dev3", "dev4", "dev5"}
)

// SetsVar names the environment variable that limits which sets Load
// reads: set names separated by commas ("first" is the root's own set).
// Unset or empty, every set is read.
const SetsVar = "REDACTION_SETS"

// Load reads every set under root: root itself and each directory in it
// with a planted.txt or an ordinary.txt, in name order with blind last.
// When the environment names sets (SetsVar), only their files are read.
func Load(root string) ([]Set, error) {
	return LoadOnly(root, Selected(os.Getenv(SetsVar)))
}

// Selected returns the set names of a comma-separated list, nil (every
// set) for an empty one.
func Selected(list string) []string {
	var names []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// LoadOnly is Load limited to the sets named in only (nil: every set):
// the files of the others are not opened.
func LoadOnly(root string, only []string) ([]Set, error) {
	dirs := []string{root}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(root, e.Name()))
		}
	}
	var sets []Set
	for _, d := range dirs {
		name := filepath.Base(d)
		if d == root {
			name = "first"
		}
		if only != nil && !slices.Contains(only, name) {
			continue
		}
		pl, ord, verb := "planted.txt", "ordinary.txt", "verbatim.txt"
		if name == "gitleaks" {
			pl, ord = "true-positives.txt", "false-positives.txt"
		}
		s := Set{Name: name, Training: slices.Contains(training, name), Tuned: !slices.Contains(untuned, name)}
		found := false
		if lines, err := readLines(filepath.Join(d, pl)); err == nil {
			found = true
			if s.Planted, err = parsePlanted(lines); err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Join(d, pl), err)
			}
		}
		if lines, err := readLines(filepath.Join(d, ord)); err == nil {
			found = true
			s.Ordinary = plain(lines)
		}
		if lines, err := readLines(filepath.Join(d, verb)); err == nil {
			s.Verbatim = plain(lines)
		}
		if found {
			sets = append(sets, s)
		}
	}
	slices.SortStableFunc(sets, func(a, b Set) int {
		if a.Blind() != b.Blind() {
			if a.Blind() {
				return 1
			}
			return -1
		}
		return 0
	})
	return sets, nil
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out, sc.Err()
}

// plain drops blank lines, "# " comments and "## class" headers, which
// some sets use to group their ordinary and verbatim lines as their
// planted ones.
func plain(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l != "" && !strings.HasPrefix(l, "# ") && l != "#" && !strings.HasPrefix(l, "## ") {
			out = append(out, l)
		}
	}
	return out
}

func parsePlanted(lines []string) ([]Planted, error) {
	var out []Planted
	class := ""
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "## "):
			class = l[3:]
		case l == "" || strings.HasPrefix(l, "# ") || l == "#":
		default:
			parts := strings.Split(l, " ‖ ")
			if len(parts) < 2 {
				return nil, fmt.Errorf("a planted line names no value: %q", l)
			}
			out = append(out, Planted{Class: class, Line: parts[0], Secrets: parts[1:]})
		}
	}
	return out, nil
}

// Leaks returns the planted values of p that survive in out, as they are
// or JSON-escaped, whole or in part: of a value of 10 bytes or more, any
// run of half its length (at least 8 bytes) counts, since a secret cut in
// two is still mostly shown. A value of digits counts only standing alone.
func Leaks(p Planted, out string) []string {
	var found []string
	for _, s := range p.Secrets {
		enc, _ := json.Marshal(s)
		if leaked(out, s) || leaked(out, strings.Trim(string(enc), `"`)) {
			found = append(found, s)
		}
	}
	return found
}

func leaked(out, s string) bool {
	if strings.Trim(s, "0123456789") == "" {
		for off := 0; ; {
			i := strings.Index(out[off:], s)
			if i < 0 {
				return false
			}
			i += off
			if (i == 0 || out[i-1] < '0' || out[i-1] > '9') && (i+len(s) == len(out) || out[i+len(s)] < '0' || out[i+len(s)] > '9') {
				return true
			}
			off = i + 1
		}
	}
	if strings.Contains(out, s) {
		return true
	}
	if len(s) >= 10 {
		w := max(8, len(s)/2)
		for k := 0; k+w <= len(s); k++ {
			if strings.Contains(out, s[k:k+w]) {
				return true
			}
		}
	}
	return false
}

// WordsMostlyIntact reports whether the words of before survive in after:
// at least 90% of them, in order. The words of a line are the maximal
// runs of two letters or more in its tokens (split at white space) that
// hold no digit; a masked id, which is no word, does not count.
func WordsMostlyIntact(before, after string) bool {
	want, got := words(before), words(after)
	if len(want) == 0 {
		return true
	}
	kept := 0
	for _, w := range want {
		for len(got) > 0 && got[0] != w {
			got = got[1:]
		}
		if len(got) > 0 {
			kept++
			got = got[1:]
		}
	}
	return 10*kept >= 9*len(want)
}

func words(s string) []string {
	var out []string
	for _, tok := range strings.FieldsFunc(s, unicode.IsSpace) {
		if strings.IndexFunc(tok, unicode.IsDigit) >= 0 {
			continue
		}
		rs := []rune(tok)
		for i := 0; i < len(rs); {
			j := i
			for j < len(rs) && unicode.IsLetter(rs[j]) {
				j++
			}
			if j-i >= 2 {
				out = append(out, string(rs[i:j]))
			}
			i = max(j, i+1)
		}
	}
	return out
}

// Figures are the measures of one set through one redactor.
type Figures struct {
	Lines, Secrets, Leaks     int // planted lines, their values, the values that leak
	Ordinary, Changed, Broken int // ordinary lines, those changed at all, those whose words are not mostly intact
	Verbatim, VerbatimChanged int
	Time                      time.Duration // to redact every line of the set once
}

// Measure redacts every line of s with redact and counts. Each leak, and
// each ordinary line whose words break or verbatim line that changes, is
// given to log when it is set.
func Measure(s Set, redact func(string) string, log func(format string, args ...any)) Figures {
	var f Figures
	start := time.Now()
	for _, p := range s.Planted {
		out := redact(p.Line)
		f.Lines++
		f.Secrets += len(p.Secrets)
		for _, v := range Leaks(p, out) {
			f.Leaks++
			if log != nil {
				log("%s: %s: %q leaks\n  in:  %s\n  out: %s", s.Name, p.Class, v, p.Line, out)
			}
		}
	}
	for _, l := range s.Ordinary {
		out := redact(l)
		f.Ordinary++
		if out != l {
			f.Changed++
		}
		if !WordsMostlyIntact(l, out) {
			f.Broken++
			if log != nil {
				log("%s: ordinary words lost:\n  in:  %s\n  out: %s", s.Name, l, out)
			}
		}
	}
	for _, l := range s.Verbatim {
		f.Verbatim++
		if out := redact(l); out != l {
			f.VerbatimChanged++
			if log != nil {
				log("%s: verbatim line changed:\n  in:  %s\n  out: %s", s.Name, l, out)
			}
		}
	}
	f.Time = time.Since(start)
	return f
}

// String prints the figures on one line.
func (f Figures) String() string {
	return fmt.Sprintf("planted %d lines, %d secrets, %d leak (%s); ordinary %d lines, %d changed (%s), %d words not intact (%s); verbatim %d lines, %d changed; %s",
		f.Lines, f.Secrets, f.Leaks, pct(f.Leaks, f.Secrets), f.Ordinary, f.Changed, pct(f.Changed, f.Ordinary), f.Broken, pct(f.Broken, f.Ordinary),
		f.Verbatim, f.VerbatimChanged, f.Time.Round(time.Millisecond))
}

func pct(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(n)/float64(of))
}

// Label names the set with its role, for reports.
func (s Set) Label() string {
	switch {
	case !s.Tuned:
		return s.Name + " (never tuned on, not gated)"
	case s.Training:
		return s.Name + " (training)"
	case s.Name == "gitleaks":
		return s.Name + " (external examples)"
	case !s.Gated():
		return s.Name + " (tuned, not gated yet)"
	}
	return s.Name + " (tuned)"
}
