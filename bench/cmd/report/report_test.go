package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/bench"
	"github.com/toolcanon/toolcanon/bench/internal/benchfmt"
)

func results(t *testing.T, out string) []benchfmt.Result {
	t.Helper()
	rs, err := benchfmt.Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// wellFormed decodes b as XML to its end and counts its elements by name
// and class ("circle.point").
func wellFormed(t *testing.T, b []byte) map[string]int {
	t.Helper()
	n := map[string]int{}
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
		if s, ok := tok.(xml.StartElement); ok {
			name := s.Name.Local
			for _, a := range s.Attr {
				if a.Name.Local == "class" {
					name += "." + a.Value
				}
			}
			n[name]++
		}
	}
}

// row returns the table row whose first cells are prefix.
func row(t *testing.T, body string, prefix ...string) []string {
	t.Helper()
	for _, l := range strings.Split(body, "\n") {
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) >= len(prefix) && strings.Join(cells[:len(prefix)], "|") == strings.Join(prefix, "|") {
			return cells
		}
	}
	t.Fatalf("no row %q in:\n%s", prefix, body)
	return nil
}

func TestProjectionSection(t *testing.T) {
	// Sizes out of order, two projectors, one size missing for one of them.
	rs := results(t, `
BenchmarkProjectionSizes/querylog/toolcanon/1MiB-2    100  1 ns/op  200.0 MB/s  10 B/op  3 allocs/op
BenchmarkProjectionSizes/querylog/encoding_json/1MiB-2  100  1 ns/op  50.0 MB/s  10 B/op  900 allocs/op
BenchmarkProjectionSizes/querylog/toolcanon/1KiB-2    100  1 ns/op  100.0 MB/s
BenchmarkProjectionSizes/querylog/encoding_json/1KiB-2  100  1 ns/op  80.0 MB/s
BenchmarkProjectionSizes/rag/toolcanon/8MiB-2    100  1 ns/op  300 MB/s
BenchmarkProjectionSizes/rag/encoding_json/8MiB-2  100  1 ns/op  30 MB/s
BenchmarkProjectionSizes/rag/toolcanon/64KiB-2    100  1 ns/op  250 MB/s
BenchmarkOther 100 1 ns/op 1 MB/s
`)
	s := projectionSection(rs, "cmd", nil)
	if r := row(t, s.Body, "querylog", "1MiB"); strings.Join(r[2:6], " ") != "200.0 50.0 4.00x 3" {
		t.Errorf("querylog 1MiB: %q", r)
	}
	if r := row(t, s.Body, "rag", "64KiB"); r[3] != "–" || r[4] != "–" {
		t.Errorf("a missing measurement is not shown as missing: %q", r)
	}
	if r := row(t, s.Body, "rag", "8MiB"); r[4] != "10.00x" {
		t.Errorf("rag 8MiB: %q", r)
	}
	if strings.Contains(s.Body, "BenchmarkOther") || strings.Contains(s.Body, "rag | 1KiB") {
		t.Errorf("rows that were not measured:\n%s", s.Body)
	}
	// Each projector's rows go by size, though the input has them the other way.
	for _, p := range [][2]string{{"| querylog | 1KiB |", "| querylog | 1MiB |"}, {"| rag | 64KiB |", "| rag | 8MiB |"}} {
		if i, j := strings.Index(s.Body, p[0]), strings.Index(s.Body, p[1]); i < 0 || j < i {
			t.Errorf("%q is not before %q:\n%s", p[0], p[1], s.Body)
		}
	}
	if len(s.Charts) != 1 {
		t.Fatalf("%d charts", len(s.Charts))
	}
	n := wellFormed(t, s.Charts[0].SVG)
	if n["circle.point"] != 7 || n["path.line"] != 4 || n["rect.swatch"] != 4 {
		t.Errorf("chart elements: %v", n)
	}
	if s := projectionSection(results(t, "BenchmarkOther 1 1 ns/op"), "cmd", nil); !strings.HasPrefix(s.Body, "Not measured") || len(s.Charts) != 0 {
		t.Errorf("no projection results: %+v", s)
	}
}

func TestMemstoreSection(t *testing.T) {
	rs := results(t, `
BenchmarkBeginLive       	  200000	      5123 ns/op	      2100 p50-ns	     91000 p99.9-ns	    1200000 max-ns
BenchmarkBeginLive-2     	  300000	      4020 ns/op	      1900 p50-ns	     80000 p99.9-ns	    1500000 max-ns
BenchmarkScaling/callers=8       	   12345	     96521 ns/op	     10000 lifecycles/s
BenchmarkScaling/callers=8-2     	   22345	     50000 ns/op	     19000 lifecycles/s
BenchmarkScaling/callers=64-2     	   22345	     50000 ns/op	     21000 lifecycles/s
`)
	s := memstoreSection(rs, "cmd", nil)
	if r := row(t, s.Body, "BenchmarkBeginLive", "2"); strings.Join(r[2:5], " ") != "1.9 µs 80.0 µs 1.50 ms" {
		t.Errorf("BeginLive at 2: %q", r)
	}
	if r := row(t, s.Body, "BenchmarkScaling/callers=8"); strings.Join(r[1:], " ") != "10000 19000 1.90x" {
		t.Errorf("scaling: %q", r)
	}
	if r := row(t, s.Body, "BenchmarkScaling/callers=64"); strings.Join(r[1:], " ") != "– 21000 –" {
		t.Errorf("scaling without GOMAXPROCS=1: %q", r)
	}
	if len(s.Charts) != 1 || wellFormed(t, s.Charts[0].SVG)["circle.point"] != 3 {
		t.Errorf("scaling chart: %+v", s.Charts)
	}
	s = memstoreSection(of(rs, "BenchmarkBeginLive"), "cmd", nil)
	if !strings.Contains(s.Body, "Not measured: no BenchmarkScaling") || !strings.Contains(s.Body, "80.0 µs") {
		t.Errorf("BeginLive alone:\n%s", s.Body)
	}
}

func TestRecordMemorySection(t *testing.T) {
	rs := results(t, `
BenchmarkRecordMemory/1KiB-2   10  1 ns/op  1500 B/record  1024 payload-B/record  476 overhead-B/record
BenchmarkRecordMemory/64KiB-2  10  1 ns/op  66000 B/record  65536 payload-B/record  464 overhead-B/record
`)
	s := recordMemorySection(rs, "cmd", nil)
	if r := row(t, s.Body, "BenchmarkRecordMemory/1KiB"); strings.Join(r[1:5], " ") != "2 1500 1024 476" || r[len(r)-1] != "46.5%" {
		t.Errorf("1KiB: %q", r)
	}
	if s := recordMemorySection(nil, "cmd", errors.New("build failed")); s.Body != "Not measured: build failed\n" {
		t.Errorf("failed command: %q", s.Body)
	}
}

func TestCompareSection(t *testing.T) {
	ok := bench.Columns{Rounds: 3, Beginners: 600, Completers: 96, WinnerStored: 3, Records: 600}
	c := &bench.Comparison{RedisVersion: "7.0.15", GOMAXPROCS: 2, PassDuration: time.Second, Reps: 5, Callers: []int{1, 64},
		CeilingBatch: 128, Contention: bench.Sizes{Beginners: 200, Completers: 32, Records: 200, Rounds: 3},
		Results: []bench.Result{
			{Name: bench.NameRedisStore, Ours: true, RoundTrips: 2, Correctness: ok, Passes: []bench.Pass{
				{Callers: 1, Rates: []float64{3000}, P50: 300 * time.Microsecond, P99: time.Millisecond},
				{Callers: 64, Rates: []float64{10000, 9000, 11000}, P50: 6 * time.Millisecond, P99: 20 * time.Millisecond}}},
			{Name: bench.NameSeed, RoundTrips: 5, ServerCommands: 11.5, Correctness: bench.Columns{Rounds: 3, Beginners: 600, DuplicatesExecuted: 597, WinnerStored: 3}, Passes: []bench.Pass{
				{Callers: 1, Rates: []float64{1500}, P50: 250 * time.Microsecond, P99: 2 * time.Millisecond},
				{Callers: 64, Rates: []float64{5000}, P50: 12 * time.Millisecond, P99: 40 * time.Millisecond}}},
			{Name: bench.NameFloor, RoundTrips: 2, ServerCommands: 2, Passes: []bench.Pass{
				{Callers: 1, Rates: []float64{12000}, P50: 80 * time.Microsecond, P99: time.Millisecond},
				{Callers: 64, Rates: []float64{40000}, P50: time.Millisecond, P99: 5 * time.Millisecond}}},
			{Name: bench.NamePostgres, RoundTrips: 2, ServerCommands: -1, Correctness: ok, Passes: []bench.Pass{
				{Callers: 1, Rates: []float64{1000}, P50: time.Millisecond, P99: 3 * time.Millisecond},
				{Callers: 64, Rates: []float64{2000, 1000, 3000}, P50: 30 * time.Millisecond, P99: 90 * time.Millisecond}}},
		}}
	c.PostgresVersion, c.PostgresConns = "15.18", 16
	s := compareSection(c, "cmd", nil)
	if r := row(t, s.Body, "seed"); strings.Join(r[1:], " ") != "5 11.50 1500 0.50x 0.250 ms 2.00 ms 5000 0.50x 12.0 ms 40.0 ms" {
		t.Errorf("seed row: %q", r)
	}
	if r := row(t, s.Body, "redisstore", "0 / 600"); strings.Join(r[2:], " ") != "0 / 96 3 / 3 0 / 600 0 ms" {
		t.Errorf("correctness row: %q", r)
	}
	if r := row(t, s.Body, "seed", "597 / 600"); len(r) != 6 {
		t.Errorf("seed correctness row: %q", r)
	}
	if r := row(t, s.Body, "floor", "-"); strings.Join(r[1:], " ") != "- - - - -" {
		t.Errorf("floor correctness row: %q", r)
	}
	if r := row(t, s.Body, "postgres", "0 / 600"); strings.Join(r[2:], " ") != "0 / 96 3 / 3 0 / 600 0 ms" {
		t.Errorf("postgres correctness row: %q", r)
	}
	if r := row(t, s.Body, "callers"); strings.Join(r[1:], " ") != "redisstore ÷ floor redisstore ÷ postgres" {
		t.Errorf("ratio head: %q", r)
	}
	if r := row(t, s.Body, "1"); strings.Join(r[1:], " ") != "0.25x 3.00x" {
		t.Errorf("ratios at 1 caller: %q", r)
	}
	if r := row(t, s.Body, "64"); strings.Join(r[1:], " ") != "0.25x 5.00x" {
		t.Errorf("ratios at 64 callers: %q", r)
	}
	if !strings.Contains(s.Body, "PostgreSQL 15.18") || !strings.Contains(s.Body, "a pool of 16 connections") {
		t.Errorf("the section does not say what postgres ran on:\n%s", s.Body)
	}
	if len(s.Charts) != 2 {
		t.Fatalf("%d charts", len(s.Charts))
	}
	if n := wellFormed(t, s.Charts[0].SVG); n["rect.bar"] != 8 {
		t.Errorf("throughput chart: %v", n)
	}
	if n := wellFormed(t, s.Charts[1].SVG); n["rect.bar"] != 16 {
		t.Errorf("latency chart: %v", n)
	}
	for _, name := range []string{">floor<", ">postgres<"} {
		if !bytes.Contains(s.Charts[0].SVG, []byte(name)) {
			t.Errorf("the throughput chart has no %s bar label", name)
		}
	}
	// Eight rows widen the charts, so that their names stay apart.
	for _, name := range []string{"a", "b", "c", "d"} {
		r := c.Results[1]
		r.Name = name
		c.Results = append(c.Results, r)
	}
	for _, ch := range compareSection(c, "cmd", nil).Charts {
		if !bytes.Contains(ch.SVG, []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="1200" `)) {
			t.Errorf("%s with 8 rows is not 1200 px wide: %.120s", ch.File, ch.SVG)
		}
	}
	if s := compareSection(nil, "cmd", errors.New("no redis")); s.Body != "Not measured: no redis\n" || len(s.Charts) != 0 {
		t.Errorf("failed comparison: %+v", s)
	}
}

func TestRender(t *testing.T) {
	m := machine{Date: "2026-01-01 00:00:00", CPU: "a | b", Cores: 2, Go: "go version go1.26", Redis: "Redis server v=7"}
	secs := []section{
		{Title: "One", Command: "go test -bench '^X$'", Body: "body\n", Charts: []chart{{File: "x.svg", Alt: "an x"}}},
		notMeasured("Two", "cmd", "no result"),
	}
	out := render(m, "report", secs)
	for _, s := range []string{"| CPU | a \\| b |", "| cores | 2 |", "## One", "`go test -bench '^X$'`", "![an x](report/x.svg)",
		"## Two", "Not measured: no result", "go version go1.26", "Redis server v=7"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
}

func TestSizeBytes(t *testing.T) {
	for s, want := range map[string]int64{"1KiB": 1024, "64KiB": 65536, "1MiB": 1 << 20, "8MiB": 8 << 20, "512B": 512, "big": -1, "xKiB": -1} {
		if got := sizeBytes(s); got != want {
			t.Errorf("sizeBytes(%q) = %d, want %d", s, got, want)
		}
	}
}
