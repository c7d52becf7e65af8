package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// depsCommands reads the commands and Debian packages .ci/deps lists.
func depsCommands(t *testing.T) (cmds, pkgs []string) {
	t.Helper()
	b, err := os.ReadFile("../.ci/deps")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^  "([a-z-]+)\|([a-z-]+)\|[^"]+"$`).FindAllStringSubmatch(string(b), -1) {
		cmds, pkgs = append(cmds, m[1]), append(pkgs, m[2])
	}
	if len(cmds) < 8 {
		t.Fatalf(".ci/deps lists %d dependencies", len(cmds))
	}
	return cmds, pkgs
}

// runDeps runs .ci/deps with nothing on PATH but bin.
func runDeps(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, append([]string{"../.ci/deps"}, args...)...)
	cmd.Env = []string{"PATH=" + bin}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// fakeBin is a directory of commands that do nothing, one for each of
// names (a dependency the check then finds installed).
func fakeBin(t *testing.T, names ...string) string {
	t.Helper()
	bin := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(bin, n), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// On a machine with everything but chromium, what make test runs first
// (.ci/deps ensure) stops at once with one line that names what is missing,
// what needs it, and the one command that installs it; as root with apt-get
// it installs it instead.
func TestDepsCheckNamesTheOneCommand(t *testing.T) {
	cmds, _ := depsCommands(t)
	var others []string
	for _, c := range cmds {
		if c != "chromium" {
			others = append(others, c)
		}
	}
	const missing = "make test needs chromium (for the UI's browser tests), which is not installed: "

	bin := fakeBin(t, others...)
	out, code := runDeps(t, bin, "ensure")
	if want := missing + "install it with your system's package manager (Debian's names; make setup needs apt-get)\n"; code != 1 || out != want {
		t.Fatalf("without apt-get: exit %d, output\n%q\nwant\n%q", code, out, want)
	}

	// With apt-get (here one that logs its arguments and installs chromium).
	log := filepath.Join(t.TempDir(), "apt-get.log")
	chmod, err := exec.LookPath("chmod")
	if err != nil {
		t.Fatal(err)
	}
	apt := "#!/bin/sh\necho \"$*\" >>" + log + "\ncase \"$*\" in *install*chromium*) printf '#!/bin/sh\\n' >" +
		filepath.Join(bin, "chromium") + "; " + chmod + " +x " + filepath.Join(bin, "chromium") + ";; esac\n"
	if err := os.WriteFile(filepath.Join(bin, "apt-get"), []byte(apt), 0o755); err != nil {
		t.Fatal(err)
	}
	how := "run 'make setup', which installs it with apt-get\n"
	if os.Geteuid() != 0 {
		how = "run 'sudo make setup', which installs it with apt-get\n"
	}
	if out, code := runDeps(t, bin, "check"); code != 1 || out != missing+how {
		t.Fatalf("check: exit %d, output\n%q\nwant\n%q", code, out, missing+how)
	}
	out, code = runDeps(t, bin, "ensure")
	if os.Geteuid() != 0 {
		if code != 1 || out != missing+how {
			t.Fatalf("ensure, not root: exit %d, %q", code, out)
		}
		return
	}
	logged, _ := os.ReadFile(log)
	if code != 0 || out != "installing with apt-get: chromium\n" || string(logged) != "update -qq\ninstall -y -qq chromium\n" {
		t.Fatalf("ensure as root: exit %d, %q; apt-get ran %q", code, out, logged)
	}
	if out, code := runDeps(t, bin, "ensure"); code != 0 || out != "" {
		t.Fatalf("ensure with everything there: exit %d, %q", code, out)
	}
}

// The README says exactly what make test needs: the packages .ci/deps
// lists, which make setup and .ci/run install.
func TestReadmeNamesWhatMakeTestNeeds(t *testing.T) {
	_, pkgs := depsCommands(t)
	out, code := runDeps(t, t.TempDir(), "list")
	if code != 0 || out != strings.Join(pkgs, " ")+"\n" {
		t.Fatalf(".ci/deps list: exit %d, %q", code, out)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "`"+strings.Join(pkgs, " ")+"`") {
		t.Fatalf("the README does not name the packages make test needs: `%s`", strings.Join(pkgs, " "))
	}
}
