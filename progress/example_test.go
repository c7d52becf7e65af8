package progress_test

import (
	"context"
	"fmt"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/progress"
)

// exampleRun records three calls the way the boundary does: one found
// evidence, one found nothing, one failed.
func exampleRun(store canonical.Store, run string) {
	ctx := context.Background()
	calls := []struct {
		id, tool string
		ev       canonical.Evidence
		result   string
	}{
		{"call_logs_1", "logs.query", canonical.EvidenceFound, `{"match_count":12,"patterns":[{"pattern":"timeout calling ledger"}]}`},
		{"call_deploys_2", "deploys.list", canonical.NoEvidence, `{"scope":{"service":"ledger","lookback_minutes":60},"deploys":[]}`},
		{"call_db_3", "db.health", "", ""},
	}
	for _, c := range calls {
		owner := canonical.NewOwner()
		_, _ = store.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: c.id, Tool: c.tool, Owner: owner,
			Request: []byte(`{"q":"ledger"}`), TTL: time.Hour})
		done := canonical.Completion{RunID: run, ToolCallID: c.id, Owner: owner, Status: canonical.StatusReady,
			Evidence: c.ev, Raw: []byte(`{"raw":"never shown"}`), Result: []byte(c.result)}
		if c.ev == "" {
			done = canonical.Completion{RunID: run, ToolCallID: c.id, Owner: owner, Status: canonical.StatusError, Code: canonical.CodeToolTimeout}
		}
		_, _ = store.Complete(ctx, done)
	}
}

func ExampleProject() {
	store := memstore.New()
	exampleRun(store, "run-42")

	facts, err := progress.Project(context.Background(), store, "run-42", progress.Options{MaxSummaryBytes: 40})
	if err != nil {
		panic(err)
	}
	for _, f := range facts.Facts {
		fmt.Printf("%s %s %s truncated=%v\n  %s\n", f.ToolCallID, f.Tool, f.Evidence, f.Truncated, f.Summary)
	}
	for _, e := range facts.Excluded {
		fmt.Println("excluded:", e.ToolCallID, e.Reason)
	}
	// Output:
	// call_logs_1 logs.query EVIDENCE_FOUND truncated=true
	//   {"match_count":12,"patterns":[{"pattern"
	// call_deploys_2 deploys.list NO_EVIDENCE truncated=true
	//   {"scope":{"service":"ledger","lookback_m
	// excluded: call_db_3 ERROR
}

func ExampleObserve() {
	ctx := context.Background()
	store := memstore.New()
	exampleRun(store, "run-42")
	facts, _ := progress.Project(ctx, store, "run-42", progress.Options{})
	opts := progress.ProtocolOptions{Threshold: 3}

	// The agent cites the failed call: a repairable observation.
	bad := `{"claims":[{"text":"The ledger DB is down.","kind":"positive","cites":["call_logs_1","call_db_3"]}]}`
	obs, _ := progress.Observe(ctx, store, facts, []byte(bad), opts)
	fmt.Println(obs.Valid, obs.Code, obs.State.Violations)
	fmt.Println(obs.Findings[0])

	// It repairs the report; the violation count stays.
	good := `{"claims":[{"text":"The ledger calls time out.","kind":"positive","cites":["call_logs_1"]}]}`
	obs, _ = progress.Observe(ctx, store, facts, []byte(good), opts)
	fmt.Println(obs.Valid, obs.State.Pending, obs.State.Violations)
	// Output:
	// false INVALID_PROGRESS_PROTOCOL 1
	// claims[0].cites[1] (call_db_3): EXCLUDED_ID ERROR: this call cannot be evidence; cite another call or drop the claim
	// true 0 1
}

func ExampleRelease() {
	ctx := context.Background()
	store := memstore.New()
	exampleRun(store, "run-42")
	facts, _ := progress.Project(ctx, store, "run-42", progress.Options{})

	final := []byte(`{"claims":[
	  {"text":"Refunds fail: the ledger calls time out.","kind":"positive","cites":["call_logs_1"]},
	  {"text":"No deploy touched the ledger in the last hour.","kind":"negative","cites":["call_deploys_2"]},
	  {"text":"The ledger DB is healthy.","kind":"positive","cites":["call_deploys_2"]}]}`)
	obs, _ := progress.Observe(ctx, store, facts, final, progress.ProtocolOptions{})
	d := progress.Release(facts, obs.Report, obs.State)
	fmt.Println(d.Outcome)
	for _, c := range d.Claims {
		fmt.Println(c.Index, c.Verdict)
	}
	for _, r := range d.Reasons {
		fmt.Println(r)
	}

	// Once the protocol is violated, claims are withheld and only the
	// EVIDENCE_FOUND facts are released.
	d = progress.Release(facts, obs.Report, canonical.ProtocolState{Violations: 3, Violated: true})
	fmt.Println(d.Outcome, len(d.Claims), d.Facts[0].ToolCallID)
	// Output:
	// PARTIAL
	// 0 VERIFIED
	// 1 NEGATIVE
	// 2 UNSUPPORTED
	// report: UNSUPPORTED_CLAIMS: unsupported claims are marked and not verified
	// claims[2].cites[0] (call_deploys_2): NO_EVIDENCE_FOR_POSITIVE: this call found nothing; cite it only in a "negative" claim, or cite a call that found evidence
	// WITHHELD 0 call_logs_1
}
