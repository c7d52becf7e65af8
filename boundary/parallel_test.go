package boundary_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

// TestParallelBudgetIsExact drives one run from many goroutines: the store
// counts the budget atomically, so exactly the budget's worth of tools run
// and every other call is refused before its tool.
func TestParallelBudgetIsExact(t *testing.T) {
	const (
		workers = 64
		each    = 20
		budget  = 500
	)
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.Limits = canonical.Limits{MaxCallsPerRun: budget, MaxCallsPerTool: 1 << 20}
		var ready, exhausted, other atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					res := fx.invoke(fmt.Sprintf("call_%d_%d", w, i))
					switch {
					case res.Status() == canonical.StatusReady:
						ready.Add(1)
					case res.Code() == canonical.CodeBudgetExhausted && !res.Executed():
						exhausted.Add(1)
					default:
						other.Add(1)
						t.Errorf("unexpected result %s/%s: %v", res.Status(), res.Code(), res.Err())
					}
				}
			}()
		}
		wg.Wait()

		u, err := fx.store.Usage(context.Background(), fx.run.ID)
		if err != nil {
			t.Fatal(err)
		}
		done, _, err := fx.store.Completed(context.Background(), fx.run.ID, canonical.MaxIndexRead)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d calls from %d goroutines: READY %d, BUDGET_EXHAUSTED %d, other %d; tool ran %d, projector ran %d; "+
			"store usage: calls %d, kb.search %d, completed %d, index %d",
			fx.fac.name, workers*each, workers, ready.Load(), exhausted.Load(), other.Load(), fx.tool.calls.Load(), fx.proj.calls.Load(),
			u.Calls, u.ToolCalls["kb.search"], u.Completed, len(done))
		if ready.Load() != budget || exhausted.Load() != workers*each-budget || other.Load() != 0 {
			t.Errorf("READY %d, BUDGET_EXHAUSTED %d, other %d", ready.Load(), exhausted.Load(), other.Load())
		}
		fx.calls(t, budget, budget)
		if u.Calls != budget || u.ToolCalls["kb.search"] != budget || u.Completed != budget || len(done) != budget {
			t.Errorf("usage = %+v, index %d", u, len(done))
		}
	})
}
