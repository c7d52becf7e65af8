package querylog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/querylog"
)

// The result names its call with the framework's exact tool_call_id, for
// evidence and for no evidence alike, right after source_kind.
func TestQueryLogResultNamesItsCall(t *testing.T) {
	p := newProjector(t, nil)
	mock := &querylog.Mock{Entries: mockEntries(), Now: func() time.Time { return now }}
	ids := []string{"call_1", "toolu_01A09q90qw90lq917835lq9", "0f8e2c1a-5b7d-4e3f-9a1b-2c3d4e5f6a7b",
		"a." + strings.Repeat("Z-_9", 31) + "x"}
	for _, input := range []string{
		`{"topic":"checkout","query":"payment timeout","lookback_minutes":60}`,
		`{"topic":"checkout","query":"no such text","lookback_minutes":15}`,
	} {
		req, err := querylog.ParseRequest([]byte(input))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := mock.Search(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if canonical.ValidateToolCallID(id) != nil {
				t.Fatalf("test id %q is not a valid tool_call_id", id)
			}
			pr, err := p.Project(context.Background(), projectors.Call{ToolCallID: id, Input: []byte(input)}, raw)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, pr.Result, querylog.DefaultConfig().Limits.Total, nil)
			var r struct {
				ToolCallID *string `json:"tool_call_id"`
			}
			if err := json.Unmarshal(pr.Result, &r); err != nil {
				t.Fatal(err)
			}
			if r.ToolCallID == nil || *r.ToolCallID != id {
				t.Fatalf("%s: tool_call_id = %v, want %q: %s", pr.Evidence, r.ToolCallID, id, pr.Result)
			}
			if !bytes.HasPrefix(pr.Result, []byte(`{"source_kind":"MOCK","tool_call_id":"`+id+`",`)) {
				t.Fatalf("tool_call_id not after source_kind: %s", pr.Result)
			}
		}
	}
}
