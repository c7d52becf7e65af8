package test

import (
	"encoding/json"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// workspaceModules returns the directories go.work uses, as written there.
func workspaceModules(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("go", "work", "edit", "-json")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go work edit -json: %v", err)
	}
	var work struct{ Use []struct{ DiskPath string } }
	if err := json.Unmarshal(out, &work); err != nil {
		t.Fatalf("go work edit -json: %v\n%s", err, out)
	}
	var dirs []string
	for _, u := range work.Use {
		dirs = append(dirs, filepath.Clean(u.DiskPath))
	}
	return dirs
}

// Every module of the repository is in go.work, so that the Makefile, which
// takes its module list from there, lints, vets and tests it; and no go.mod
// has a replace directive or a version of this repository's modules other
// than the placeholder go.work resolves, so each would work as a tagged
// version.
func TestEveryModuleIsInTheWorkspace(t *testing.T) {
	root := moduleRoot(t)
	var found []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "third_party") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "go.mod" {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			found = append(found, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	used := workspaceModules(t, root)
	slices.Sort(found)
	slices.Sort(used)
	if !slices.Equal(found, used) {
		t.Fatalf("go.mod files at %v, go.work uses %v: add each module's directory to go.work", found, used)
	}
	if len(used) < 2 {
		t.Fatalf("go.work uses %v only", used)
	}

	for _, dir := range used {
		cmd := exec.Command("go", "mod", "edit", "-json")
		cmd.Dir = filepath.Join(root, dir)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go mod edit -json in %s: %v", dir, err)
		}
		var mod struct {
			Module  struct{ Path string }
			Require []struct{ Path, Version string }
			Replace []struct{ Old struct{ Path string } }
		}
		if err := json.Unmarshal(out, &mod); err != nil {
			t.Fatal(err)
		}
		want := module
		if dir != "." {
			want = module + "/" + filepath.ToSlash(dir)
		}
		if mod.Module.Path != want {
			t.Errorf("%s/go.mod is module %s, want %s: a nested module keeps its directory's import path", dir, mod.Module.Path, want)
		}
		if len(mod.Replace) > 0 {
			t.Errorf("%s/go.mod has replace directives %v: go.work resolves this repository's modules", dir, mod.Replace)
		}
		for _, r := range mod.Require {
			if (r.Path == module || strings.HasPrefix(r.Path, module+"/")) && r.Version != "v0.0.0-00010101000000-000000000000" {
				t.Errorf("%s/go.mod requires %s %s: the workspace resolves v0.0.0-00010101000000-000000000000 only", dir, r.Path, r.Version)
			}
		}
	}

	// The Makefile's test targets cover every module.
	cmd := exec.Command("make", "-n", "-s", "test-short")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Skipf("make -n test-short: %v\n%s", err, out)
	}
	for _, dir := range used {
		pattern := "./" + filepath.ToSlash(dir) + "/..."
		if dir == "." {
			pattern = "./..."
		}
		if !strings.Contains(string(out), " "+pattern) {
			t.Errorf("make test-short does not test %s: %s", pattern, out)
		}
	}
	t.Logf("%d modules: %v", len(used), used)
}

// Every module's go.mod and go.sum are tidy: .ci/tidy -diff (make
// check-tidy) tidies each through a copy that go.work's placeholder
// versions resolve in, and changes nothing.
func TestModulesAreTidy(t *testing.T) {
	root := moduleRoot(t)
	cmd := exec.Command("bash", filepath.Join(root, ".ci", "tidy"), "-diff")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf(".ci/tidy -diff: %v\n%s", err, out)
	}
}
