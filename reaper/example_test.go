package reaper_test

import (
	"context"
	"fmt"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/reaper"
)

// A worker began a call and died; once its lease has passed, one pass of
// the reaper closes it, without being told the run.
func ExamplePass() {
	store := memstore.New()
	ctx := context.Background()
	_, _ = store.Begin(ctx, canonical.BeginRequest{RunID: "run-42", ToolCallID: "call_8f2k", Tool: "kb.search",
		Owner: canonical.NewOwner(), Request: []byte(`{"query":"refunds"}`), TTL: time.Hour, Lease: time.Millisecond})
	time.Sleep(5 * time.Millisecond)

	rep, err := reaper.Pass(ctx, store, canonical.ReapOptions{}, nil, nil)
	fmt.Println(len(rep.Abandoned), rep.Abandoned[0].RunID, rep.Abandoned[0].ToolCallID, err)
	rec, _ := store.Get(ctx, "run-42", "call_8f2k")
	fmt.Println(rec.Status, rec.Error)

	// A host runs it for good with reaper.Start(store, reaper.Options{}).

	// Output:
	// 1 run-42 call_8f2k <nil>
	// ERROR EXECUTION_ABANDONED
}
