package ui_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
	"github.com/toolcanon/toolcanon/ui"
	"github.com/toolcanon/toolcanon/ui/internal/seed"
)

// commandStats reads INFO commandstats: calls per command.
func commandStats(t *testing.T, addr string) map[string]int {
	t.Helper()
	out, err := redistest.Command(addr, "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
		m[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return m
}

// TestBoundedPages measures the first page of each view on a private Redis
// holding 5,000 runs and a run of 10,000 calls: the server time (median of
// 20) and the commands each page sends. A run's page sends as many commands
// for 10,000 calls as for 60, and the runs page at most 8 SCANs and 14
// commands per run it shows: 12 for its row (each of the 5,000 has a
// completed call and one in flight, so that every read of a row is made),
// and an HMGET for each live marker the SCANs met whose state's key another
// page lists (about one per run).
func TestBoundedPages(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	s, err := redisstore.New(redisstore.Options{Addrs: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	start := time.Now()
	beginRuns(t, s, 5000, func(int) string { return seed.Principal }, true)
	if err := seed.Long(ctx, s, "long", 10000, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := seed.Long(ctx, s, "short", 60, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded 5,002 runs and 20,060 calls in %v", time.Since(start).Round(time.Millisecond))
	h := ui.Handler(s, ui.Options{RequestsPerInterval: 1 << 20}) // one client measures, many times
	serve := func(target string) (int, time.Duration) {
		r := httptest.NewRequest("GET", target, nil)
		w := httptest.NewRecorder()
		t0 := time.Now()
		h.ServeHTTP(w, r)
		return w.Code, time.Since(t0)
	}
	cost := func(target string) (int, string) {
		before := commandStats(t, srv.Addr)
		if code, _ := serve(target); code != 200 {
			t.Fatalf("%s: %d", target, code)
		}
		after := commandStats(t, srv.Addr)
		total, parts := 0, []string{}
		for name, n := range after {
			d := n - before[name]
			if name == "info" {
				d--
			}
			if d > 0 {
				total += d
				parts = append(parts, fmt.Sprintf("%s %d", name, d))
			}
		}
		sort.Strings(parts)
		return total, strings.Join(parts, ", ")
	}
	median := func(target string) time.Duration {
		var ds []time.Duration
		for range 20 {
			_, d := serve(target)
			ds = append(ds, d)
		}
		slices.Sort(ds)
		return (ds[9] + ds[10]) / 2
	}
	views := []struct{ name, target string }{
		{"runs (5,002 runs)", "/"},
		{"run (10,000 calls)", "/run?run=long"},
		{"run (60 calls)", "/run?run=short"},
		{"call", "/call?run=long&call=call_9999"},
	}
	cmds := map[string]int{}
	for _, v := range views {
		n, parts := cost(v.target)
		cmds[v.name] = n
		t.Logf("%-20s first page: median %v server time over 20; %d Redis commands (%s)", v.name, median(v.target), n, parts)
	}
	if cmds["run (10,000 calls)"] != cmds["run (60 calls)"] {
		t.Errorf("a run's first page sends %d commands for 10,000 calls and %d for 60", cmds["run (10,000 calls)"], cmds["run (60 calls)"])
	}
	if c := cmds["call"]; c > 2 {
		t.Errorf("a call's page sends %d commands", c)
	}
	_, body, _ := get(h, "GET", "/", nil)
	rows := strings.Count(body, `class="run-link"`)
	if c := cmds["runs (5,002 runs)"]; rows == 0 || c > 8+14*rows || rows > 4*ui.DefaultPageSize {
		t.Errorf("the runs page shows %d runs for %d commands", rows, c)
	}
}
