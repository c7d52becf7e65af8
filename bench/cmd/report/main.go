// Command report measures toolcanon and writes bench/REPORT.md: the machine
// and the Go and Redis versions, the lifecycle comparison of bench/cmd/compare
// (throughput, latency, round trips and correctness against the baselines),
// projection throughput by input size, memstore's latency and scaling with
// GOMAXPROCS and redisstore's memory per record, with SVG charts drawn by
// package svgchart beside the report.
//
// Usage (from the module's root; `make bench-report`):
//
//	go run ./bench/cmd/report [-out bench/REPORT.md] [-compare "-d 1s -reps 5 -rounds 3"] [-benchtime 1s] [-only compare,projection,memstore,memory]
//
// Every measurement is a command run here and read back: `go run
// ./bench/cmd/compare -json` and `go test -bench`, whose output is read by
// package benchfmt whatever units the benchmarks report. A section whose
// benchmark does not exist, or whose command fails, says "Not measured" and
// why; the report is written all the same.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/toolcanon/toolcanon/bench"
	"github.com/toolcanon/toolcanon/bench/internal/benchfmt"
)

// sectionNames are the parts -only selects from.
var sectionNames = []string{"compare", "projection", "memstore", "memory"}

func main() {
	out := flag.String("out", "bench/REPORT.md", "the report to write; charts go to a report/ directory beside it")
	compareFlags := flag.String("compare", "-d 1s -reps 5 -rounds 3", "flags of bench/cmd/compare")
	benchtime := flag.String("benchtime", "1s", "-benchtime of the go test benchmarks")
	only := flag.String("only", strings.Join(sectionNames, ","), "sections to measure; the others say not measured")
	flag.Parse()
	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(sectionNames, s) {
			fmt.Fprintf(os.Stderr, "report: unknown section %q (known: %s)\n", s, strings.Join(sectionNames, ", "))
			os.Exit(2)
		}
		want[s] = true
	}
	if err := report(*out, strings.Fields(*compareFlags), *benchtime, want); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func report(out string, compareFlags []string, benchtime string, want map[string]bool) error {
	start := time.Now()
	m := describe()
	var secs []section
	skipped := errors.New("not selected with -only")

	compareCmd := append([]string{"go", "run", "./bench/cmd/compare", "-json", "-v"}, compareFlags...)
	if want["compare"] {
		c, err := runCompare(compareCmd)
		secs = append(secs, compareSection(c, strings.Join(compareCmd, " "), err))
	} else {
		secs = append(secs, compareSection(nil, strings.Join(compareCmd, " "), skipped))
	}
	for _, b := range []struct {
		name  string
		args  [][]string // one go test command each; a section may need several
		build func([]benchfmt.Result, string, error) section
	}{
		{"projection", [][]string{{"-bench", "^BenchmarkProjectionSizes$", "-benchmem", "./projectors/"}}, projectionSection},
		// Each memstore benchmark in a process of its own: BeginLive keeps 500k
		// records live, and the collector marking them would slow Scaling at
		// GOMAXPROCS 1 far more than at 2. BeginLive fills its records once per
		// process and RecordMemory writes 10,000 records per iteration: both run
		// a fixed count.
		{"memstore", [][]string{
			{"-bench", "^BenchmarkBeginLive$", "-benchtime", "20000x", "./canonical/memstore/"},
			{"-bench", "^BenchmarkScaling$", "-cpu", "1,2", "./canonical/memstore/"},
		}, memstoreSection},
		{"memory", [][]string{{"-bench", "^BenchmarkRecordMemory$", "-benchtime", "1x", "./canonical/redisstore/"}}, recordMemorySection},
	} {
		var cmds []string
		var rs []benchfmt.Result
		var err error
		for _, a := range b.args {
			args := []string{"go", "test", "-run", "^$"}
			if !slices.Contains(a, "-benchtime") { // a section's own count stands alone
				args = append(args, "-benchtime", benchtime)
			}
			args = append(args, a...)
			cmds = append(cmds, strings.Join(quote(args), " "))
			if want[b.name] && err == nil {
				var r []benchfmt.Result
				r, err = runBench(args)
				rs = append(rs, r...)
			}
		}
		cmd := strings.Join(cmds, "\n")
		if !want[b.name] {
			secs = append(secs, b.build(nil, cmd, skipped))
			continue
		}
		secs = append(secs, b.build(rs, cmd, err))
	}

	m.LoadAfter = loadAverage()
	m.Duration = time.Since(start).Round(time.Second).String()
	dir := filepath.Join(filepath.Dir(out), "report")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range allCharts { // no stale chart of a section not measured this time
		_ = os.Remove(filepath.Join(dir, f))
	}
	for _, s := range secs {
		for _, c := range s.Charts {
			if err := os.WriteFile(filepath.Join(dir, c.File), c.SVG, 0o644); err != nil {
				return err
			}
		}
	}
	if err := os.WriteFile(out, []byte(render(m, "report", secs)), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "report: wrote %s and its charts in %s in %s\n", out, dir, m.Duration)
	return nil
}

// quote shell-quotes the arguments that need it, for display.
func quote(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$|() *") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}

// runCompare runs the comparison and reads its JSON; its progress goes to
// standard error.
func runCompare(args []string) (*bench.Comparison, error) {
	fmt.Fprintf(os.Stderr, "report: %s\n", strings.Join(args, " "))
	var stdout bytes.Buffer
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	var c bench.Comparison
	if err := json.Unmarshal(stdout.Bytes(), &c); err != nil {
		return nil, fmt.Errorf("read the comparison: %w", err)
	}
	return &c, nil
}

// runBench runs a go test benchmark command and reads its results. A
// failing command is an error carrying the end of its output.
func runBench(args []string) ([]benchfmt.Result, error) {
	fmt.Fprintf(os.Stderr, "report: %s\n", strings.Join(quote(args), " "))
	var output bytes.Buffer
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout = &output
	cmd.Stderr = &output
	err := cmd.Run()
	rs, perr := benchfmt.Parse(bytes.NewReader(output.Bytes()))
	if err != nil {
		return rs, fmt.Errorf("the command failed (%v): %s", err, tail(output.String(), 3))
	}
	return rs, perr
}

// tail returns the last n non-empty lines of s, joined by " / ".
func tail(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines[max(len(lines)-n, 0):], " / ")
}

// describe collects the machine, the versions and the commit.
func describe() machine {
	m := machine{Date: time.Now().UTC().Format("2006-01-02 15:04:05"), Cores: runtime.NumCPU(),
		Arch: runtime.GOARCH, CPU: "unknown", Memory: "unknown", OS: runtime.GOOS, Kernel: "unknown"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if v, ok := field(string(b), "model name", ':'); ok {
			m.CPU = v
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if v, ok := field(string(b), "MemTotal", ':'); ok {
			var kb int64
			if _, err := fmt.Sscanf(v, "%d kB", &kb); err == nil {
				m.Memory = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		if v, ok := field(string(b), "PRETTY_NAME", '='); ok {
			m.OS = strings.Trim(v, `"`) + " (" + runtime.GOOS + ")"
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.Go = output("go", "version")
	m.Redis = output("redis-server", "--version")
	m.Commit = output("git", "rev-parse", "--short", "HEAD")
	if st := output("git", "status", "--porcelain", "--untracked-files=no"); st != "" && !strings.HasPrefix(st, "unknown") {
		m.Commit += " (with uncommitted changes)"
	}
	m.LoadBefore = loadAverage()
	return m
}

// field returns the value of the first line "key<sep>value" of s.
func field(s, key string, sep byte) (string, bool) {
	for _, l := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(l, string(sep))
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// output runs a command and returns its trimmed output, or "unknown (...)".
func output(name string, args ...string) string {
	b, err := exec.Command(name, args...).Output()
	if err != nil {
		return fmt.Sprintf("unknown (%s: %v)", name, err)
	}
	return strings.TrimSpace(string(b))
}

// loadAverage returns the 1, 5 and 15 minute load averages, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], ", ")
	}
	return "unknown"
}
