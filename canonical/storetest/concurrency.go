package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

func testConcurrency(t *testing.T, f Factory) {
	t.Run("OneIDManyBeginners", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		const n = 200
		var wg sync.WaitGroup
		codes := make([]canonical.Code, n)
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				req := beginReq(run, "same")
				req.Owner = fmt.Sprintf("owner-%d", i)
				<-start
				_, err := h.Store.Begin(ctx(), req)
				codes[i] = canonical.CodeOf(err)
			}(i)
		}
		close(start)
		wg.Wait()
		won, dup := 0, 0
		winner := ""
		for i, c := range codes {
			switch c {
			case "":
				won++
				winner = fmt.Sprintf("owner-%d", i)
			case canonical.CodeToolCallInProgress: // the winner's record is PROJECTING throughout
				dup++
			default:
				t.Fatalf("goroutine %d: %s", i, c)
			}
		}
		if won != 1 || dup != n-1 {
			t.Fatalf("%d won, %d in progress; want 1 and %d", won, dup, n-1)
		}
		if rec := mustGet(t, h.Store, run, "same"); rec.Owner != winner {
			t.Fatalf("record owner %s, winner %s", rec.Owner, winner)
		}
		if u, _ := h.Store.Usage(ctx(), run); u.Calls != 1 {
			t.Fatalf("calls = %d", u.Calls)
		}
	})

	t.Run("CapacityNeverOvershoots", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		const n, limit = 500, 50
		var wg sync.WaitGroup
		var mu sync.Mutex
		var ok []string
		exhausted := 0
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				req := beginReq(run, fmt.Sprintf("c%03d", i))
				req.Limits = canonical.Limits{MaxCallsPerRun: limit}
				<-start
				_, err := h.Store.Begin(ctx(), req)
				mu.Lock()
				defer mu.Unlock()
				switch canonical.CodeOf(err) {
				case "":
					ok = append(ok, req.ToolCallID)
				case canonical.CodeBudgetExhausted:
					exhausted++
				default:
					t.Errorf("begin %s: %v", req.ToolCallID, err)
				}
			}(i)
		}
		close(start)
		wg.Wait()
		if len(ok) != limit || exhausted != n-limit {
			t.Fatalf("%d begun, %d exhausted; want %d and %d", len(ok), exhausted, limit, n-limit)
		}
		u, err := h.Store.Usage(ctx(), run)
		if err != nil || u.Calls != limit || u.ToolCalls["kb.search"] != limit {
			t.Fatalf("usage = %+v, %v", u, err)
		}
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("c%03d", i)
		}
		recs, err := h.Store.GetMany(ctx(), run, ids, canonical.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		records := 0
		for _, r := range recs {
			if r != nil {
				records++
			}
		}
		if records != limit {
			t.Fatalf("%d records exist, want %d", records, limit)
		}
	})

	t.Run("OneRecordManyCompleters", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		mustBegin(t, h.Store, beginReq(run, "c1"))
		const n = 32
		var wg sync.WaitGroup
		errs := make([]error, n)
		comps := make([]canonical.Completion, n)
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			c := ready(run, "c1", canonical.EvidenceFound)
			if i%3 == 0 {
				c = failed(run, "c1", canonical.CodeProjectionFailed)
				c.Raw = []byte(fmt.Sprintf(`{"worker":%d}`, i))
			} else {
				c.Raw = []byte(fmt.Sprintf(`{"worker":%d}`, i))
				c.Result = []byte(fmt.Sprintf(`{"by":%d}`, i))
			}
			comps[i] = c
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				_, errs[i] = h.Store.Complete(ctx(), comps[i])
			}(i)
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch canonical.CodeOf(err) {
			case "":
				if winner >= 0 {
					t.Fatalf("two winners: %d and %d", winner, i)
				}
				winner = i
			case canonical.CodeInvalidTransition:
			default:
				t.Fatalf("completer %d: %v", i, err)
			}
		}
		if winner < 0 {
			t.Fatal("no completer won")
		}
		rec := mustGet(t, h.Store, run, "c1")
		w := comps[winner]
		if rec.Status != w.Status || string(rec.Raw) != string(w.Raw) || string(rec.Result) != string(w.Result) {
			t.Fatalf("record holds %+v, winner %d sent %s raw %s", brief(rec), winner, w.Status, w.Raw)
		}
		if idx := index(t, h, run); len(idx) != 1 {
			t.Fatalf("index = %v, want one entry", idx)
		}
	})
}
