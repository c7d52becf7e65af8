package benchfmt_test

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/bench/internal/benchfmt"
)

const output = `goos: linux
goarch: amd64
pkg: github.com/toolcanon/toolcanon/canonical/memstore
cpu: AMD EPYC 7B13
BenchmarkBeginLive       	  200000	      5123 ns/op	      2100 p50-ns	     91000 p99.9-ns	    1200000 max-ns
BenchmarkBeginLive-2     	  300000	      4020 ns/op	      1900 p50-ns	     80000 p99.9-ns	    1500000 max-ns
BenchmarkScaling/callers=8       	   12345	     96521 ns/op	     10360 lifecycles/s
BenchmarkScaling/callers=8-2     	   22345	     50000 ns/op	     20000 lifecycles/s
--- BENCH: BenchmarkScaling
    memstore_test.go:88: a log line: with a colon
PASS
ok  	github.com/toolcanon/toolcanon/canonical/memstore	12.3s
goos: linux
goarch: amd64
pkg: github.com/toolcanon/toolcanon/projectors
BenchmarkProjectionSizes/querylog/toolcanon/1KiB-2         	  100000	     10500 ns/op	  97.52 MB/s	    2048 B/op	      12 allocs/op
BenchmarkNoisy-2   	something the benchmark printed
BenchmarkSplit-2
stdout of the benchmark
      1000	   1234.5 ns/op
BenchmarkBroken-2   	 12 ns/op
ok  	github.com/toolcanon/toolcanon/projectors	3.2s
`

func TestParse(t *testing.T) {
	rs, err := benchfmt.Parse(strings.NewReader(output))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, format(r))
	}
	want := []string{
		"BenchmarkBeginLive\t200000\t5123 ns/op\t2100 p50-ns\t91000 p99.9-ns\t1.2e+06 max-ns",
		"BenchmarkBeginLive-2\t300000\t4020 ns/op\t1900 p50-ns\t80000 p99.9-ns\t1.5e+06 max-ns",
		"BenchmarkScaling/callers=8\t12345\t96521 ns/op\t10360 lifecycles/s",
		"BenchmarkScaling/callers=8-2\t22345\t50000 ns/op\t20000 lifecycles/s",
		"BenchmarkProjectionSizes/querylog/toolcanon/1KiB-2\t100000\t10500 ns/op\t97.52 MB/s\t2048 B/op\t12 allocs/op",
		"BenchmarkSplit-2\t1000\t1234.5 ns/op",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("results:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rs[1].Name != "BenchmarkBeginLive" || rs[1].Procs != 2 || rs[0].Procs != 1 {
		t.Errorf("procs: %+v %+v", rs[0], rs[1])
	}
	if v, ok := rs[1].Metric("p99.9-ns"); !ok || v != 80000 {
		t.Errorf("p99.9-ns = %v, %v", v, ok)
	}
	if _, ok := rs[1].Metric("MB/s"); ok {
		t.Error("a metric the line does not have")
	}
	if p := rs[4].Parts(); len(p) != 4 || p[1] != "querylog" || p[3] != "1KiB" {
		t.Errorf("parts = %q", p)
	}
}

func TestSplitProcs(t *testing.T) {
	for line, want := range map[string]struct {
		name  string
		procs int
	}{
		"BenchmarkA-16 1 1 ns/op":    {"BenchmarkA", 16},
		"BenchmarkA 1 1 ns/op":       {"BenchmarkA", 1},
		"BenchmarkA-1 1 1 ns/op":     {"BenchmarkA-1", 1}, // Go never appends -1
		"BenchmarkA-02 1 1 ns/op":    {"BenchmarkA-02", 1},
		"BenchmarkA/x-y 1 1 ns/op":   {"BenchmarkA/x-y", 1},
		"BenchmarkA/n-5-2 1 1 ns/op": {"BenchmarkA/n-5", 2},
		"BenchmarkA- 1 1 ns/op":      {"BenchmarkA-", 1},
	} {
		r, ok := benchfmt.ParseLine(line)
		if !ok || r.Name != want.name || r.Procs != want.procs {
			t.Errorf("%q: %q procs %d (ok %v), want %q procs %d", line, r.Name, r.Procs, ok, want.name, want.procs)
		}
	}
}

func TestNotResults(t *testing.T) {
	for _, line := range []string{"", "PASS", "BenchmarkX", "BenchmarkX-2 12 ns/op", "BenchmarkX 0 1 ns/op", "BenchmarkX -3 1 ns/op",
		"BenchmarkX 10 abc ns/op", "Benchmark 10 1", "ok  	pkg	1s", "--- FAIL: BenchmarkX", "XBenchmark 1 1 ns/op"} {
		if r, ok := benchfmt.ParseLine(line); ok {
			t.Errorf("%q read as %+v", line, r)
		}
	}
}

func TestLineTooLong(t *testing.T) {
	long := "BenchmarkA 1 1 ns/op\n" + strings.Repeat("x", benchfmt.MaxLine+1) + "\n"
	rs, err := benchfmt.Parse(strings.NewReader(long))
	if err == nil || len(rs) != 1 {
		t.Fatalf("%d results, err %v; want the first result and an error", len(rs), err)
	}
}

// FuzzParseLine: a line read as a result formats back to a line read as the
// same result, and Parse never fails on a short input.
func FuzzParseLine(f *testing.F) {
	for _, l := range strings.Split(output, "\n") {
		f.Add(l)
	}
	f.Add("BenchmarkA/n-5-2 +7 0x1p-2 ns/op NaN x -Inf y")
	f.Fuzz(func(t *testing.T, line string) {
		if _, err := benchfmt.Parse(strings.NewReader(line + "\n" + line)); err != nil {
			t.Fatal(err)
		}
		r, ok := benchfmt.ParseLine(line)
		if !ok {
			return
		}
		back, ok := benchfmt.ParseLine(format(r))
		if !ok || !equal(r, back) {
			t.Fatalf("%q → %+v → %q → %+v (%v)", line, r, format(r), back, ok)
		}
	})
}

// format writes r as a result line that ParseLine reads back to r.
func format(r benchfmt.Result) string {
	var b strings.Builder
	b.WriteString(r.Name)
	if r.Procs != 1 {
		fmt.Fprintf(&b, "-%d", r.Procs)
	}
	fmt.Fprintf(&b, "\t%d", r.Iterations)
	for _, m := range r.Metrics {
		fmt.Fprintf(&b, "\t%s %s", strconv.FormatFloat(m.Value, 'g', -1, 64), m.Unit)
	}
	return b.String()
}

// equal reports whether a and b are the same result line (NaN values are
// equal to each other).
func equal(a, b benchfmt.Result) bool {
	if a.Name != b.Name || a.Procs != b.Procs || a.Iterations != b.Iterations || len(a.Metrics) != len(b.Metrics) {
		return false
	}
	for i := range a.Metrics {
		x, y := a.Metrics[i], b.Metrics[i]
		if x.Unit != y.Unit || !(x.Value == y.Value || math.IsNaN(x.Value) && math.IsNaN(y.Value)) {
			return false
		}
	}
	return true
}
