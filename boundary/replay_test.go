package boundary_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
)

func TestReplaySameRequestReturnsStoredResult(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.rebuild(nil, boundary.WithReplay())
		first := fx.invoke("call_rp")
		fx.checkReady(t, first, canonical.EvidenceFound)
		before := fx.checkRecord(t, "call_rp", wantRec(canonical.StatusReady, canonical.EvidenceFound, "", fx.raw(), first.AgentJSON()))

		// The same request, spelled differently: its canonical form is equal.
		again := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_rp", "kb.search", `{ "limit" : 5, "query" : "redis \u0074tl" }`))
		fx.checkReady(t, again, canonical.EvidenceFound)
		if !again.Replayed() || again.Executed() {
			t.Errorf("replayed %v, executed %v", again.Replayed(), again.Executed())
		}
		if !bytes.Equal(again.AgentJSON(), first.AgentJSON()) {
			t.Errorf("replay = %s, first = %s", again.AgentJSON(), first.AgentJSON())
		}
		fx.calls(t, 1, 1)
		after := fx.checkRecord(t, "call_rp", wantRec(canonical.StatusReady, canonical.EvidenceFound, "", fx.raw(), first.AgentJSON()))
		if after.Owner != before.Owner || !after.UpdatedAt.Equal(before.UpdatedAt) || after.TTL > before.TTL {
			t.Error("a replay changed the record")
		}
		if u, err := fx.store.Usage(context.Background(), fx.run.ID); err != nil || u.Calls != 1 {
			t.Errorf("usage = %+v, %v: a replay was counted", u, err)
		}
	})
}

func TestReplayDifferentRequestIsDuplicate(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.rebuild(nil, boundary.WithReplay())
		fx.checkReady(t, fx.invoke("call_rd"), canonical.EvidenceFound)

		res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_rd", "kb.search", `{"query":"redis ttl","limit":6}`))
		fx.checkError(t, res, "call_rd", canonical.CodeDuplicateToolCall, false)
		// Same input through another agent-facing name of the same definition.
		res = fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_rd", "kb.find", okInput))
		fx.checkError(t, res, "call_rd", canonical.CodeDuplicateToolCall, false)
		// Same input by another principal: never someone else's result, nor
		// a word about the run.
		fx.run.Principal.Subject = "user:bob"
		fx.checkError(t, fx.invoke("call_rd"), "call_rd", canonical.CodeRunForbidden, false)
		if res.Replayed() {
			t.Error("a refused duplicate is marked replayed")
		}
		fx.calls(t, 1, 1)
	})
}

func TestReplayOfStoredError(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.rebuild(nil, boundary.WithReplay())
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) { return nil, errors.New("boom " + fx.marker) }
		fx.checkError(t, fx.invoke("call_re"), "call_re", canonical.CodeExecutionFailed, true)

		fx.tool.fn = func(context.Context, []byte) ([]byte, error) { return fx.raw(), nil }
		res := fx.invoke("call_re")
		fx.checkError(t, res, "call_re", canonical.CodeExecutionFailed, false)
		if !res.Replayed() {
			t.Error("the stored error was not marked replayed")
		}
		fx.calls(t, 1, 0)
		fx.checkRecord(t, "call_re", errRec(canonical.CodeExecutionFailed, nil))
	})
}

func TestReplayWhileFirstIsProjecting(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.rebuild(nil, boundary.WithReplay())
		var inner boundary.Result
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
			if fx.tool.calls.Load() == 1 {
				inner = fx.invoke("call_rw") // the first is still PROJECTING
			}
			return fx.raw(), nil
		}
		fx.checkReady(t, fx.invoke("call_rw"), canonical.EvidenceFound)
		fx.checkError(t, inner, "call_rw", canonical.CodeToolCallInProgress, false)
		fx.calls(t, 1, 1)
	})
}

// Without replay too, a duplicate of a call that is still running is told to
// wait for it, not to call again; once it is over, a duplicate is a plain
// DUPLICATE_TOOL_CALL.
func TestDuplicateWhileFirstIsProjecting(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		var inner boundary.Result
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
			if fx.tool.calls.Load() == 1 {
				inner = fx.invoke("call_dw")
			}
			return fx.raw(), nil
		}
		fx.checkReady(t, fx.invoke("call_dw"), canonical.EvidenceFound)
		fx.checkError(t, inner, "call_dw", canonical.CodeToolCallInProgress, false)
		if !bytes.Contains(inner.AgentJSON(), []byte("wait for its result")) {
			t.Errorf("agent saw %s; want the in-progress hint", inner.AgentJSON())
		}
		fx.checkError(t, fx.invoke("call_dw"), "call_dw", canonical.CodeDuplicateToolCall, false)
		fx.calls(t, 1, 1)
	})
}

func TestNoReplayByDefault(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.checkReady(t, fx.invoke("call_nr"), canonical.EvidenceFound)
		res := fx.invoke("call_nr")
		fx.checkError(t, res, "call_nr", canonical.CodeDuplicateToolCall, false)
		if res.Replayed() {
			t.Error("replayed without WithReplay")
		}
		fx.calls(t, 1, 1)
	})
}
