package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/bench"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestParseCallers(t *testing.T) {
	if got, err := parseCallers("1, 64,8"); err != nil || !slices.Equal(got, []int{1, 64, 8}) {
		t.Fatalf("parseCallers = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "1,,2", "-3", "x"} {
		if got, err := parseCallers(bad); err == nil {
			t.Errorf("parseCallers(%q) = %v, want an error", bad, got)
		}
	}
}

func options(addr string) bench.CompareOptions {
	o := bench.DefaultCompareOptions(addr)
	o.Duration, o.Callers, o.Reps = 10*time.Millisecond, []int{1, 3}, 1
	o.Contention = bench.Sizes{Beginners: 10, Completers: 4, Records: 5, Rounds: 1}
	return o
}

// TestRunCheck prints the tables and the check's figures. Whether
// redisstore is faster is a matter of timing and is not judged here; the
// correctness failures must be absent.
func TestRunCheck(t *testing.T) {
	var out bytes.Buffer
	failures, err := run(context.Background(), options(redistest.Addr(t)), false, true, &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range failures {
		if !strings.HasPrefix(f, "redisstore: ") || !strings.Contains(f, "below goredis-lua") {
			t.Errorf("failure: %s", f)
		}
	}
	s := out.String()
	for _, want := range []string{"lifecycles/s @3", "p99 @1", "duplicates executed", "\ncheck: ", "at 3 callers (best of the reps)"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

func TestRunJSON(t *testing.T) {
	var out bytes.Buffer
	if _, err := run(context.Background(), options(redistest.Addr(t)), true, false, &out); err != nil {
		t.Fatal(err)
	}
	var c bench.Comparison
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if len(c.Results) != 6 || !slices.Equal(c.Callers, []int{1, 3}) {
		t.Fatalf("comparison: %+v", c)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := run(ctx, options(redistest.Addr(t)), false, false, &bytes.Buffer{}); err == nil {
		t.Fatal("a cancelled comparison succeeded")
	}
}
