package redacteval_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/projectors/internal/redacteval"
)

func TestWordsMostlyIntact(t *testing.T) {
	for _, c := range []struct {
		before, after string
		want          bool
	}{
		{"job 8f14e45f-ceea completed", "job <ID> completed", true},
		{"password=hunter2 for alice", "password=<SECRET> for alice", true},
		{"the user cancelled the order", "the <USER> the order", false},
		{"Ünïcödé wörds stay", "Ünïcödé wörds stay", true},
		{"Ünïcödé wörds stay", "Ünïcödé <ID> stay", false},
		{"a1b2 x9", "<ID> <ID>", true},
		{"checkout, then (payment).", "checkout, then (payment).", true},
		// Order counts: the same words shuffled are not the line.
		{"one two three four five six seven eight nine ten", "ten nine eight seven six five four three two one", false},
		// Nine of ten words is enough.
		{"one two three four five six seven eight nine ten", "one two three four five six seven eight nine <ID>", true},
		{"one two three four five six seven eight nine", "one two three four five six seven eight <ID>", false},
	} {
		if got := redacteval.WordsMostlyIntact(c.before, c.after); got != c.want {
			t.Errorf("WordsMostlyIntact(%q, %q) = %v, want %v", c.before, c.after, got, c.want)
		}
	}
}

func TestLeaks(t *testing.T) {
	p := redacteval.Planted{Line: "x", Secrets: []string{"4811", "Zq9vk2LmPx7Rw4Tn8Yb3", `a"b`}}
	for out, want := range map[string]int{
		"id 34811 ok":             0, // digits count standing alone
		"id 4811 ok":              1,
		"token Zq9vk2LmPx":        1, // half of it is a leak
		"token Zq9vk2L":           0,
		`{"v":"a\"b"}`:            1, // JSON-escaped
		"nothing of it":           0,
		"4811 Zq9vk2LmPx7Rw4Tn8Y": 2,
	} {
		if got := len(redacteval.Leaks(p, out)); got != want {
			t.Errorf("Leaks in %q: %d, want %d", out, got, want)
		}
	}
}

// Every directory of sets is read, with its role by name; blind comes last
// and is never tuned on.
func TestLoadRoles(t *testing.T) {
	root := t.TempDir()
	write := func(dir, file, text string) {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dir, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".", "planted.txt", "## c\nline x ‖ x\n")
	write("blind", "planted.txt", "## c\nline y ‖ y\n")
	// Class headers group ordinary and verbatim lines too: they are no lines.
	write("blind", "verbatim.txt", "# kept\n## c\nsha256:00\n")
	write("round2", "ordinary.txt", "# a comment\n## c\nnothing here\n")
	write("zeta", "ordinary.txt", "words\n")
	write("empty", "notes.md", "not a set\n")
	sets, err := redacteval.LoadOnly(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sets {
		got = append(got, fmt.Sprintf("%s training=%v blind=%v planted=%d ordinary=%d verbatim=%d", s.Name, s.Training, s.Blind(), len(s.Planted), len(s.Ordinary), len(s.Verbatim)))
	}
	want := []string{
		"first training=true blind=false planted=1 ordinary=0 verbatim=0",
		"round2 training=true blind=false planted=0 ordinary=1 verbatim=0",
		"zeta training=false blind=false planted=0 ordinary=1 verbatim=0",
		"blind training=false blind=true planted=1 ordinary=0 verbatim=1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sets:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Only the named sets are read: a set left out has none of its files
// opened, so its figures cannot be seen by accident.
func TestLoadOnly(t *testing.T) {
	root := t.TempDir()
	// A malformed planted.txt in a set left out is never read.
	for dir, text := range map[string]string{".": "## c\nline x ‖ x\n", "dev": "## c\nline y ‖ y\n", "held": "a line naming no value\n"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dir, "planted.txt"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for list, want := range map[string]string{"": "first,dev", " dev ": "dev", "first,dev": "first,dev", "first,nothing": "first"} {
		sets, err := redacteval.LoadOnly(root, redacteval.Selected(list))
		if list == "" {
			if err == nil {
				t.Errorf("every set: the malformed one read without an error")
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", list, err)
		}
		var got []string
		for _, s := range sets {
			got = append(got, s.Name)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("%q: read %v, want %s", list, got, want)
		}
	}
}
