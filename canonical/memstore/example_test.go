package memstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
)

// The lifecycle of one call: Begin before the tool runs, Complete after.
func Example() {
	ctx := context.Background()
	store := memstore.New()
	owner := canonical.NewOwner()

	rec, err := store.Begin(ctx, canonical.BeginRequest{
		RunID: "run-42", ToolCallID: "call_8f2k", Tool: "kb.search", Owner: owner,
		Request: []byte(`{"tool":"kb.search","input":{"query":"refund policy"}}`), TTL: time.Hour,
	})
	fmt.Println(rec.Status, err)

	// A second invocation with the same id is refused and never runs; while
	// the first is still running it is told to wait for that one's result.
	_, err = store.Begin(ctx, canonical.BeginRequest{
		RunID: "run-42", ToolCallID: "call_8f2k", Tool: "kb.search", Owner: canonical.NewOwner(),
		Request: []byte(`{}`), TTL: time.Hour,
	})
	fmt.Println(canonical.CodeOf(err))

	rec, err = store.Complete(ctx, canonical.Completion{
		RunID: "run-42", ToolCallID: "call_8f2k", Owner: owner,
		Status: canonical.StatusReady, Evidence: canonical.EvidenceFound,
		Raw: []byte(`{"blocks":[{"doc":"kb-7","content":"Refunds within 30 days."}]}`), Result: []byte(`{"evidence":["kb-7"]}`),
	})
	fmt.Println(rec.Status, rec.Evidence, err)

	ids, _, _ := store.Completed(ctx, "run-42", 100)
	u, _ := store.Usage(ctx, "run-42")
	fmt.Println(ids, u.Calls)
	// Output:
	// PROJECTING <nil>
	// TOOL_CALL_IN_PROGRESS
	// READY EVIDENCE_FOUND <nil>
	// [call_8f2k] 1
}

// A call whose worker died stays PROJECTING until its lease passes; then
// Abandon closes it as ERROR/EXECUTION_ABANDONED, and the owner's late
// completion is refused.
func ExampleStore_Abandon() {
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000)
	store := memstore.New(memstore.WithClock(func() time.Time { return now }))
	owner := canonical.NewOwner()
	_, _ = store.Begin(ctx, canonical.BeginRequest{
		RunID: "run-7", ToolCallID: "call_1", Tool: "kb.search", Owner: owner, Request: []byte(`{}`),
		TTL: time.Hour, Lease: 40 * time.Second, // the tool's timeout and a margin
	})
	_, err := store.Abandon(ctx, "run-7", "call_1")
	fmt.Println(canonical.CodeOf(err)) // the lease still runs

	now = now.Add(time.Minute)
	ids, _ := store.ExpiredLeases(ctx, "run-7", 100)
	rec, err := store.Abandon(ctx, "run-7", ids[0])
	fmt.Println(ids, rec.Status, rec.Error, err)

	_, err = store.Complete(ctx, canonical.Completion{
		RunID: "run-7", ToolCallID: "call_1", Owner: owner, Status: canonical.StatusReady,
		Evidence: canonical.EvidenceFound, Raw: []byte(`{}`), Result: []byte(`{}`),
	})
	fmt.Println(canonical.CodeOf(err))
	// Output:
	// INVALID_TRANSITION
	// [call_1] ERROR EXECUTION_ABANDONED <nil>
	// INVALID_TRANSITION
}

// The first Begin of a run fixes its limits; a worker joining the run may
// leave them zero, and one that brings other limits is refused.
func Example_runLimits() {
	ctx := context.Background()
	store := memstore.New()
	begin := func(id string, lim canonical.Limits) {
		_, err := store.Begin(ctx, canonical.BeginRequest{
			RunID: "run-9", ToolCallID: id, Tool: "kb.search", Owner: canonical.NewOwner(), Request: []byte(`{}`),
			TTL: time.Hour, Limits: lim,
		})
		if err != nil {
			fmt.Println(id, canonical.CodeOf(err))
			return
		}
		fmt.Println(id, "begun")
	}
	begin("c1", canonical.Limits{MaxCallsPerRun: 2})
	begin("c2", canonical.Limits{MaxCallsPerRun: 50})
	begin("c2", canonical.Limits{})
	begin("c3", canonical.Limits{})
	u, _ := store.Usage(ctx, "run-9")
	fmt.Println(u.Calls, u.Limits.MaxCallsPerRun)
	// Output:
	// c1 begun
	// c2 INVALID_ARGUMENT
	// c2 begun
	// c3 BUDGET_EXHAUSTED
	// 2 2
}

// A completion over the limits kept at Begin is refused whole: the record
// becomes ERROR/RESULT_TOO_LARGE and nothing is truncated.
func Example_resultTooLarge() {
	ctx := context.Background()
	store := memstore.New()
	owner := canonical.NewOwner()
	_, _ = store.Begin(ctx, canonical.BeginRequest{
		RunID: "run-1", ToolCallID: "c1", Tool: "logs.query", Owner: owner, Request: []byte(`{}`),
		TTL: time.Hour, Limits: canonical.Limits{MaxResultBytes: 16},
	})
	rec, err := store.Complete(ctx, canonical.Completion{
		RunID: "run-1", ToolCallID: "c1", Owner: owner, Status: canonical.StatusReady,
		Evidence: canonical.EvidenceFound, Raw: []byte(`[]`), Result: []byte(`{"far":"too long for sixteen bytes"}`),
	})
	fmt.Println(rec.Status, rec.Error, canonical.CodeOf(err), rec.Result == nil)
	// Output: ERROR RESULT_TOO_LARGE RESULT_TOO_LARGE true
}

// A principal's share of the store: its third run is refused, another
// principal's first is not.
func ExampleWithMaxRunsPerPrincipal() {
	ctx := context.Background()
	store := memstore.New(memstore.WithMaxRunsPerPrincipal(2))
	begin := func(principal, run string) error {
		_, err := store.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: "call_1", Tool: "kb.search",
			Owner: canonical.NewOwner(), Principal: principal, Request: []byte(`{}`), TTL: time.Hour})
		return err
	}
	fmt.Println(begin("mallory", "run-1"), begin("mallory", "run-2"))
	fmt.Println(canonical.CodeOf(begin("mallory", "run-3")))
	fmt.Println(begin("alice", "run-4"))
	// Output:
	// <nil> <nil>
	// STORE_FULL
	// <nil>
}
