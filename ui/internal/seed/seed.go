// Package seed writes the UI's demonstration and test runs into a store
// through its API: calls of every outcome, hostile text in a result and a
// request, a secret in a raw response, and a call whose lease has passed.
package seed

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// Payloads planted in the seeded run, which a page must show as text.
const (
	ScriptPayload  = `<script>alert(1)</script>`
	OnerrorPayload = `<img src=x onerror=alert(2)>`
	// Secret is planted in a raw response; the redactor must hide it.
	Secret = "sk_live_51HdemoDEMOdemo0000"
	// Principal owns the seeded runs.
	Principal = "ops@example"
)

// Stuck is the id of the seeded call whose lease passes at once.
const Stuck = "call_stuck_1"

// Hostile is the id of the seeded call whose result holds the payloads.
const Hostile = "call_hostile_1"

// Run writes one run: a READY call with evidence, one with none, an ERROR
// one, the hostile one and, in flight, Stuck (lease 1ms) and one whose
// lease runs for ttl. Every record lives ttl.
func Run(ctx context.Context, s canonical.Store, runID string, ttl time.Duration) error {
	type call struct {
		id, tool, request, raw, result string
		ev                             canonical.Evidence
		code                           canonical.Code
		open                           bool
		lease                          time.Duration
	}
	calls := []call{
		{id: "call_kb_1", tool: "kb.search", request: `{"query":"refund approval"}`,
			raw:    `{"blocks":[{"title":"Refund approval","score":0.91}],"api_key":"` + Secret + `"}`,
			result: `{"blocks":[{"title":"Refund approval","excerpt":"Refunds above 500 EUR need a second approver."}]}`, ev: canonical.EvidenceFound},
		{id: "call_logs_1", tool: "logs.query", request: `{"topic":"payments","query":"timeout"}`, raw: `{"hits":[]}`,
			result: `{"lines":[]}`, ev: canonical.NoEvidence},
		{id: Hostile, tool: "kb.search", request: `{"query":"` + OnerrorPayload + `"}`,
			raw: `{"html":"` + ScriptPayload + `"}`, result: `{"title":"` + ScriptPayload + `","note":"` + OnerrorPayload + `"}`, ev: canonical.EvidenceFound},
		{id: "call_ticket_1", tool: "ticket.update", request: `{"id":"T-1"}`, raw: `{"error":"upstream 503"}`, code: canonical.CodeExecutionFailed},
		{id: Stuck, tool: "logs.query", request: `{"topic":"payments","query":"deadlock"}`, open: true, lease: time.Millisecond},
		{id: "call_running_1", tool: "kb.search", request: `{"query":"refund windows"}`, open: true, lease: ttl},
	}
	for _, c := range calls {
		owner := canonical.NewOwner()
		if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: runID, ToolCallID: c.id, Tool: c.tool, Owner: owner,
			Principal: Principal, Request: []byte(c.request), TTL: ttl, Lease: c.lease}); err != nil {
			return fmt.Errorf("begin %s: %w", c.id, err)
		}
		if c.open {
			continue
		}
		comp := canonical.Completion{RunID: runID, ToolCallID: c.id, Owner: owner, Raw: []byte(c.raw)}
		if c.code != "" {
			comp.Status, comp.Evidence, comp.Code = canonical.StatusError, canonical.EvidenceError, c.code
		} else {
			comp.Status, comp.Evidence, comp.Result = canonical.StatusReady, c.ev, []byte(c.result)
		}
		if _, err := s.Complete(ctx, comp); err != nil {
			return fmt.Errorf("complete %s: %w", c.id, err)
		}
	}
	time.Sleep(2 * time.Millisecond) // the stuck call's lease has passed when Run returns
	// A valid progress report, then an invalid one, on stores that count them.
	if p, ok := s.(observer); ok {
		if _, err := p.ObserveProgress(ctx, runID, Principal, true, 3); err != nil {
			return fmt.Errorf("progress: %w", err)
		}
		if _, err := p.ObserveProgress(ctx, runID, Principal, false, 3); err != nil {
			return fmt.Errorf("progress: %w", err)
		}
	}
	return nil
}

// observer is a store that counts progress reports (memstore and
// redisstore are).
type observer interface {
	ObserveProgress(ctx context.Context, runID, principal string, valid bool, threshold int64) (canonical.ProtocolState, error)
}

// Long writes a run of n READY calls, for the bounded-page figures; its
// limits leave room for 64 calls more.
func Long(ctx context.Context, s canonical.Store, runID string, n int, ttl time.Duration) error {
	lim := canonical.Limits{MaxCallsPerRun: int64(n) + 64, MaxCallsPerTool: int64(n) + 64, MaxRunBytes: int64(n+64) * 4096}
	for i := range n {
		id := "call_" + strconv.Itoa(i)
		owner := canonical.NewOwner()
		if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: runID, ToolCallID: id, Tool: "kb.search", Owner: owner,
			Principal: Principal, Request: []byte(`{"query":"q` + strconv.Itoa(i) + `"}`), TTL: ttl, Limits: lim}); err != nil {
			return fmt.Errorf("begin %s: %w", id, err)
		}
		if _, err := s.Complete(ctx, canonical.Completion{RunID: runID, ToolCallID: id, Owner: owner, Status: canonical.StatusReady,
			Evidence: canonical.EvidenceFound, Raw: []byte(`{"hits":1}`), Result: []byte(`{"hit":` + strconv.Itoa(i) + `}`)}); err != nil {
			return fmt.Errorf("complete %s: %w", id, err)
		}
	}
	return nil
}
