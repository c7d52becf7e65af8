// Command evalpatterns measures how well the drain miner groups log
// messages, on the Loghub 2k samples (HDFS, Zookeeper, OpenSSH), with the
// Loghub grouping-accuracy metric (GA): a message counts as correct when the
// set of messages in its mined group equals the set in its ground-truth
// group.
//
// The samples are read from the directory the user names (-dir, or the
// LOGHUB_DIR environment variable); they are licensed for research use only
// and are never copied into this module. Without them the command exits 2
// and says where to get them.
//
// Three pipelines are scored against the original ground truth (and the
// corrected one of Khan et al., ICSE 2022):
//
//   - drain: the Loghub benchmark's own setting — its per-dataset regexes,
//     then the miner with the benchmark's depth and similarity. This is the
//     faithfulness check against the published Drain figures.
//   - redact+drain: the projector's redaction before the same setting.
//   - projector: redaction, then the miner as the query-log projector runs
//     it (no dataset-specific regexes, default settings).
//
// Usage, from the module root:
//
//	LOGHUB_DIR=/path/to/loghub go run ./projectors/cmd/evalpatterns
//	go run ./projectors/cmd/evalpatterns -dir /path/to/loghub
//
// The directory holds one folder per dataset, as in the Loghub repository:
// HDFS/HDFS_2k.log_structured.csv and HDFS/HDFS_2k.log_structured_corrected.csv,
// and the same for Zookeeper and OpenSSH.
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/toolcanon/toolcanon/projectors/drain"
	"github.com/toolcanon/toolcanon/projectors/redact"
)

type dataset struct {
	name      string
	regexes   []*regexp.Regexp
	sim       float64
	depth     int
	published float64
}

var datasets = []dataset{
	{"HDFS", mustAll(`blk_-?\d+`, `(\d+\.){3}\d+(:\d+)?`), 0.5, 4, 0.9975},
	{"Zookeeper", mustAll(`(/|)(\d+\.){3}\d+(:\d+)?`), 0.5, 4, 0.9665},
	{"OpenSSH", mustAll(`(\d+\.){3}\d+`, `([\w-]+\.){2,}[\w-]+`), 0.6, 5, 0.7875},
}

func mustAll(exprs ...string) []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(exprs))
	for i, e := range exprs {
		out[i] = regexp.MustCompile(e)
	}
	return out
}

func main() {
	os.Exit(cli(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// missingSamples is the whole message printed when the samples are not
// where the command was pointed.
const missingSamples = `evalpatterns: the Loghub 2k samples are needed and were not found%s.
They are the 2,000-line HDFS, Zookeeper and OpenSSH samples of the Loghub project
(https://github.com/logpai/loghub: <DATASET>/<DATASET>_2k.log_structured.csv) with the
corrected templates of logpai/logparser (data/loghub_2k_corrected/<DATASET>/
<DATASET>_2k.log_structured_corrected.csv). Their licence allows research use only, so
this repository does not ship them. Put both files of each dataset in one folder per
dataset and run:
    LOGHUB_DIR=/path/to/loghub make eval-patterns
or  go run ./projectors/cmd/evalpatterns -dir /path/to/loghub
`

// cli runs the command and returns its exit status: 0 on success, 2 when
// the samples are missing or the arguments are wrong, 1 on a read error.
func cli(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("evalpatterns", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "directory holding the Loghub 2k samples (default $LOGHUB_DIR)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" {
		*dir = getenv("LOGHUB_DIR")
	}
	if err := checkSamples(*dir); err != nil {
		fmt.Fprintf(stderr, missingSamples, err)
		return 2
	}
	if err := run(stdout, *dir); err != nil {
		fmt.Fprintln(stderr, "evalpatterns:", err)
		return 1
	}
	return 0
}

// checkSamples reports, as a clause of the missing-samples message, why dir
// does not hold every file the evaluation reads; nil when it does.
func checkSamples(dir string) error {
	if dir == "" {
		return fmt.Errorf(" (neither -dir nor LOGHUB_DIR is set)")
	}
	for _, d := range datasets {
		for _, suffix := range []string{".csv", "_corrected.csv"} {
			p := filepath.Join(dir, d.name, d.name+"_2k.log_structured"+suffix)
			if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
				return fmt.Errorf(" (no %s)", p)
			}
		}
	}
	return nil
}

type pipeline struct {
	name string
	prep func(d dataset, content string) string
	cfg  func(d dataset) drain.Config
}

var pipelines = []pipeline{
	{"drain", func(d dataset, s string) string { return applyRegexes(d, s) },
		func(d dataset) drain.Config { return drain.Config{Depth: d.depth, Similarity: d.sim} }},
	{"redact+drain", func(d dataset, s string) string { return applyRegexes(d, redact.String(s)) },
		func(d dataset) drain.Config { return drain.Config{Depth: d.depth, Similarity: d.sim} }},
	{"projector", func(_ dataset, s string) string { return redact.String(s) },
		func(dataset) drain.Config { return drain.DefaultConfig() }},
}

func applyRegexes(d dataset, s string) string {
	for _, re := range d.regexes {
		s = re.ReplaceAllLiteralString(s, drain.Wildcard)
	}
	return s
}

func run(w io.Writer, dir string) error {
	fmt.Fprintf(w, "Loghub 2k grouping accuracy (GA); published Drain: logpai/logparser\n")
	fmt.Fprintf(w, "%-10s %6s %10s | %-13s %8s %8s %9s %8s\n", "dataset", "lines", "published", "pipeline", "GA", "GA-corr", "clusters", "time")
	for _, d := range datasets {
		base := filepath.Join(dir, d.name, d.name+"_2k.log_structured")
		content, truth, err := readStructured(base + ".csv")
		if err != nil {
			return err
		}
		_, corrected, err := readStructured(base + "_corrected.csv")
		if err != nil {
			return err
		}
		if len(corrected) != len(truth) {
			return fmt.Errorf("%s: corrected ground truth has %d lines, original %d", d.name, len(corrected), len(truth))
		}
		for _, p := range pipelines {
			start := time.Now()
			groups, clusters := mine(d, p, content)
			elapsed := time.Since(start)
			fmt.Fprintf(w, "%-10s %6d %10.4f | %-13s %8.4f %8.4f %9d %8s\n", d.name, len(content), d.published,
				p.name, GroupingAccuracy(groups, truth), GroupingAccuracy(groups, corrected), clusters, elapsed.Round(time.Millisecond))
		}
	}
	return nil
}

// mine returns, for each message, the key of its mined group: the final
// template text, as the Loghub evaluation keys groups by the template's
// hash, so clusters that end with the same template form one group.
func mine(d dataset, p pipeline, content []string) ([]string, int) {
	m := drain.New(p.cfg(d))
	ids := make([]int, len(content))
	for i, c := range content {
		ids[i], _ = m.AddString(strings.TrimSpace(p.prep(d, c)))
	}
	keys := make([]string, len(content))
	for i, id := range ids {
		keys[i] = m.TemplateString(id)
	}
	return keys, m.Len()
}

// GroupingAccuracy is the Loghub GA: the fraction of messages whose mined
// group holds exactly the messages of their ground-truth group.
func GroupingAccuracy(mined, truth []string) float64 {
	minedSets := map[string][]int{}
	for i, k := range mined {
		minedSets[k] = append(minedSets[k], i)
	}
	truthSize := map[string]int{}
	for _, t := range truth {
		truthSize[t]++
	}
	correct := 0
	for _, idx := range minedSets {
		t := truth[idx[0]]
		same := true
		for _, i := range idx[1:] {
			if truth[i] != t {
				same = false
				break
			}
		}
		if same && truthSize[t] == len(idx) {
			correct += len(idx)
		}
	}
	return float64(correct) / float64(len(mined))
}

// readStructured returns the Content and EventId columns of a Loghub
// structured CSV.
func readStructured(path string) (content, events []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	head, err := r.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	ci, ei := -1, -1
	for i, h := range head {
		switch strings.TrimPrefix(h, "\ufeff") {
		case "Content":
			ci = i
		case "EventId":
			ei = i
		}
	}
	if ci < 0 || ei < 0 {
		return nil, nil, fmt.Errorf("%s: no Content or EventId column", path)
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(rec) <= ci || len(rec) <= ei {
			return nil, nil, fmt.Errorf("%s: short record", path)
		}
		content = append(content, rec[ci])
		events = append(events, rec[ei])
	}
	return content, events, nil
}
