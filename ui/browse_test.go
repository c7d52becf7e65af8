package ui_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
	"github.com/toolcanon/toolcanon/ui"
	"github.com/toolcanon/toolcanon/ui/internal/seed"
)

// beginRuns begins one call in each of n runs, 16 runs at a time; with
// complete, each run first gets a completed call too.
func beginRuns(t *testing.T, s canonical.Store, n int, principal func(i int) string, complete ...bool) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs <- beginRun(s, fmt.Sprintf("run-%05d", i), principal(i), len(complete) > 0 && complete[0])
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func beginRun(s canonical.Store, run, principal string, complete bool) error {
	ctx := context.Background()
	begin := func(id string) (string, error) {
		owner := canonical.NewOwner()
		_, err := s.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "kb.search",
			Owner: owner, Principal: principal, Request: []byte(`{}`), TTL: time.Hour})
		return owner, err
	}
	if complete {
		owner, err := begin("c0")
		if err != nil {
			return err
		}
		if _, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: "c0", Owner: owner, Status: canonical.StatusReady,
			Evidence: canonical.EvidenceFound, Raw: []byte(`{}`), Result: []byte(`{}`)}); err != nil {
			return err
		}
	}
	_, err := begin("c1")
	return err
}

// browsers are the stores the listing is checked on.
func browsers(t *testing.T) map[string]canonical.Store {
	prefix := "ui" + strings.ToLower(canonical.NewOwner()[:10])
	cl, err := redisstore.New(redisstore.Options{Addrs: redistest.ClusterAddrs(t), Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return map[string]canonical.Store{"memstore": memstore.New(), "redis": redisStore(t), "cluster": cl}
}

// TestListRunsFindsEveryRunOnce walks every page of the listing, on
// memstore, a Redis server and a 3-master cluster: each run is listed once,
// no page is over its size by more than one SCAN's findings, and a cursor
// the store did not write is refused.
func TestListRunsFindsEveryRunOnce(t *testing.T) {
	for name, s := range browsers(t) {
		t.Run(name, func(t *testing.T) {
			const n = 130
			beginRuns(t, s, n, func(int) string { return "p" })
			b := s.(canonical.Browser)
			seen := map[string]int{}
			cursor, pages := "", 0
			for {
				pg, err := b.ListRuns(context.Background(), cursor, 20)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				for _, r := range pg.Runs {
					seen[r.RunID]++
					if r.Principal != canonical.PrincipalTag("p") || r.CreatedAt.IsZero() {
						t.Errorf("%s: principal %q, created %v", r.RunID, r.Principal, r.CreatedAt)
					}
				}
				if pg.Next == "" {
					break
				}
				cursor = pg.Next
				if pages > n {
					t.Fatal("the listing does not end")
				}
			}
			if len(seen) != n {
				t.Errorf("listed %d runs, want %d", len(seen), n)
			}
			for r, c := range seen {
				if c != 1 {
					t.Errorf("%s listed %d times", r, c)
				}
			}
			for _, bad := range []string{"x", "9-0", "0-", "-1-0", "00-1", "0-01", "0-99999999999999999999999"} {
				if _, err := b.ListRuns(context.Background(), bad, 20); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
					t.Errorf("cursor %q: %v", bad, err)
				}
			}
		})
	}
}

// TestRunsPageFilters shows the filters at work on one page of Redis runs.
func TestRunsPageFilters(t *testing.T) {
	s := redisStore(t)
	ctx := context.Background()
	beginRuns(t, s, 6, func(i int) string { return fmt.Sprintf("team-%d", i%2) })
	time.Sleep(2 * time.Millisecond)
	if err := s.CloseRun(ctx, "run-00001", "team-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: "run-stuck", ToolCallID: "c1", Tool: "kb.search", Owner: canonical.NewOwner(),
		Principal: "team-0", Request: []byte(`{}`), TTL: time.Hour, Lease: time.Millisecond,
		Limits: canonical.Limits{MaxCallsPerRun: 1}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	// run-00002 loses its state (an eviction, an operator's DEL): its live
	// marker still lists it, once, as lost.
	if _, err := redistest.Command(redistest.Addr(t), "DEL", s.Keys().Run("run-00002")); err != nil {
		t.Fatal(err)
	}
	h := ui.Handler(s, ui.Options{})
	runs := regexp.MustCompile(`class="run-link" href="/run\?run=([^"]+)"`)
	list := func(q string) string {
		_, body, _ := get(h, "GET", "/?"+q, nil)
		var out []string
		for _, m := range runs.FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return strings.Join(out, " ")
	}
	for q, want := range map[string]string{
		"state=closed":     "run-00001",
		"state=lost":       "run-00002",
		"stuck=1":          "run-stuck",
		"near=1":           "run-stuck",
		"principal=team-0": "run-00000 run-00004 run-stuck",
		"principal=team-1": "run-00001 run-00003 run-00005",
	} {
		got := strings.Fields(list(q))
		slices.Sort(got)
		if strings.Join(got, " ") != want {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
	}
	// Newest first: run-stuck began after the others.
	if all := strings.Fields(list("")); len(all) != 7 || all[0] != "run-stuck" {
		t.Errorf("the page lists %q, want 7 runs, run-stuck first", all)
	}
}

// TestIndexAndLeaseSlicesAreBounded reads slices of a run's index and leases on
// every store: each read returns at most its max and the true length.
func TestIndexAndLeaseSlicesAreBounded(t *testing.T) {
	for name, s := range browsers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			if err := seed.Long(ctx, s, "r", 30, time.Hour); err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: "r", ToolCallID: fmt.Sprintf("open_%d", i), Tool: "kb.search",
					Owner: canonical.NewOwner(), Principal: seed.Principal, Request: []byte(`{}`), TTL: time.Hour,
					Lease: time.Duration(5-i) * time.Minute}); err != nil {
					t.Fatal(err)
				}
			}
			b := s.(canonical.Browser)
			for _, c := range []struct{ start, max, want int }{{0, 10, 10}, {25, 10, 5}, {30, 10, 0}, {99, 1, 0}} {
				ids, n, err := b.CompletedRange(ctx, "r", c.start, c.max)
				if err != nil || n != 30 || len(ids) != c.want || (c.want > 0 && ids[0] != fmt.Sprintf("call_%d", c.start)) {
					t.Errorf("CompletedRange(%d, %d) = %v, %d, %v", c.start, c.max, ids, n, err)
				}
			}
			leases, n, err := b.InFlight(ctx, "r", 0, 2)
			if err != nil || n != 5 || len(leases) != 2 || leases[0].ToolCallID != "open_4" || !leases[0].Until.Before(leases[1].Until) {
				t.Errorf("InFlight(0, 2) = %v, %d, %v", leases, n, err)
			}
			// Later slices go on in lease order; past the end, none.
			for _, c := range []struct {
				start, max int
				want       []string
			}{{2, 2, []string{"open_2", "open_1"}}, {4, 10, []string{"open_0"}}, {5, 1, nil}, {99, 3, nil}} {
				leases, n, err := b.InFlight(ctx, "r", c.start, c.max)
				var got []string
				for _, l := range leases {
					got = append(got, l.ToolCallID)
				}
				if err != nil || n != 5 || strings.Join(got, ",") != strings.Join(c.want, ",") {
					t.Errorf("InFlight(%d, %d) = %v, %d, %v; want %v", c.start, c.max, got, n, err, c.want)
				}
			}
			if _, _, err := b.InFlight(ctx, "r", -1, 10); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
				t.Errorf("InFlight with a negative start: %v", err)
			}
			if _, _, err := b.CompletedRange(ctx, "r", -1, 10); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
				t.Errorf("a negative start: %v", err)
			}
			if _, err := b.ListRuns(ctx, "", canonical.MaxRunsPage+1); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
				t.Errorf("a page over MaxRunsPage: %v", err)
			}
		})
	}
}
