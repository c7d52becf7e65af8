// Package benchfmt reads the output of `go test -bench`: the result lines
// in the standard benchmark format, with any metric (ns/op, MB/s, B/op,
// allocs/op and every unit a benchmark reports with b.ReportMetric). Other
// lines (goos, pkg, cpu, PASS, a benchmark's logs) are skipped.
//
// A result line is the benchmark's name, its iteration count and pairs of a
// value and its unit:
//
//	BenchmarkScaling/callers=8-2   	   12345	     96521 ns/op	  10360 lifecycles/s
//
// The "-2" suffix is the GOMAXPROCS the test binary appends when it is not
// 1 (-cpu); it is read into Procs and removed from Name. A suffix of a
// sub-benchmark's own name that looks the same ("-2", with no GOMAXPROCS
// suffix after it) cannot be told apart and is read the same way. When a
// benchmark writes to standard output while it runs, its name and its
// numbers can land on different lines; a line holding the name alone is
// joined to the next line that holds numbers alone.
//
// Every line is read once; reading is linear in the input.
package benchfmt

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// MaxLine bounds the length of a line that Parse reads.
const MaxLine = 1 << 20

// Metric is one value of a result and its unit.
type Metric struct {
	Value float64
	Unit  string
}

// Result is one benchmark result line.
type Result struct {
	// Name is the full name without the GOMAXPROCS suffix:
	// "BenchmarkX/sub/case".
	Name string
	// Procs is the GOMAXPROCS of the run: the name's suffix, or 1.
	Procs int
	// Iterations is b.N.
	Iterations int64
	// Metrics are the values in the order of the line.
	Metrics []Metric
}

// Metric returns the value of unit, if the result has it.
func (r Result) Metric(unit string) (float64, bool) {
	for _, m := range r.Metrics {
		if m.Unit == unit {
			return m.Value, true
		}
	}
	return 0, false
}

// Parts returns the name split at "/": the top-level benchmark, then its
// sub-benchmarks.
func (r Result) Parts() []string { return strings.Split(r.Name, "/") }

// ParseLine reads one result line. ok is false when line is not one.
func ParseLine(line string) (r Result, ok bool) { return parseFields(strings.Fields(line)) }

// parseFields reads the fields of one result line.
func parseFields(fields []string) (Result, bool) {
	if len(fields) < 2 || !isName(fields[0]) {
		return Result{}, false
	}
	name, procs := splitProcs(fields[0])
	iters, metrics, ok := parseNumbers(fields[1:])
	if !ok {
		return Result{}, false
	}
	return Result{Name: name, Procs: procs, Iterations: iters, Metrics: metrics}, true
}

// isName reports whether f is a benchmark name.
func isName(f string) bool {
	return strings.HasPrefix(f, "Benchmark")
}

// parseNumbers reads an iteration count and value–unit pairs.
func parseNumbers(fields []string) (int64, []Metric, bool) {
	if len(fields) < 1 || len(fields)%2 != 1 {
		return 0, nil, false
	}
	iters, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil || iters < 1 {
		return 0, nil, false
	}
	metrics := make([]Metric, 0, len(fields)/2)
	for i := 1; i < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			return 0, nil, false
		}
		metrics = append(metrics, Metric{Value: v, Unit: fields[i+1]})
	}
	return iters, metrics, true
}

// splitProcs removes a "-N" GOMAXPROCS suffix (N >= 2, no leading zero).
func splitProcs(name string) (string, int) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 || i == len(name)-1 || name[i+1] == '0' {
		return name, 1
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 2 || strconv.Itoa(n) != name[i+1:] {
		return name, 1
	}
	return name[:i], n
}

// Parse reads every result of r, in order. It fails only when r fails or a
// line is longer than MaxLine.
func Parse(r io.Reader) ([]Result, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), MaxLine)
	var out []Result
	pending := "" // a name whose numbers are still to come
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if res, ok := parseFields(fields); ok {
			out = append(out, res)
			pending = ""
			continue
		}
		if isName(fields[0]) {
			pending = ""
			if len(fields) == 1 {
				pending = fields[0]
			}
			continue
		}
		if pending != "" {
			if iters, metrics, ok := parseNumbers(fields); ok {
				name, procs := splitProcs(pending)
				out = append(out, Result{Name: name, Procs: procs, Iterations: iters, Metrics: metrics})
				pending = ""
			}
		}
	}
	if err := sc.Err(); err != nil {
		return out, err
	}
	return out, nil
}
