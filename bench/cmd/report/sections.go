package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolcanon/toolcanon/bench"
	"github.com/toolcanon/toolcanon/bench/internal/benchfmt"
	"github.com/toolcanon/toolcanon/bench/internal/svgchart"
)

// section is one part of the report: a title, the command that measured
// it, its tables (markdown) and its charts.
type section struct {
	Title   string
	Command string
	Body    string // markdown; "not measured: ..." when there is nothing
	Charts  []chart
}

// chart is one SVG written beside the report.
type chart struct {
	File string // base name, e.g. "throughput.svg"
	Alt  string
	SVG  []byte
}

// Chart file names, one per kind of chart.
const (
	chartThroughput = "throughput.svg"
	chartLatency    = "latency.svg"
	chartProjection = "projection.svg"
	chartScaling    = "memstore-scaling.svg"
)

// allCharts lists every chart file the report may write.
var allCharts = []string{chartThroughput, chartLatency, chartProjection, chartScaling}

func notMeasured(title, command, why string) section {
	return section{Title: title, Command: command, Body: "Not measured: " + why + "\n"}
}

// cell escapes s for a markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
}

// table writes a markdown table; numeric columns are right-aligned.
func table(head []string, right []bool, rows [][]string) string {
	var b strings.Builder
	b.WriteString("|")
	for _, h := range head {
		b.WriteString(" " + cell(h) + " |")
	}
	b.WriteString("\n|")
	for i := range head {
		if i < len(right) && right[i] {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("|")
		for _, c := range r {
			b.WriteString(" " + cell(c) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// cellsTable writes a table whose first row is its head, with every column
// but the first right-aligned.
func cellsTable(rows [][]string) string {
	right := make([]bool, len(rows[0]))
	for i := 1; i < len(right); i++ {
		right[i] = true
	}
	return table(rows[0], right, rows[1:])
}

// compareSection reports the lifecycle comparison.
func compareSection(c *bench.Comparison, command string, err error) section {
	const title = "Lifecycle: toolcanon against its baselines"
	if err != nil {
		return notMeasured(title, command, err.Error())
	}
	if c == nil || len(c.Results) == 0 {
		return notMeasured(title, command, "the comparison returned no implementation")
	}
	var b strings.Builder
	size := fmt.Sprintf("%d lifecycles", c.Lifecycles)
	if c.PassDuration > 0 {
		size = fmt.Sprintf("passes of %v", c.PassDuration)
	}
	fmt.Fprintf(&b, "Redis %s and PostgreSQL %s, GOMAXPROCS=%d; %s × %d interleaved repetitions per implementation and caller count. "+
		"A lifecycle is Begin then Complete(READY) with a %d B request, a %d B raw response and a %d B result.\n\n",
		c.RedisVersion, c.PostgresVersion, c.GOMAXPROCS, size, c.Reps, c.RequestBytes, c.RawBytes, c.ResultBytes)
	b.WriteString("- *lifecycles/s*: the median repetition; *vs redisstore*: its ratio to redisstore's at the same caller count.\n")
	b.WriteString("- *p50*, *p99*: lifecycle latency over every timed lifecycle of every repetition.\n")
	b.WriteString("- *round trips*: the waits for the server per lifecycle, counted in each implementation's client " +
		"(one per command sent alone, one per pipeline, one per SQL statement); memstore runs in the process.\n")
	b.WriteString("- *server commands*: the commands the Redis server ran per lifecycle, those the scripts call included.\n")
	fmt.Fprintf(&b, "- *ceiling*: the same scripts as fully pipelined EVALSHA, %d lifecycles per round trip on one connection; "+
		"its latency is its batch's.\n", c.CeilingBatch)
	b.WriteString("- *floor*: the same bytes written with no logic, one plain `HSET` per transition (the request at Begin, " +
		"the raw response and result at Complete) through redisstore's client: what the server can do at all. " +
		"It promises nothing, so its correctness row is not measured.\n")
	fmt.Fprintf(&b, "- *postgres*: an idempotency table on a PostgreSQL server the comparison starts (fsync, synchronous_commit "+
		"and full_page_writes off, as the Redis server keeps no AOF or RDB), through pgx with a pool of %d connections: "+
		"a call row with a unique (run, call) and an expiry column, the run's budget in a run row updated in the same "+
		"statement, and a conditional `UPDATE … WHERE status = 'PROJECTING'` for the completion; one statement, so one "+
		"transaction and one round trip, per transition.\n\n", c.PostgresConns)
	b.WriteString(cellsTable(c.SpeedTable()))
	b.WriteString("\nredisstore's median lifecycles/s over the floor's and over postgres's, at each caller count, in this run:\n\n")
	b.WriteString(cellsTable(ratioTable(c)))
	k := c.Contention
	fmt.Fprintf(&b, "\nCorrectness under contention, %d rounds: %d goroutines begin one id; %d complete one record; "+
		"%d records are completed at once between two reads of their expiry. Zero is correct in every column but *winner stored*, "+
		"which counts the rounds whose stored data is that of a completer told it won; \"-\": not measured.\n\n",
		k.Rounds, k.Beginners, k.Completers, k.Records)
	b.WriteString(cellsTable(c.CorrectnessTable()))

	names := make([]string, len(c.Results))
	for i, r := range c.Results {
		names[i] = r.Name
	}
	// Wide enough that the longest name ("memstore (in process)") does not
	// run into its neighbours'.
	width := max(900, 150*len(names))
	tput := svgchart.Chart{Title: "Lifecycle throughput", XLabel: "implementation", YLabel: "lifecycles/s (median)", Categories: names, Width: width}
	lat := svgchart.Chart{Title: "Lifecycle latency", XLabel: "implementation", YLabel: "ms (log scale)", Categories: names, LogY: true, Width: width}
	for _, n := range c.Callers {
		s := svgchart.Series{Name: callersName(n)}
		p50 := svgchart.Series{Name: "p50, " + callersName(n)}
		p99 := svgchart.Series{Name: "p99, " + callersName(n)}
		for _, r := range c.Results {
			p, ok := r.Pass(n)
			v50, v99, rate := math.NaN(), math.NaN(), math.NaN()
			if ok {
				rate, v50, v99 = p.Median(), ms(p.P50), ms(p.P99)
			}
			s.Values, p50.Values, p99.Values = append(s.Values, rate), append(p50.Values, v50), append(p99.Values, v99)
		}
		tput.Series = append(tput.Series, s)
		lat.Series = append(lat.Series, p50, p99)
	}
	return section{Title: title, Command: command, Body: b.String(), Charts: []chart{
		{File: chartThroughput, Alt: "lifecycles per second per implementation", SVG: tput.Bar()},
		{File: chartLatency, Alt: "p50 and p99 lifecycle latency per implementation", SVG: lat.Bar()},
	}}
}

// ratioTable is redisstore ÷ each of bench.RatioNames, a row per caller
// count.
func ratioTable(c *bench.Comparison) [][]string {
	head := []string{"callers"}
	for _, name := range bench.RatioNames {
		head = append(head, bench.NameRedisStore+" ÷ "+name)
	}
	rows := [][]string{head}
	for _, n := range c.Callers {
		row := []string{strconv.Itoa(n)}
		for _, name := range bench.RatioNames {
			v := c.Ratio(name, n)
			row = append(row, num(v, v > 0, "%.2fx"))
		}
		rows = append(rows, row)
	}
	return rows
}

func callersName(n int) string {
	if n == 1 {
		return "1 caller"
	}
	return fmt.Sprintf("%d callers", n)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// median returns the median of vs (the upper one of an even count).
func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[len(s)/2]
}

// of returns the results whose top-level name is name.
func of(rs []benchfmt.Result, name string) []benchfmt.Result {
	var out []benchfmt.Result
	for _, r := range rs {
		if r.Parts()[0] == name {
			out = append(out, r)
		}
	}
	return out
}

// sizeBytes reads "1KiB", "64KiB", "1MiB", "8MiB", "512B"; -1 when it cannot.
func sizeBytes(s string) int64 {
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil || v < 0 {
				return -1
			}
			return v * u.mul
		}
	}
	return -1
}

// appearance collects distinct strings in their first order.
type appearance struct {
	order []string
	seen  map[string]bool
}

func (a *appearance) add(s string) {
	if a.seen == nil {
		a.seen = map[string]bool{}
	}
	if !a.seen[s] {
		a.seen[s] = true
		a.order = append(a.order, s)
	}
}

// projectionSection reports BenchmarkProjectionSizes/<projector>/<impl>/<size>.
func projectionSection(rs []benchfmt.Result, command string, err error) section {
	const title = "Projection throughput by input size"
	if err != nil {
		return notMeasured(title, command, err.Error())
	}
	type key struct{ proj, impl, size string }
	mbs := map[key][]float64{}
	allocs := map[key][]float64{}
	var projs, impls, sizes appearance
	for _, r := range of(rs, "BenchmarkProjectionSizes") {
		p := r.Parts()
		v, ok := r.Metric("MB/s")
		if len(p) != 4 || !ok {
			continue
		}
		k := key{p[1], p[2], p[3]}
		projs.add(k.proj)
		impls.add(k.impl)
		sizes.add(k.size)
		mbs[k] = append(mbs[k], v)
		if a, ok := r.Metric("allocs/op"); ok {
			allocs[k] = append(allocs[k], a)
		}
	}
	if len(mbs) == 0 {
		return notMeasured(title, command, "no BenchmarkProjectionSizes/<projector>/<implementation>/<size> result with MB/s")
	}
	slices.SortStableFunc(sizes.order, func(a, b string) int {
		x, y := sizeBytes(a), sizeBytes(b)
		if x < 0 || y < 0 {
			return 0
		}
		return int(min(max(x-y, -1), 1))
	})
	ref := impls.order[0]
	if slices.Contains(impls.order, "toolcanon") {
		ref = "toolcanon"
	}
	head := []string{"projector", "input"}
	right := []bool{false, true}
	for _, im := range impls.order {
		head, right = append(head, im+" MB/s"), append(right, true)
	}
	for _, im := range impls.order {
		if im != ref {
			head, right = append(head, ref+" ÷ "+im), append(right, true)
		}
	}
	for _, im := range impls.order {
		head, right = append(head, im+" allocs/op"), append(right, true)
	}
	var rows [][]string
	get := func(m map[key][]float64, k key) (float64, bool) {
		if vs := m[k]; len(vs) > 0 {
			return median(vs), true
		}
		return 0, false
	}
	for _, pj := range projs.order {
		for _, sz := range sizes.order {
			row := []string{pj, sz}
			any := false
			for _, im := range impls.order {
				v, ok := get(mbs, key{pj, im, sz})
				row = append(row, num(v, ok, "%.1f"))
				any = any || ok
			}
			if !any {
				continue
			}
			r, rok := get(mbs, key{pj, ref, sz})
			for _, im := range impls.order {
				if im == ref {
					continue
				}
				v, ok := get(mbs, key{pj, im, sz})
				row = append(row, num(r/v, rok && ok && v > 0, "%.2fx"))
			}
			for _, im := range impls.order {
				v, ok := get(allocs, key{pj, im, sz})
				row = append(row, num(v, ok, "%.0f"))
			}
			rows = append(rows, row)
		}
	}
	ch := svgchart.Chart{Title: "Projection throughput by input size", XLabel: "input size", YLabel: "MB/s (log scale)",
		Categories: sizes.order, LogY: true}
	for _, pj := range projs.order {
		for _, im := range impls.order {
			s := svgchart.Series{Name: pj + " / " + im}
			for _, sz := range sizes.order {
				v, ok := get(mbs, key{pj, im, sz})
				if !ok {
					v = math.NaN()
				}
				s.Values = append(s.Values, v)
			}
			ch.Series = append(ch.Series, s)
		}
	}
	body := fmt.Sprintf("MB/s of input projected (b.SetBytes); the ratio is %s's throughput over the other's on the same input.\n\n", ref) +
		table(head, right, rows)
	return section{Title: title, Command: command, Body: body,
		Charts: []chart{{File: chartProjection, Alt: "projection MB/s by input size", SVG: ch.Line()}}}
}

func num(v float64, ok bool, format string) string {
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

// formatMetric formats a value by its unit: durations in ns become µs or
// ms, bytes stay whole, rates lose their decimals.
func formatMetric(unit string, v float64) string {
	switch {
	case strings.HasSuffix(unit, "-ns") || unit == "ns/op":
		switch {
		case v < 1e3:
			return fmt.Sprintf("%.0f ns", v)
		case v < 1e6:
			return fmt.Sprintf("%.1f µs", v/1e3)
		}
		return fmt.Sprintf("%.2f ms", v/1e6)
	case strings.Contains(unit, "B/") || strings.HasSuffix(unit, "/op") || strings.HasSuffix(unit, "/s"):
		return fmt.Sprintf("%.0f", v)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// metricTable is a table of rs: a row per result (name and GOMAXPROCS),
// a column per unit, the preferred units first and then any other the
// results report, with extra columns computed from each result.
func metricTable(rs []benchfmt.Result, preferred []string, extra []extraColumn) string {
	var units appearance
	for _, u := range preferred {
		for _, r := range rs {
			if _, ok := r.Metric(u); ok {
				units.add(u)
				break
			}
		}
	}
	for _, r := range rs {
		for _, m := range r.Metrics {
			units.add(m.Unit)
		}
	}
	head := []string{"benchmark", "GOMAXPROCS"}
	right := []bool{false, true}
	for _, u := range units.order {
		head, right = append(head, u), append(right, true)
	}
	for _, e := range extra {
		head, right = append(head, e.name), append(right, true)
	}
	var rows [][]string
	for _, r := range rs {
		row := []string{r.Name, strconv.Itoa(r.Procs)}
		for _, u := range units.order {
			if v, ok := r.Metric(u); ok {
				row = append(row, formatMetric(u, v))
			} else {
				row = append(row, "–")
			}
		}
		for _, e := range extra {
			row = append(row, e.value(r))
		}
		rows = append(rows, row)
	}
	return table(head, right, rows)
}

// extraColumn is a column computed from a result's metrics.
type extraColumn struct {
	name  string
	value func(benchfmt.Result) string
}

// memstoreSection reports BenchmarkBeginLive and BenchmarkScaling.
func memstoreSection(rs []benchfmt.Result, command string, err error) section {
	const title = "memstore: Begin latency under load, and scaling with GOMAXPROCS"
	if err != nil {
		return notMeasured(title, command, err.Error())
	}
	live, scaling := of(rs, "BenchmarkBeginLive"), of(rs, "BenchmarkScaling")
	if len(live) == 0 && len(scaling) == 0 {
		return notMeasured(title, command, "no BenchmarkBeginLive or BenchmarkScaling result")
	}
	var b strings.Builder
	b.WriteString("**BenchmarkBeginLive**: latency percentiles of Begin.\n\n")
	if len(live) == 0 {
		b.WriteString("Not measured: no BenchmarkBeginLive result.\n")
	} else {
		b.WriteString(metricTable(live, []string{"p50-ns", "p99.9-ns", "max-ns"}, nil))
	}
	b.WriteString("\n**BenchmarkScaling**: lifecycles per second by GOMAXPROCS.\n\n")
	var names appearance
	var ps []int // the GOMAXPROCS values measured, ascending
	rate := map[string]map[int]float64{}
	for _, r := range scaling {
		v, ok := r.Metric("lifecycles/s")
		if !ok {
			continue
		}
		names.add(r.Name)
		ps = append(ps, r.Procs)
		if rate[r.Name] == nil {
			rate[r.Name] = map[int]float64{}
		}
		rate[r.Name][r.Procs] = v
	}
	if len(names.order) == 0 {
		b.WriteString("Not measured: no BenchmarkScaling result with lifecycles/s.\n")
		return section{Title: title, Command: command, Body: b.String()}
	}
	slices.Sort(ps)
	ps = slices.Compact(ps)
	head := []string{"benchmark"}
	right := []bool{false}
	for _, p := range ps {
		head, right = append(head, fmt.Sprintf("lifecycles/s, GOMAXPROCS=%d", p)), append(right, true)
	}
	if len(ps) > 1 {
		head, right = append(head, fmt.Sprintf("GOMAXPROCS=%d ÷ %d", ps[len(ps)-1], ps[0])), append(right, true)
	}
	ch := svgchart.Chart{Title: "memstore scaling", XLabel: "GOMAXPROCS", YLabel: "lifecycles/s"}
	for _, p := range ps {
		ch.Categories = append(ch.Categories, strconv.Itoa(p))
	}
	var rows [][]string
	for _, n := range names.order {
		row := []string{n}
		s := svgchart.Series{Name: strings.TrimPrefix(strings.TrimPrefix(n, "BenchmarkScaling"), "/")}
		if s.Name == "" {
			s.Name = n
		}
		for _, p := range ps {
			v, ok := rate[n][p]
			row = append(row, num(v, ok, "%.0f"))
			if !ok {
				v = math.NaN()
			}
			s.Values = append(s.Values, v)
		}
		if len(ps) > 1 {
			lo, ok1 := rate[n][ps[0]]
			hi, ok2 := rate[n][ps[len(ps)-1]]
			row = append(row, num(hi/lo, ok1 && ok2 && lo > 0, "%.2fx"))
		}
		rows = append(rows, row)
		ch.Series = append(ch.Series, s)
	}
	b.WriteString(table(head, right, rows))
	return section{Title: title, Command: command, Body: b.String(),
		Charts: []chart{{File: chartScaling, Alt: "memstore lifecycles per second by GOMAXPROCS", SVG: ch.Line()}}}
}

// recordMemorySection reports BenchmarkRecordMemory.
func recordMemorySection(rs []benchfmt.Result, command string, err error) section {
	const title = "redisstore: memory per record"
	if err != nil {
		return notMeasured(title, command, err.Error())
	}
	mem := of(rs, "BenchmarkRecordMemory")
	if len(mem) == 0 {
		return notMeasured(title, command, "no BenchmarkRecordMemory result")
	}
	overhead := extraColumn{name: "overhead ÷ payload", value: func(r benchfmt.Result) string {
		o, ok1 := r.Metric("overhead-B/record")
		p, ok2 := r.Metric("payload-B/record")
		return num(100*o/p, ok1 && ok2 && p > 0, "%.1f%%")
	}}
	body := "Server memory per stored record (B/record), the payload it holds and the difference.\n\n" +
		metricTable(mem, []string{"B/record", "payload-B/record", "overhead-B/record"}, []extraColumn{overhead})
	return section{Title: title, Command: command, Body: body}
}

// machine is what the report was measured on.
type machine struct {
	Date, Duration           string
	CPU                      string
	Cores                    int
	Memory, OS, Kernel, Arch string
	Go, Redis, Commit        string
	LoadBefore, LoadAfter    string
}

// render writes the report: the machine, then every section with its
// charts, which lie in chartDir relative to the report.
func render(m machine, chartDir string, secs []section) string {
	var b strings.Builder
	b.WriteString("# toolcanon benchmark report\n\n")
	b.WriteString("Generated by `make bench-report` (`go run ./bench/cmd/report`). Figures are from one run on the machine below; " +
		"compare ratios within a table, not absolute figures across machines.\n\n")
	b.WriteString(table([]string{"machine", ""}, nil, [][]string{
		{"date (UTC)", m.Date},
		{"report run time", m.Duration},
		{"commit", m.Commit},
		{"CPU", m.CPU},
		{"cores", strconv.Itoa(m.Cores)},
		{"memory", m.Memory},
		{"OS", m.OS},
		{"kernel / arch", m.Kernel + " / " + m.Arch},
		{"Go", m.Go},
		{"Redis", m.Redis},
		{"load average (1, 5, 15 min) before / after", m.LoadBefore + " / " + m.LoadAfter},
	}))
	for _, s := range secs {
		fmt.Fprintf(&b, "\n## %s\n\n", s.Title)
		if s.Command != "" { // one command a line
			for _, c := range strings.Split(s.Command, "\n") {
				fmt.Fprintf(&b, "`%s`\n\n", strings.ReplaceAll(c, "`", "'"))
			}
		}
		b.WriteString(s.Body)
		for _, c := range s.Charts {
			fmt.Fprintf(&b, "\n![%s](%s/%s)\n", cell(c.Alt), chartDir, c.File)
		}
	}
	return b.String()
}
