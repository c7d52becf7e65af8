package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestGroupingAccuracy(t *testing.T) {
	truth := []string{"A", "A", "B", "B", "C"}
	for _, c := range []struct {
		mined []string
		want  float64
	}{
		{[]string{"x", "x", "y", "y", "z"}, 1},
		{[]string{"x", "x", "x", "x", "z"}, 0.2}, // A and B merged: only C is right
		{[]string{"x", "y", "z", "z", "w"}, 0.6}, // A split: B and C are right
	} {
		if got := GroupingAccuracy(c.mined, truth); got != c.want {
			t.Errorf("%v: %v, want %v", c.mined, got, c.want)
		}
	}
}

func TestMissingSamplesExitTwoWithOneMessage(t *testing.T) {
	empty := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"nothing set", nil, "", "neither -dir nor LOGHUB_DIR is set"},
		{"LOGHUB_DIR without the samples", nil, empty, filepath.Join(empty, "HDFS", "HDFS_2k.log_structured.csv")},
		{"-dir without the samples", []string{"-dir", empty}, "/elsewhere", filepath.Join(empty, "HDFS")},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := cli(c.args, func(k string) string {
				if k == "LOGHUB_DIR" {
					return c.env
				}
				return ""
			}, &out, &errOut)
			if code != 2 {
				t.Fatalf("exit %d, want 2", code)
			}
			msg := errOut.String()
			for _, part := range []string{c.want, "https://github.com/logpai/loghub", "loghub_2k_corrected", "LOGHUB_DIR=", "-dir"} {
				if !strings.Contains(msg, part) {
					t.Errorf("message lacks %q:\n%s", part, msg)
				}
			}
			if out.Len() != 0 {
				t.Errorf("nothing may be printed on stdout, got %q", out.String())
			}
		})
	}
}

// A directory laid out like Loghub's, with small logs written for this test,
// runs the whole evaluation: the command reads what it is pointed at.
func TestEvaluationRunsOnADirectoryItIsPointedAt(t *testing.T) {
	dir := t.TempDir()
	const csvHead = "LineId,Content,EventId\n"
	lines := csvHead + "1,Receiving block blk_1 src: /10.0.0.1:50010,E1\n" +
		"2,Receiving block blk_2 src: /10.0.0.2:50010,E1\n" +
		"3,Deleting block blk_3 file /data/blk_3,E2\n"
	for _, d := range datasets {
		sub := filepath.Join(dir, d.name)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, suffix := range []string{".csv", "_corrected.csv"} {
			if err := os.WriteFile(filepath.Join(sub, d.name+"_2k.log_structured"+suffix), []byte(lines), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var out, errOut bytes.Buffer
	if code := cli([]string{"-dir", dir}, func(string) string { return "" }, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	// Each dataset is scored by each pipeline: 3 x 3 rows after two header lines.
	if rows := strings.Count(strings.TrimSpace(out.String()), "\n") + 1; rows != 2+len(datasets)*len(pipelines) {
		t.Fatalf("%d lines of output, want %d:\n%s", rows, 2+len(datasets)*len(pipelines), out.String())
	}
	if !regexp.MustCompile(`(?m)^HDFS\s+3\s`).MatchString(out.String()) {
		t.Errorf("the HDFS row does not count the 3 lines written:\n%s", out.String())
	}
}
