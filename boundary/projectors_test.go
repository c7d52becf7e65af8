package boundary_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/querylog"
	"github.com/toolcanon/toolcanon/projectors/rag"
	"github.com/toolcanon/toolcanon/registry"
)

// The shipped projectors behind the boundary: the record and the bounded
// result name the exact framework id and the current run.

var (
	ragDef = registry.Definition{
		Name: "kb.search", Version: "1.0.0", Description: "Search the knowledge base.",
		InputSchema: []byte(`{"type":"object","additionalProperties":false,"required":["query"],
			"properties":{"query":{"type":"string","minLength":1,"maxLength":256}}}`),
		Effect: registry.EffectRead, Risk: registry.RiskLow, Permissions: []string{"kb.read"}, Timeout: 30 * time.Second,
	}
	logDef = registry.Definition{
		Name: "logs.query", Version: "1.0.0", Description: "Query recent logs of a topic.",
		InputSchema: []byte(`{"type":"object","additionalProperties":false,"required":["topic","query"],
			"properties":{"topic":{"type":"string","minLength":1,"maxLength":128},
				"query":{"type":"string","minLength":1,"maxLength":512},
				"lookback_minutes":{"type":"integer","minimum":1,"maximum":10080}}}`),
		Effect: registry.EffectRead, Risk: registry.RiskLow, Permissions: []string{"kb.read"}, Timeout: 30 * time.Second,
	}
)

// ragBackend answers the legacy knowledge response: one usable block for
// "refunds", none otherwise.
var ragBackend = boundary.ToolFunc(func(_ context.Context, input []byte) ([]byte, error) {
	var in struct{ Query string }
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	blocks := `[]`
	if strings.Contains(in.Query, "refunds") {
		blocks = `[{"source":"kb","document_id":"refunds-101","title":"Refund approval",
			"excerpt":"Refunds above 500 EUR need a second approver.","content":"full body","score":0.91}]`
	}
	return []byte(`{"success":true,"message":"ok","context_pack":"every body","blocks":` + blocks + `}`), nil
})

func logBackend(now time.Time) boundary.Tool {
	mock := &querylog.Mock{Now: func() time.Time { return now }, Entries: []querylog.MockEntry{
		{Topic: "checkout", Timestamp: now.Add(-5 * time.Minute), Level: "ERROR", Service: "checkout-api",
			Message: "payment timeout after 3000ms for order 81723", Instance: "checkout-api-7d9f8b6c5d-x2k4p"},
	}}
	return boundary.ToolFunc(func(ctx context.Context, input []byte) ([]byte, error) {
		req, err := querylog.ParseRequest(input)
		if err != nil {
			return nil, err
		}
		return mock.Search(ctx, req)
	})
}

// realBoundary binds the RAG and query-log projectors, with ragCfg for RAG.
func (fx *fixture) realBoundary(t *testing.T, ragCfg rag.Config) {
	t.Helper()
	reg, err := registry.New(ragDef, logDef)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := rag.New(ragCfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	lcfg := querylog.DefaultConfig()
	lcfg.Now = func() time.Time { return now }
	lp, err := querylog.New(lcfg)
	if err != nil {
		t.Fatal(err)
	}
	fx.b, err = boundary.New(fx.store, reg, testPolicy(fx.marker),
		boundary.Bind("search_docs", "kb.search", "1.0.0", ragBackend, rp),
		boundary.Bind("query_logs", "logs.query", "1.0.0", logBackend(now), lp))
	if err != nil {
		t.Fatal(err)
	}
}

func TestShippedProjectorsNameTheCallAndRun(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.realBoundary(t, rag.DefaultConfig())
		cases := []struct {
			id, tool, input string
			ev              canonical.Evidence
		}{
			{"call_8f2k", "search_docs", `{"query":"refunds over 500"}`, canonical.EvidenceFound},
			{"toolu_01A09q90qw90lq917835lq9", "search_docs", `{"query":"nothing here"}`, canonical.NoEvidence},
			{"0f8e2c1a-5b7d-4e3f-9a1b-2c3d4e5f6a7b", "query_logs", `{"topic":"checkout","query":"timeout","lookback_minutes":30}`, canonical.EvidenceFound},
			{"call.logs-2", "query_logs", `{"topic":"checkout","query":"no such message"}`, canonical.NoEvidence},
		}
		for _, c := range cases {
			res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope(c.id, c.tool, c.input))
			fx.checkSafe(t, res)
			if res.Status() != canonical.StatusReady || res.Evidence() != c.ev || res.ToolCallID() != c.id {
				t.Fatalf("%s: (%s, %s, %q) %v, want READY %s", c.id, res.Status(), res.Evidence(), res.ToolCallID(), res.Err(), c.ev)
			}
			// The bounded result carries the exact framework id ...
			var got struct {
				ToolCallID *string `json:"tool_call_id"`
			}
			if err := json.Unmarshal(res.AgentJSON(), &got); err != nil {
				t.Fatal(err)
			}
			if got.ToolCallID == nil || *got.ToolCallID != c.id {
				t.Fatalf("%s: result's tool_call_id = %v: %s", c.id, got.ToolCallID, res.AgentJSON())
			}
			// ... and the record is the one of this id in this run, holding
			// that very result.
			rec, err := fx.store.Get(context.Background(), fx.run.ID, c.id)
			if err != nil {
				t.Fatal(err)
			}
			if rec.RunID != fx.run.ID || rec.ToolCallID != c.id || rec.Tool != c.tool || rec.Status != canonical.StatusReady || rec.Evidence != c.ev {
				t.Fatalf("%s: record (%q, %q, %q, %s, %s)", c.id, rec.RunID, rec.ToolCallID, rec.Tool, rec.Status, rec.Evidence)
			}
			if string(rec.Result) != string(res.AgentJSON()) {
				t.Fatalf("%s: record result %s, agent saw %s", c.id, rec.Result, res.AgentJSON())
			}
			var req struct {
				ToolCallID string `json:"tool_call_id"`
				RunID      string `json:"run_id"`
			}
			if err := json.Unmarshal(rec.Request, &req); err != nil || req.ToolCallID != c.id || req.RunID != fx.run.ID {
				t.Fatalf("%s: request names (%q, %q): %v", c.id, req.ToolCallID, req.RunID, err)
			}
		}
		// The same ids in another run are other records: nothing here leaks
		// into it.
		other := fx.run
		other.ID = fx.run.ID + "-other"
		for _, c := range cases {
			if _, err := fx.store.Get(context.Background(), other.ID, c.id); canonical.CodeOf(err) != canonical.CodeNotFound {
				t.Fatalf("%s found in run %s: %v", c.id, other.ID, err)
			}
		}
	})
}

func TestShippedRAGOverflowIsResultTooLarge(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		// Budgets in which the query and id fit but no evidence item does:
		// the projector says RESULT_TOO_LARGE, and so does the record.
		cfg := rag.DefaultConfig()
		cfg.Limits = projectors.Limits{Total: 320, Collection: 64, Item: 64, Items: 5, Text: 64}
		cfg.MaxQueryBytes = 16
		fx.realBoundary(t, cfg)
		id := "call_" + strings.Repeat("x", 40)
		res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope(id, "search_docs", `{"query":"refunds"}`))
		fx.checkError(t, res, id, canonical.CodeResultTooLarge, true)
		rec, err := fx.store.Get(context.Background(), fx.run.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status != canonical.StatusError || rec.Error != canonical.CodeResultTooLarge || len(rec.Result) != 0 || len(rec.Raw) == 0 {
			t.Fatalf("record %s/%s, result %d bytes, raw %d bytes", rec.Status, rec.Error, len(rec.Result), len(rec.Raw))
		}
	})
}
