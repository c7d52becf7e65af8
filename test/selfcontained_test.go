package test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// moduleRoot is the repository's root: the directory of go.mod above this
// package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// relPath matches a relative path that climbs with "..": the climb and what
// follows it up to a quote, space or bracket.
var relPath = regexp.MustCompile("(?:\\.\\./)+[^\\s\"'`)\\]};,]*|\\.\\.$")

// escapes returns the paths in text that, read relative to dir, leave root.
func escapes(root, dir, text string) []string {
	var out []string
	for _, m := range relPath.FindAllString(text, -1) {
		p := filepath.Clean(filepath.Join(dir, m))
		if rel, err := filepath.Rel(root, p); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			out = append(out, m)
		}
	}
	return out
}

func TestEscapesSeesPathsThatLeaveTheRepository(t *testing.T) {
	root := "/r"
	for _, c := range []struct {
		dir, text string
		leaves    bool
	}{
		{"/r/registry", `os.ReadFile("../../outside/testdata/x.json")`, true},
		{"/r/registry", `filepath.Glob("../lua/*.lua")`, false},
		{"/r/internal/scripts_gen", `os.ReadFile("../../canonical/redisstore/scripts_gen.go")`, false},
		{"/r", `go run ./projectors/cmd/evalpatterns -dir ../outside/testdata/loghub`, true},
		{"/r/a", "`../../../etc/passwd`", true},
		{"/r/a", `x := "plain ./path"`, false},
	} {
		got := escapes(root, c.dir, c.text)
		if (len(got) > 0) != c.leaves {
			t.Errorf("%s in %s: escapes %q, want leaving=%v", c.text, c.dir, got, c.leaves)
		}
	}
}

// Nothing a user's clone runs for its tests may read outside the
// repository: every test file, fuzz seed, Makefile target and the CI script
// stays inside it, and nothing names a directory beside it.
func TestTestsStayInsideTheRepository(t *testing.T) {
	root := moduleRoot(t)
	checked := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") && name != ".ci" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if !strings.HasSuffix(name, "_test.go") && name != "Makefile" && path != filepath.Join(root, ".ci", "run") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		dir := filepath.Dir(path)
		if name == "Makefile" {
			dir = root // make runs its recipes from the root
		}
		if name == "selfcontained_test.go" {
			return nil // this file's own examples above
		}
		for _, e := range escapes(root, dir, string(b)) {
			t.Errorf("%s refers to %q, which leaves the repository", rel, e)
		}
		if strings.Contains(string(b), "TOOLCANON_"+"SHARED") {
			t.Errorf("%s names a directory outside the repository through an environment variable", rel)
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d files checked: the walk did not see the repository", checked)
	}
	t.Logf("%d test files, Makefiles and the CI script checked: none leaves the repository", checked)
}
