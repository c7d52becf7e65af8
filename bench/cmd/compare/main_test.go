package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/bench"
	"github.com/toolcanon/toolcanon/internal/pgtest"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	redistest.StopAll()
	pgtest.StopShared()
	os.Exit(code)
}

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

// options are a short comparison on the tests' Redis and a database of
// the test's own on the shared PostgreSQL.
func options(t *testing.T) bench.CompareOptions {
	o := bench.DefaultCompareOptions(redistest.Addr(t))
	o.PostgresDSN = pgtest.Database(t)
	o.Duration, o.Callers, o.Reps = 10*time.Millisecond, []int{1, 3}, 1
	o.Contention = bench.Sizes{Beginners: 10, Completers: 4, Records: 5, Rounds: 1}
	return o
}

// TestRunCheck prints the tables and the check's figures. Whether
// redisstore is faster is a matter of timing and is not judged here; the
// correctness failures must be absent.
func TestRunCheck(t *testing.T) {
	var out bytes.Buffer
	failures, err := run(context.Background(), options(t), false, true, &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range failures {
		if !strings.HasPrefix(f, "redisstore: ") || !strings.Contains(f, "below goredis-lua") {
			t.Errorf("failure: %s", f)
		}
	}
	s := out.String()
	for _, want := range []string{"lifecycles/s @3", "p99 @1", "duplicates executed", "\ncheck: ", "at 3 callers (best of the reps)",
		"\nredisstore ÷ floor: ", "; redisstore ÷ postgres: ", "x @3 (medians of the reps)\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// Without a PostgreSQL DSN the command starts a server of its own.
func TestRunJSON(t *testing.T) {
	var out bytes.Buffer
	o := options(t)
	o.PostgresDSN = ""
	if _, err := run(context.Background(), o, true, false, &out); err != nil {
		t.Fatal(err)
	}
	var c bench.Comparison
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if len(c.Results) != 8 || !slices.Equal(c.Callers, []int{1, 3}) || c.PostgresVersion == "" {
		t.Fatalf("comparison: %+v", c)
	}
	if pg, ok := c.Result(bench.NamePostgres); !ok || len(pg.Passes) != 2 || pg.Passes[1].Median() <= 0 {
		t.Fatalf("postgres row: %+v", pg)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := run(ctx, options(t), false, false, &bytes.Buffer{}); err == nil {
		t.Fatal("a cancelled comparison succeeded")
	}
}
