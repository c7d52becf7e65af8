package gateway_test

import (
	"cmp"
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/projectors/mcpresult"
	"github.com/toolcanon/toolcanon/registry"
)

// A principal over its cap of new runs per minute is refused with
// RATE_LIMITED as a tool result, at once, and nothing is recorded; calls of
// the runs it already has go on.
func TestNewRunsPerMinuteAreCapped(t *testing.T) {
	w := newWorld(t, gateway.Options{Caps: gateway.Caps{MaxNewRunsPerMinute: 3}})
	for i := 0; i < 3; i++ {
		if o := mustCall(w.ctx, t, w.cs, "search", "call-"+strconv.Itoa(i), "run-"+strconv.Itoa(i), map[string]any{"query": "x"}); !o.ready {
			t.Fatalf("run %d: %s", i, o.text)
		}
	}
	start := time.Now()
	o := mustCall(w.ctx, t, w.cs, "search", "call-9", "run-9", map[string]any{"query": "x"})
	if o.code != "RATE_LIMITED" || o.obj["tool_call_id"] != "call-9" || time.Since(start) > 5*time.Second {
		t.Fatalf("a fourth new run: %s", o.text)
	}
	if _, err := w.store.Get(w.ctx, "run-9", "call-9"); canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Fatalf("the refused call has a record: %v", err)
	}
	if o := mustCall(w.ctx, t, w.cs, "search", "call-10", "run-1", map[string]any{"query": "x"}); !o.ready {
		t.Fatalf("a known run after the cap: %s", o.text)
	}
}

// A principal with as many live runs as its cap gets STORE_FULL for one
// more, and nothing is recorded; its calls in the runs it has go on, and
// another principal's new runs are not refused. A progress tool on a new
// run counts none.
func TestLiveRunsPerPrincipalAreCapped(t *testing.T) {
	byMeta := gateway.RunResolverFunc(func(_ context.Context, c *gateway.Call) (boundary.RunContext, error) {
		who, _ := c.Meta["test/principal"].(string)
		return boundary.RunContext{ID: c.RunID, Project: "support", Active: true, TTL: time.Minute,
			Principal: registry.Principal{Subject: cmp.Or(who, "agent-1"), ExpiresAt: time.Now().Add(time.Hour)}}, nil
	})
	w := newWorld(t, gateway.Options{Runs: byMeta, Progress: &gateway.ProgressTools{}, Caps: gateway.Caps{MaxLiveRuns: 2}})
	call := func(tool, id, run, who string) outcome {
		t.Helper()
		meta := mcp.Meta{gateway.MetaToolCallID: id, gateway.MetaRunID: run, "test/principal": who}
		args := map[string]any{"query": "x"}
		if tool == "progress_facts" {
			args = map[string]any{}
		}
		res, err := w.cs.CallTool(w.ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		return decode(t, res)
	}
	for i := 0; i < 2; i++ {
		if o := call("search", "call-"+strconv.Itoa(i), "run-"+strconv.Itoa(i), ""); !o.ready {
			t.Fatalf("run %d: %s", i, o.text)
		}
	}
	if o := call("progress_facts", "", "run-facts", ""); o.code != "" {
		t.Fatalf("facts of a new run: %s", o.text)
	}
	o := call("search", "call-9", "run-9", "")
	if o.code != "STORE_FULL" || o.obj["tool_call_id"] != "call-9" {
		t.Fatalf("a third live run: %s", o.text)
	}
	if _, err := w.store.Usage(w.ctx, "run-9"); canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Fatalf("the refused run has state: %v", err)
	}
	if o := call("search", "call-10", "run-1", ""); !o.ready {
		t.Fatalf("a live run after the cap: %s", o.text)
	}
	if o := call("search", "call-o1", "run-o1", "agent-2"); !o.ready {
		t.Fatalf("another principal's new run: %s", o.text)
	}
}

// The progress tools count against the caps as any tool does: a facts
// projection reads a run's whole index, so that they must not be a way
// around them.
func TestProgressToolsAreCapped(t *testing.T) {
	w := newWorld(t, gateway.Options{Progress: &gateway.ProgressTools{}, Caps: gateway.Caps{MaxNewRunsPerMinute: 2}})
	for i := 0; i < 2; i++ {
		if o := mustCall(w.ctx, t, w.cs, "progress_facts", "facts-"+strconv.Itoa(i), "run-"+strconv.Itoa(i), map[string]any{}); o.code != "" {
			t.Fatalf("facts of run %d: %s", i, o.text)
		}
	}
	if o := mustCall(w.ctx, t, w.cs, "progress_facts", "facts-9", "run-9", map[string]any{}); o.code != "RATE_LIMITED" {
		t.Fatalf("facts of a third new run: %s", o.text)
	}
	if o := mustCall(w.ctx, t, w.cs, "search", "call-9", "run-8", map[string]any{"query": "x"}); o.code != "RATE_LIMITED" {
		t.Fatalf("a call of a fourth new run: %s", o.text)
	}
}

// A principal with as many calls in flight as its cap is refused at once
// with RATE_LIMITED; when one ends, the next call goes through.
func TestCallsInFlightAreCapped(t *testing.T) {
	ctx := context.Background()
	reg, err := registry.New(testDefs()...)
	if err != nil {
		t.Fatal(err)
	}
	entered, unblock := make(chan struct{}, 8), make(chan struct{})
	tool := boundary.ToolFunc(func(ctx context.Context, input []byte) ([]byte, error) {
		entered <- struct{}{}
		select {
		case <-unblock:
		case <-ctx.Done():
		}
		return json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": "done"}}})
	})
	proj, err := mcpresult.New(mcpresult.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	b, err := boundary.New(memstore.New(), reg, allowAll, boundary.Bind("search", "kb.search", "1.0.0", tool, proj))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gateway.NewServer(b, gateway.Options{Runs: fixedRun("run-1"), Caps: gateway.Caps{MaxCallsInFlight: 2}})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, srv)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if o, err := callTool(ctx, t, cs, "search", "slow-"+strconv.Itoa(i), "", map[string]any{"query": "x"}); err != nil || !o.ready {
				t.Errorf("slow call %d: %v %s", i, err, o.text)
			}
		}()
	}
	<-entered
	<-entered
	start := time.Now()
	o := mustCall(ctx, t, cs, "search", "third", "", map[string]any{"query": "x"})
	if o.code != "RATE_LIMITED" || time.Since(start) > 5*time.Second {
		t.Fatalf("a third call in flight: %s after %v", o.text, time.Since(start))
	}
	close(unblock)
	wg.Wait()
	if o := mustCall(ctx, t, cs, "search", "fourth", "", map[string]any{"query": "x"}); !o.ready {
		t.Fatalf("a call after the others ended: %s", o.text)
	}
}
