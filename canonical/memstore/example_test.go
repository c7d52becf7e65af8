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

	// A second invocation with the same id is refused and never runs.
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

	ids, _ := store.Completed(ctx, "run-42")
	u, _ := store.Usage(ctx, "run-42")
	fmt.Println(ids, u.Calls)
	// Output:
	// PROJECTING <nil>
	// DUPLICATE_TOOL_CALL
	// READY EVIDENCE_FOUND <nil>
	// [call_8f2k] 1
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
