package boundary_test

// Seed scenarios and the tests that show them. Every test runs on memstore
// and on redisstore over a real redis-server, checks the record (or its
// absence) field by field, and checks that the agent-facing JSON holds no raw
// bytes, keys, Redis error text or stack trace.
//
// Seed 000 (canonical-tool-invocation-store):
//   Cross-Run Tool Call is rejected ........... TestCrossRunIsRejected
//   Unauthorized or writable Tool is rejected . TestUnauthorizedIsRejected, TestWritableToolIsRejected,
//                                               TestPolicyUnavailableIsRejected
//   Tool begins execution ..................... TestRecordIsProjectingWhileToolRuns
//   Projector succeeds ........................ TestProjectorSucceeds
//   No evidence projection completes .......... TestNoEvidenceIsReadyAndNeverRetried
//   Projection fails .......................... TestProjectorErrorIsProjectionFailed, TestProjectorPanicIsProjectionFailed,
//                                               TestInvalidEvidenceIsProjectionFailed, TestInvalidJSONResultIsProjectionFailed
//   Duplicate Tool Call ID is submitted ....... TestDuplicateIsRefusedAndFirstRecordIntact
//   Framework ID is preserved ................. TestFrameworkIDIsPreserved
//   (complete request in the record) .......... TestCanonicalRequestShape, TestRequestEscapesSubject
//   Read does not renew TTL ................... TestTTLIsSetOnceAndNeverRenewed
//   Raw response is too large ................. TestRawTooLargeSkipsProjector
//   Agent result is too large ................. TestAgentResultTooLarge
//   Tool execution throws ..................... TestExecutionErrorIsExecutionFailed, TestExecutionPanicIsExecutionFailed
//   Fake projector tests pass ................. all of this file (success, no evidence, errors, duplicate, TTL,
//                                               capacity: TestRunBytesOverflowAtComplete, TestBudgetExhausted)
//   Completed calls are projected ............. TestCompletionIndexKeepsOrder
//   Indexed identity is invalid ............... TestErrorRecordsAreNeverReferencable (the resolution itself is
//                                               package progress's; the boundary guarantees what it resolves)
//
// Seed 001 "What Changes":
//   Tool Call ID gate (blank/unsafe) .......... TestBlankOrUnsafeToolCallIDIsRejected, TestUnsafeRunIDIsRejected
//   JSON Schema gate / invalid JSON ........... TestInvalidJSONIsRejected, TestSchemaViolationIsRejected
//   read-only gate ............................ TestWritableToolIsRejected
//   approval .................................. TestApprovalRequiredIsRejected
//   Run gate: inactive / expired deadline ..... TestInactiveRunIsRejected, TestClosedRunIsRejectedByStore,
//                                               TestExpiredDeadlineIsRejected, TestCancelledContextIsRejected
//   unknown tool .............................. TestUnknownToolIsRejected
//   budget gate (run and tool) ................ TestBudgetExhausted, TestToolBudgetExhausted,
//                                               TestParallelBudgetIsExact (parallel_test.go)
//   duplicate / cross-run ..................... TestDuplicateIsRefusedAndFirstRecordIntact, TestCrossRunIsRejected
//   execution error / timeout ................. TestExecutionErrorIsExecutionFailed, TestExecutionPanicIsExecutionFailed,
//                                               TestTimeoutByRunDeadline, TestTimeoutOfToolIgnoringContext,
//                                               TestTimeoutByToolDefinition, TestToolGoexitIsExecutionFailed
//   bounded time (projector, record TTL) ...... bounded_test.go
//   projection error, no-evidence ............. see seed 000 above
//   raw oversize, capacity .................... TestRawTooLargeSkipsProjector, TestAgentResultTooLarge,
//                                               TestRunBytesOverflowAtComplete
//   store unavailable ......................... TestStoreUnavailableAtBegin, TestStoreUnavailableKilledServer,
//                                               TestStoreUnavailableAtComplete, TestCompleteRetryRecovers,
//                                               TestServerKilledWhileToolRuns
//   duplicate replay (option) ................. replay_test.go

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
	"github.com/toolcanon/toolcanon/registry"
)

func TestProjectorSucceeds(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		res := fx.invoke("call_ok")
		fx.checkReady(t, res, canonical.EvidenceFound)
		wantResult := `{"evidence":[{"source":"kb","document_id":"d1"}],"returned":1,"tool_call_id":"call_ok"}`
		if string(res.AgentJSON()) != wantResult {
			t.Errorf("agent JSON = %s, want %s", res.AgentJSON(), wantResult)
		}
		if !res.Executed() || res.Replayed() || res.ToolCallID() != "call_ok" {
			t.Errorf("executed %v, replayed %v, id %q", res.Executed(), res.Replayed(), res.ToolCallID())
		}
		fx.calls(t, 1, 1)
		rec := fx.checkRecord(t, "call_ok", want{
			status: canonical.StatusReady, evidence: canonical.EvidenceFound, raw: fx.raw(), result: []byte(wantResult),
		})
		if !rec.Referencable() {
			t.Error("a READY EVIDENCE_FOUND record is not referencable")
		}
	})
}

func TestCanonicalRequestShape(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_shape", "kb.search", `{ "limit": 5, "query": "redis \u0074tl" }`))
		fx.checkReady(t, res, canonical.EvidenceFound)
		rec := fx.checkRecord(t, "call_shape", want{
			status: canonical.StatusReady, evidence: canonical.EvidenceFound, raw: fx.raw(), result: res.AgentJSON(),
		})
		plan, err := fx.reg.Prepare(context.Background(), testPolicy(fx.marker), registry.Request{
			Project: fx.run.Project, Principal: fx.run.Principal, Tool: "kb.search", Version: "1.0.0", Input: []byte(okInput),
		})
		if err != nil {
			t.Fatal(err)
		}
		in, act := plan.InputDigest(), plan.ActionDigest()
		sum := sha256.Sum256([]byte(`{"limit":5,"query":"redis ttl"}`))
		if in != sum {
			t.Fatal("input digest is not the digest of the canonical input")
		}
		wantReq := `{"action_sha256":"` + hex.EncodeToString(act[:]) + `","agent_tool":"kb.search",` +
			`"input":{"limit":5,"query":"redis ttl"},"input_sha256":"` + hex.EncodeToString(in[:]) + `",` +
			`"project":"proj-1","run_id":"` + fx.run.ID + `","subject":"user:alice","tool":"kb.search",` +
			`"tool_call_id":"call_shape","version":"1.0.0"}`
		if string(rec.Request) != wantReq {
			t.Errorf("request =\n%s\nwant\n%s", rec.Request, wantReq)
		}
		if c, err := registry.Canonicalize(rec.Request); err != nil || !bytes.Equal(c, rec.Request) {
			t.Errorf("request is not RFC 8785 canonical: %s (%v)", c, err)
		}
	})
}

func TestRequestEscapesSubject(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.Principal.Subject = `user:"o\k"`
		fx.checkReady(t, fx.invoke("call_esc"), canonical.EvidenceFound)
		rec := fx.checkRecord(t, "call_esc", wantRec(canonical.StatusReady, canonical.EvidenceFound, "", fx.raw(), fx.mustResult(t, "call_esc")))
		var req struct{ Subject string }
		if err := json.Unmarshal(rec.Request, &req); err != nil || req.Subject != `user:"o\k"` {
			t.Errorf("subject = %q, %v in %s", req.Subject, err, rec.Request)
		}
		if c, err := registry.Canonicalize(rec.Request); err != nil || !bytes.Equal(c, rec.Request) {
			t.Errorf("request is not RFC 8785 canonical: %s (%v)", c, err)
		}
	})
}

func TestRecordIsProjectingWhileToolRuns(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		var seen canonical.Record
		var seenErr error
		fx.tool.fn = func(ctx context.Context, input []byte) ([]byte, error) {
			seen, seenErr = fx.store.Get(ctx, fx.run.ID, "call_inflight")
			if string(input) != `{"limit":5,"query":"redis ttl"}` {
				t.Errorf("tool input = %s, want the canonical input", input)
			}
			return fx.raw(), nil
		}
		fx.checkReady(t, fx.invoke("call_inflight"), canonical.EvidenceFound)
		if seenErr != nil {
			t.Fatalf("no record while the tool ran: %v", seenErr)
		}
		if seen.Status != canonical.StatusProjecting || seen.Evidence != canonical.EvidenceUnknown || seen.Error != "" ||
			seen.ToolCallID != "call_inflight" || seen.RunID != fx.run.ID || seen.Tool != "kb.search" ||
			len(seen.Raw) != 0 || len(seen.Result) != 0 || !canonical.IsJSONObject(seen.Request) {
			t.Errorf("record while running = %+v", seen)
		}
		final := fx.checkRecord(t, "call_inflight", want{
			status: canonical.StatusReady, evidence: canonical.EvidenceFound, raw: fx.raw(), result: fx.mustResult(t, "call_inflight"),
		})
		if !bytes.Equal(final.Request, seen.Request) || final.Owner != seen.Owner || !final.CreatedAt.Equal(seen.CreatedAt) {
			t.Error("completion changed the request, owner or creation time")
		}
	})
}

// mustResult is the default projector's result for id.
func (fx *fixture) mustResult(t testing.TB, id string) []byte {
	p, err := fx.project(context.Background(), canonical.Call{ToolCallID: id}, fx.raw())
	if err != nil {
		t.Fatal(err)
	}
	return p.Result
}

func TestNoEvidenceIsReadyAndNeverRetried(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
			return []byte(`{"hits":[],"trace":"` + fx.marker + `"}`), nil
		}
		res := fx.invoke("call_none")
		fx.checkReady(t, res, canonical.NoEvidence)
		fx.calls(t, 1, 1) // never retried, never upgraded
		want := `{"evidence":[],"returned":0,"tool_call_id":"call_none"}`
		if string(res.AgentJSON()) != want {
			t.Errorf("agent JSON = %s, want %s", res.AgentJSON(), want)
		}
		rec := fx.checkRecord(t, "call_none", wantRec(canonical.StatusReady, canonical.NoEvidence, "",
			[]byte(`{"hits":[],"trace":"`+fx.marker+`"}`), []byte(want)))
		if !rec.Referencable() {
			t.Error("NO_EVIDENCE is a READY outcome and stays referencable as a negative observation")
		}
	})
}

func wantRec(s canonical.Status, e canonical.Evidence, c canonical.Code, raw, result []byte) want {
	return want{status: s, evidence: e, code: c, raw: raw, result: result}
}

func errRec(c canonical.Code, raw []byte) want {
	return wantRec(canonical.StatusError, canonical.EvidenceError, c, raw, nil)
}

func TestCrossRunIsRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		env := fx.envelope("call_x", "kb.search", okInput)
		env.RunID = "run-other"
		res := fx.b.Invoke(fx.ctx, fx.run, env)
		fx.checkError(t, res, "call_x", canonical.CodeRunMismatch, false)
		fx.calls(t, 0, 0)
		fx.checkAbsent(t, "call_x")
		fx.checkNothingWritten(t)
		if bytes.Contains(res.AgentJSON(), []byte("run-other")) || bytes.Contains(res.AgentJSON(), []byte(fx.run.ID)) {
			t.Error("agent JSON names a run")
		}
	})
}

func TestUnauthorizedIsRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.Principal.Subject = "user:mallory"
		fx.checkError(t, fx.invoke("call_deny"), "call_deny", canonical.CodeUnauthorized, false)
		fx.run.Principal = registry.Principal{Subject: "user:alice", ExpiresAt: time.Now().Add(-time.Second)}
		fx.checkError(t, fx.invoke("call_expired"), "call_expired", canonical.CodeUnauthorized, false)
		fx.calls(t, 0, 0)
		fx.checkAbsent(t, "call_deny")
		fx.checkAbsent(t, "call_expired")
		fx.checkNothingWritten(t)
	})
}

func TestPolicyUnavailableIsRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.Principal.Subject = "user:broken"
		res := fx.invoke("call_policy")
		fx.checkError(t, res, "call_policy", canonical.CodePolicyUnavailable, false)
		if !strings.Contains(res.Err().Error(), fx.marker) {
			t.Errorf("the operator cause lost the policy's error: %v", res.Err())
		}
		fx.calls(t, 0, 0)
		fx.checkAbsent(t, "call_policy")
		fx.checkNothingWritten(t)
	})
}

func TestWritableToolIsRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_w", "kb.write", okInput))
		fx.checkError(t, res, "call_w", canonical.CodeNotReadOnly, false)
		fx.calls(t, 0, 0)
		fx.checkAbsent(t, "call_w")
		fx.checkNothingWritten(t)
	})
}

func TestApprovalRequiredIsRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_a", "kb.approve", okInput))
		fx.checkError(t, res, "call_a", canonical.CodeApprovalRequired, false)
		fx.calls(t, 0, 0)
		fx.checkAbsent(t, "call_a")
		fx.checkNothingWritten(t)
	})
}

func TestUnknownToolIsRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		for _, name := range []string{"kb.nope", "", "kb.search@1.0.0", "KB.SEARCH"} {
			res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_u", name, okInput))
			fx.checkError(t, res, "call_u", canonical.CodeUnknownTool, false)
		}
		fx.calls(t, 0, 0)
		fx.checkAbsent(t, "call_u")
		fx.checkNothingWritten(t)
	})
}

func TestBlankOrUnsafeToolCallIDIsRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		ids := []string{"", " ", " call_1", "call 1", "call_1\n", "-call", "_call", "call:1", "call{1}",
			"tc:{" + fx.run.ID + "}:call:x", "call/1", "调用", strings.Repeat("a", 129), "call\x00"}
		for _, id := range ids {
			res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope(id, "kb.search", okInput))
			fx.checkError(t, res, "", canonical.CodeInvalidToolCallID, false)
			if res.ToolCallID() != "" {
				t.Errorf("invalid id %q echoed as %q", id, res.ToolCallID())
			}
			fx.checkAbsent(t, id)
		}
		fx.calls(t, 0, 0)
		fx.checkNothingWritten(t)
	})
}

func TestUnsafeRunIDIsRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		for _, id := range []string{"", "run:1", "run{1}", "run 1", strings.Repeat("r", 129)} {
			fx.run.ID = id
			res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_r", "kb.search", okInput))
			fx.checkError(t, res, "call_r", canonical.CodeInvalidRunID, false)
		}
		fx.calls(t, 0, 0)
	})
}

func TestInvalidJSONIsRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		inputs := []string{``, `{"query":"x"`, `{"query":"x"} {}`, `[{"query":"x"}]`, `"query"`, `null`,
			`{"query":"x","query":"y"}`, "{\"query\":\"\xff\"}", `{"query":"\ud800"}`, `{"query":"x","limit":9007199254740993}`}
		for _, in := range inputs {
			res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_j", "kb.search", in))
			fx.checkError(t, res, "call_j", canonical.CodeInvalidInput, false)
		}
		fx.calls(t, 0, 0)
		fx.checkAbsent(t, "call_j")
		fx.checkNothingWritten(t)
	})
}

func TestSchemaViolationIsRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		inputs := []string{`{}`, `{"query":""}`, `{"query":"x","limit":0}`, `{"query":"x","limit":1.5}`,
			`{"query":"x","extra":true}`, `{"query":"` + strings.Repeat("q", 257) + `"}`, `{"query":7}`}
		for _, in := range inputs {
			res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_s", "kb.search", in))
			fx.checkError(t, res, "call_s", canonical.CodeInvalidInput, false)
		}
		fx.calls(t, 0, 0)
		fx.checkNothingWritten(t)
	})
}

func TestInactiveRunIsRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.Active = false
		fx.checkError(t, fx.invoke("call_i"), "call_i", canonical.CodeRunInactive, false)
		fx.calls(t, 0, 0)
		fx.checkAbsent(t, "call_i")
		fx.checkNothingWritten(t)
	})
}

func TestClosedRunIsRejectedByStore(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.checkReady(t, fx.invoke("call_before"), canonical.EvidenceFound)
		if err := fx.store.CloseRun(context.Background(), fx.run.ID, fx.run.Principal.Subject); err != nil {
			t.Fatal(err)
		}
		// The harness still thinks the run is active; the store knows better.
		fx.checkError(t, fx.invoke("call_after"), "call_after", canonical.CodeRunInactive, false)
		fx.calls(t, 1, 1)
		fx.checkAbsent(t, "call_after")
		fx.checkRecord(t, "call_before", wantRec(canonical.StatusReady, canonical.EvidenceFound, "", fx.raw(), fx.mustResult(t, "call_before")))
	})
}

func TestExpiredDeadlineIsRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.Deadline = time.Now().Add(-time.Millisecond)
		fx.checkError(t, fx.invoke("call_d"), "call_d", canonical.CodeDeadlineExceeded, false)
		fx.calls(t, 0, 0)
		fx.checkAbsent(t, "call_d")
		fx.checkNothingWritten(t)
	})
}

func TestCancelledContextIsRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		fx.ctx = ctx
		fx.checkError(t, fx.invoke("call_c"), "call_c", canonical.CodeDeadlineExceeded, false)
		fx.calls(t, 0, 0)
		fx.checkNothingWritten(t)
	})
}

func TestDuplicateIsRefusedAndFirstRecordIntact(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.checkReady(t, fx.invoke("call_dup"), canonical.EvidenceFound)
		first := fx.checkRecord(t, "call_dup", wantRec(canonical.StatusReady, canonical.EvidenceFound, "", fx.raw(), fx.mustResult(t, "call_dup")))

		// Same request, then a different one: both refused, neither runs.
		fx.checkError(t, fx.invoke("call_dup"), "call_dup", canonical.CodeDuplicateToolCall, false)
		res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_dup", "kb.search", `{"query":"something else"}`))
		fx.checkError(t, res, "call_dup", canonical.CodeDuplicateToolCall, false)
		fx.calls(t, 1, 1)

		again := fx.checkRecord(t, "call_dup", wantRec(canonical.StatusReady, canonical.EvidenceFound, "", fx.raw(), fx.mustResult(t, "call_dup")))
		if again.Owner != first.Owner || !bytes.Equal(again.Request, first.Request) || again.RequestDigest != first.RequestDigest ||
			!again.CreatedAt.Equal(first.CreatedAt) || !again.UpdatedAt.Equal(first.UpdatedAt) || again.TTL > first.TTL {
			t.Errorf("first record changed:\n%+v\n%+v", first, again)
		}
		u, err := fx.store.Usage(context.Background(), fx.run.ID)
		if err != nil || u.Calls != 1 || u.Completed != 1 {
			t.Errorf("usage = %+v, %v: a refused duplicate was counted", u, err)
		}
	})
}

func TestFrameworkIDIsPreserved(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		ids := []string{"call_8f2k", "toolu_01A09q90qw90lq917835lq9", "3f1c8a2e-5b6d-4e7f-8a9b-0c1d2e3f4a5b",
			"A.b-c_D", "0", strings.Repeat("z", 128)}
		for _, id := range ids {
			fx.checkReady(t, fx.invoke(id), canonical.EvidenceFound)
			fx.checkRecord(t, id, wantRec(canonical.StatusReady, canonical.EvidenceFound, "", fx.raw(), fx.mustResult(t, id)))
			if addr := fx.fac.addr(t); addr != "" {
				n, err := redistest.Command(addr, "EXISTS", "tc:{"+fx.run.ID+"}:call:"+id)
				if err != nil || n != "1" {
					t.Errorf("key for %q: EXISTS = %q, %v", id, n, err)
				}
			}
		}
	})
}

func TestCompletionIndexKeepsOrder(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		ids := []string{"call_3", "call_1", "call_2"}
		for _, id := range ids {
			fx.checkReady(t, fx.invoke(id), canonical.EvidenceFound)
		}
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) { return nil, errors.New("boom") }
		fx.checkError(t, fx.invoke("call_4"), "call_4", canonical.CodeExecutionFailed, true)
		done, _, err := fx.store.Completed(context.Background(), fx.run.ID, canonical.MaxIndexRead)
		if err != nil || strings.Join(done, ",") != "call_3,call_1,call_2,call_4" {
			t.Errorf("completion index = %v, %v", done, err)
		}
	})
}

func TestErrorRecordsAreNeverReferencable(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) { return nil, errors.New("boom") }
		fx.invoke("call_e1")
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) { return fx.raw(), nil }
		fx.proj.fn = func(context.Context, canonical.Call, []byte) (canonical.Projection, error) {
			return canonical.Projection{}, errors.New("bad")
		}
		fx.invoke("call_e2")
		for _, id := range []string{"call_e1", "call_e2"} {
			rec, err := fx.store.Get(context.Background(), fx.run.ID, id)
			if err != nil || rec.Status != canonical.StatusError || rec.Referencable() || len(rec.Result) != 0 {
				t.Errorf("%s = %s/%s referencable=%v result=%q, %v", id, rec.Status, rec.Evidence, rec.Referencable(), rec.Result, err)
			}
		}
	})
}

func TestTTLIsSetOnceAndNeverRenewed(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		// The shortest TTL preflight allows: the tool's 30 s, the
		// projection's 5 s and the store's 15.03 s of retries.
		fx.run.TTL = 55 * time.Second
		fx.checkReady(t, fx.invoke("call_ttl"), canonical.EvidenceFound)
		first := fx.checkRecord(t, "call_ttl", wantRec(canonical.StatusReady, canonical.EvidenceFound, "", fx.raw(), fx.mustResult(t, "call_ttl")))
		time.Sleep(30 * time.Millisecond)
		// A refused duplicate reads nothing back into the TTL either.
		fx.invoke("call_ttl")
		second, err := fx.store.Get(context.Background(), fx.run.ID, "call_ttl")
		if err != nil {
			t.Fatal(err)
		}
		if second.TTL > first.TTL || second.TTL <= 0 || first.TTL > fx.run.TTL {
			t.Errorf("TTL went from %v to %v (set %v)", first.TTL, second.TTL, fx.run.TTL)
		}
	})
}

func TestBudgetExhausted(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.Limits = canonical.Limits{MaxCallsPerRun: 2}
		fx.checkReady(t, fx.invoke("call_b1"), canonical.EvidenceFound)
		fx.checkReady(t, fx.invoke("call_b2"), canonical.EvidenceFound)
		fx.checkError(t, fx.invoke("call_b3"), "call_b3", canonical.CodeBudgetExhausted, false)
		fx.calls(t, 2, 2)
		fx.checkAbsent(t, "call_b3")
		u, err := fx.store.Usage(context.Background(), fx.run.ID)
		if err != nil || u.Calls != 2 || u.ToolCalls["kb.search"] != 2 {
			t.Errorf("usage = %+v, %v", u, err)
		}
	})
}

func TestToolBudgetExhausted(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.Limits = canonical.Limits{MaxCallsPerTool: 1}
		fx.checkReady(t, fx.invoke("call_t1"), canonical.EvidenceFound)
		fx.checkError(t, fx.invoke("call_t2"), "call_t2", canonical.CodeBudgetExhausted, false)
		// Another agent-facing name has its own budget.
		res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_t3", "kb.find", okInput))
		fx.checkReady(t, res, canonical.EvidenceFound)
		fx.calls(t, 2, 2)
		fx.checkAbsent(t, "call_t2")
		fx.checkRecord(t, "call_t3", want{status: canonical.StatusReady, evidence: canonical.EvidenceFound,
			raw: fx.raw(), result: fx.mustResult(t, "call_t3"), tool: "kb.find"})
	})
}

func TestInvalidLimitsAreRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.Limits = canonical.Limits{MaxCallsPerRun: -1}
		fx.checkError(t, fx.invoke("call_l"), "call_l", canonical.CodeInvalidArgument, false)
		fx.run.Limits = canonical.Limits{}
		fx.run.TTL = -time.Second
		fx.checkError(t, fx.invoke("call_l"), "call_l", canonical.CodeInvalidArgument, false)
		fx.calls(t, 0, 0)
		fx.checkNothingWritten(t)
	})
}

func TestExecutionErrorIsExecutionFailed(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
			return fx.raw(), errors.New("backend said " + fx.marker + " " + leakText)
		}
		res := fx.invoke("call_fail")
		fx.checkError(t, res, "call_fail", canonical.CodeExecutionFailed, true)
		fx.calls(t, 1, 0)
		// What the failed tool answered is kept for the harness, never shown.
		fx.checkRecord(t, "call_fail", errRec(canonical.CodeExecutionFailed, fx.raw()))
		fx.checkSafe(t, res)
	})
}

func TestExecutionErrorWithoutRoomDropsRaw(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.Limits.MaxRecordBytes = 1024
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
			return bytes.Repeat([]byte("x"), 2048), errors.New("backend failed")
		}
		res := fx.invoke("call_fail_big")
		fx.checkError(t, res, "call_fail_big", canonical.CodeExecutionFailed, true)
		fx.checkRecord(t, "call_fail_big", errRec(canonical.CodeExecutionFailed, nil))
	})
}

func TestRefuseRecordsNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		res := boundary.Refuse("call_pin", canonical.CodeToolDefinitionChanged, errors.New("digest moved"))
		fx.checkError(t, res, "call_pin", canonical.CodeToolDefinitionChanged, false)
		if !strings.Contains(string(res.AgentJSON()), boundary.Hint(canonical.CodeToolDefinitionChanged)) {
			t.Errorf("agent JSON %s lacks the hint", res.AgentJSON())
		}
		bad := boundary.Refuse("bad id", canonical.CodeToolDefinitionChanged, nil)
		if bad.ToolCallID() != "" || strings.Contains(string(bad.AgentJSON()), "bad id") {
			t.Errorf("an invalid id is echoed: %s", bad.AgentJSON())
		}
		fx.checkAbsent(t, "call_pin")
		fx.checkNothingWritten(t)
	})
}

func TestDefinitionOfBoundName(t *testing.T) {
	fx := newFixture(t, factories[0])
	for name, want := range map[string]string{"kb.find": "kb.search", "kb.write": "kb.write"} {
		def, ok := fx.b.Definition(name)
		if !ok || def.Name() != want || def.Version() != "1.0.0" {
			t.Errorf("Definition(%q) = %v, %v; want %s@1.0.0", name, def, ok, want)
		}
	}
	if _, ok := fx.b.Definition("kb.unbound"); ok {
		t.Error("an unbound name has a definition")
	}
}

func TestExecutionPanicIsExecutionFailed(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) { panic("tool exploded: " + fx.marker + " " + leakText) }
		res := fx.invoke("call_panic")
		fx.checkError(t, res, "call_panic", canonical.CodeExecutionFailed, true)
		fx.calls(t, 1, 0)
		fx.checkRecord(t, "call_panic", errRec(canonical.CodeExecutionFailed, nil))
	})
}

// The run's deadline passing while the tool runs is DEADLINE_EXCEEDED
// ("stop calling tools"), not TOOL_TIMEOUT ("narrow the query and retry"):
// retrying cannot help a run that is out of time.
func TestTimeoutByRunDeadline(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.Deadline = time.Now().Add(150 * time.Millisecond)
		fx.tool.fn = func(ctx context.Context, _ []byte) ([]byte, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		res := fx.invoke("call_slow")
		fx.checkError(t, res, "call_slow", canonical.CodeDeadlineExceeded, true)
		fx.calls(t, 1, 0)
		// Completed although the run's deadline has passed: completion is
		// detached from the caller's context.
		fx.checkRecord(t, "call_slow", errRec(canonical.CodeDeadlineExceeded, nil))
	})
}

func TestTimeoutOfToolIgnoringContext(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		fx.ctx = ctx
		release := make(chan struct{})
		defer close(release)
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
			<-release // ignores its context
			return fx.raw(), nil
		}
		start := time.Now()
		res := fx.invoke("call_stuck")
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Invoke waited %v for a tool that ignores its context", d)
		}
		// The caller's deadline, not the tool's own timeout, ended it.
		fx.checkError(t, res, "call_stuck", canonical.CodeDeadlineExceeded, true)
		fx.calls(t, 1, 0)
		fx.checkRecord(t, "call_stuck", errRec(canonical.CodeDeadlineExceeded, nil))
	})
}

func TestTimeoutByToolDefinition(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.tool.fn = func(ctx context.Context, _ []byte) ([]byte, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		start := time.Now()
		res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_def", "kb.slow", okInput))
		if d := time.Since(start); d < time.Second || d > 3*time.Second {
			t.Errorf("kb.slow (timeout 1s) took %v", d)
		}
		fx.checkError(t, res, "call_def", canonical.CodeToolTimeout, true)
		fx.checkRecord(t, "call_def", want{status: canonical.StatusError, evidence: canonical.EvidenceError,
			code: canonical.CodeToolTimeout, tool: "kb.slow"})
	})
}

func TestProjectorErrorIsProjectionFailed(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.proj.fn = func(_ context.Context, _ canonical.Call, raw []byte) (canonical.Projection, error) {
			return canonical.Projection{}, errors.New("cannot parse " + string(raw) + " " + leakText)
		}
		res := fx.invoke("call_perr")
		fx.checkError(t, res, "call_perr", canonical.CodeProjectionFailed, true)
		fx.calls(t, 1, 1)
		fx.checkRecord(t, "call_perr", errRec(canonical.CodeProjectionFailed, fx.raw())) // raw kept, harness-only
	})
}

func TestProjectorPanicIsProjectionFailed(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.proj.fn = func(_ context.Context, _ canonical.Call, raw []byte) (canonical.Projection, error) {
			panic("index out of range in " + string(raw))
		}
		res := fx.invoke("call_ppanic")
		fx.checkError(t, res, "call_ppanic", canonical.CodeProjectionFailed, true)
		fx.calls(t, 1, 1)
		fx.checkRecord(t, "call_ppanic", errRec(canonical.CodeProjectionFailed, fx.raw()))
	})
}

func TestInvalidEvidenceIsProjectionFailed(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		for i, ev := range []canonical.Evidence{"", canonical.EvidenceUnknown, canonical.EvidenceError, "FOUND", "evidence_found"} {
			fx.proj.fn = func(context.Context, canonical.Call, []byte) (canonical.Projection, error) {
				return canonical.Projection{Evidence: ev, Result: []byte(`{"ok":true}`)}, nil
			}
			id := "call_ev" + string(rune('a'+i))
			res := fx.invoke(id)
			fx.checkError(t, res, id, canonical.CodeProjectionFailed, true)
			fx.checkRecord(t, id, errRec(canonical.CodeProjectionFailed, fx.raw()))
		}
		fx.calls(t, 5, 5)
	})
}

func TestInvalidJSONResultIsProjectionFailed(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		// The last three are JSON to encoding/json, but not strict JSON.
		results := []string{``, `{"evidence":[`, `{"a":1}}`, "\"" + fx.marker, `{'a':1}`,
			"{\"a\":\"\xff\"}", `{"a":1,"a":2}`, `{"a":"\ud800"}`}
		for i, r := range results {
			fx.proj.fn = func(context.Context, canonical.Call, []byte) (canonical.Projection, error) {
				return canonical.Projection{Evidence: canonical.EvidenceFound, Result: []byte(r)}, nil
			}
			id := "call_js" + string(rune('a'+i))
			res := fx.invoke(id)
			fx.checkError(t, res, id, canonical.CodeProjectionFailed, true)
			fx.checkRecord(t, id, errRec(canonical.CodeProjectionFailed, fx.raw()))
		}
	})
}

func TestRawTooLargeSkipsProjector(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.Limits = canonical.Limits{MaxRecordBytes: 64 << 10}
		big := []byte(`{"hits":[],"blob":"` + strings.Repeat(fx.marker, (64<<10)/len(fx.marker)) + `"}`)
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) { return big, nil }
		res := fx.invoke("call_big")
		fx.checkError(t, res, "call_big", canonical.CodeResultTooLarge, true)
		fx.calls(t, 1, 0) // the projector never saw it
		// Raw is not stored, and not truncated either.
		fx.checkRecord(t, "call_big", errRec(canonical.CodeResultTooLarge, nil))

		// Just under the record's room, the same tool projects.
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
			return []byte(`{"hits":[],"blob":"` + strings.Repeat("x", 60<<10) + `"}`), nil
		}
		fx.checkReady(t, fx.invoke("call_fits"), canonical.NoEvidence)
		fx.calls(t, 2, 1)
	})
}

func TestAgentResultTooLarge(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.run.Limits = canonical.Limits{MaxResultBytes: 1024}
		fx.proj.fn = func(context.Context, canonical.Call, []byte) (canonical.Projection, error) {
			return canonical.Projection{Evidence: canonical.EvidenceFound,
				Result: []byte(`{"excerpt":"` + strings.Repeat(fx.marker, 2048/len(fx.marker)) + `"}`)}, nil
		}
		res := fx.invoke("call_wide")
		fx.checkError(t, res, "call_wide", canonical.CodeResultTooLarge, true)
		fx.calls(t, 1, 1)
		fx.checkRecord(t, "call_wide", errRec(canonical.CodeResultTooLarge, fx.raw()))
	})
}

func TestRunBytesOverflowAtComplete(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		// The request fits the run's bytes, request + raw does not: the store
		// refuses the completion's bytes and the record becomes
		// ERROR/RESULT_TOO_LARGE with neither raw nor result.
		fx.run.Limits = canonical.Limits{MaxRunBytes: 2048}
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
			return []byte(`{"hits":[],"blob":"` + strings.Repeat(fx.marker, 4096/len(fx.marker)) + `"}`), nil
		}
		res := fx.invoke("call_run")
		fx.checkError(t, res, "call_run", canonical.CodeResultTooLarge, true)
		fx.calls(t, 1, 1)
		fx.checkRecord(t, "call_run", errRec(canonical.CodeResultTooLarge, nil))
	})
}

func TestStoreUnavailableAtBegin(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fs := &failingStore{marker: fx.marker}
		fs.beginFails.Store(-1)
		fx.rebuild(func(s canonical.Store) canonical.Store { fs.Store = s; return fs })
		res := fx.invoke("call_sb")
		fx.checkError(t, res, "call_sb", canonical.CodeStoreUnavailable, false)
		fx.calls(t, 0, 0) // no record, no tool
		if got := fs.begins.Load(); got != boundary.DefaultStoreAttempts {
			t.Errorf("Begin tried %d times, want %d", got, boundary.DefaultStoreAttempts)
		}
		fx.checkAbsent(t, "call_sb")
		fx.checkNothingWritten(t)
	})
}

func TestBeginRetryRecovers(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fs := &failingStore{marker: fx.marker}
		fs.beginFails.Store(1)
		fx.rebuild(func(s canonical.Store) canonical.Store { fs.Store = s; return fs })
		fx.checkReady(t, fx.invoke("call_br"), canonical.EvidenceFound)
		fx.calls(t, 1, 1)
		fx.checkRecord(t, "call_br", wantRec(canonical.StatusReady, canonical.EvidenceFound, "", fx.raw(), fx.mustResult(t, "call_br")))
	})
}

func TestStoreUnavailableAtComplete(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fs := &failingStore{marker: fx.marker}
		fs.completeFails.Store(-1)
		fx.rebuild(func(s canonical.Store) canonical.Store { fs.Store = s; return fs })
		res := fx.invoke("call_sc")
		fx.checkError(t, res, "call_sc", canonical.CodeStoreUnavailable, true)
		fx.calls(t, 1, 1)
		if got := fs.completes.Load(); got != boundary.DefaultStoreAttempts {
			t.Errorf("Complete tried %d times, want %d", got, boundary.DefaultStoreAttempts)
		}
		// What is not recorded is not shown; the record stays PROJECTING,
		// outside the index, until its TTL.
		rec := fx.checkRecord(t, "call_sc", wantRec(canonical.StatusProjecting, canonical.EvidenceUnknown, "", nil, nil))
		if rec.Referencable() {
			t.Error("a PROJECTING record is referencable")
		}
	})
}

func TestCompleteRetryRecovers(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fs := &failingStore{marker: fx.marker}
		fs.completeFails.Store(2)
		fx.rebuild(func(s canonical.Store) canonical.Store { fs.Store = s; return fs })
		fx.checkReady(t, fx.invoke("call_cr"), canonical.EvidenceFound)
		fx.calls(t, 1, 1)
		if got := fs.completes.Load(); got != 3 {
			t.Errorf("Complete tried %d times, want 3", got)
		}
		fx.checkRecord(t, "call_cr", wantRec(canonical.StatusReady, canonical.EvidenceFound, "", fx.raw(), fx.mustResult(t, "call_cr")))
	})
}

// panickingStore panics in Begin: a store is host code and may be broken.
type panickingStore struct{ canonical.Store }

func (panickingStore) Begin(context.Context, canonical.BeginRequest) (canonical.Record, error) {
	panic("store bug " + leakText)
}

func TestPanickingStoreIsStoreUnavailable(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.rebuild(func(s canonical.Store) canonical.Store { return panickingStore{s} })
		fx.checkError(t, fx.invoke("call_sp"), "call_sp", canonical.CodeStoreUnavailable, false)
		fx.calls(t, 0, 0)
		fx.checkNothingWritten(t)
	})
}

// killedServer opens a redisstore on a server of its own, so that killing it
// disturbs no other test.
func killedServer(t *testing.T) (*redistest.Server, *fixture) {
	t.Helper()
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	s, err := redisstore.New(redisstore.Options{Addrs: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	fx := newFixture(t, factory{
		name: "redisstore-own",
		open: func(testing.TB) canonical.Store { return s },
		addr: func(testing.TB) string { return srv.Addr },
	})
	return srv, fx
}

func TestStoreUnavailableKilledServer(t *testing.T) {
	t.Parallel()
	srv, fx := killedServer(t)
	fx.checkReady(t, fx.invoke("call_up"), canonical.EvidenceFound)

	srv.Kill()
	// No deadline on the call: the boundary's own store timeout bounds it.
	fx.rebuild(nil, boundary.WithStoreTimeout(200*time.Millisecond), boundary.WithStoreAttempts(2))
	start := time.Now()
	res := fx.invoke("call_down")
	t.Logf("Invoke against a killed server answered %s in %v", res.Code(), time.Since(start).Round(time.Millisecond))
	fx.checkError(t, res, "call_down", canonical.CodeStoreUnavailable, false)
	fx.calls(t, 1, 1) // only the call before the kill ran

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	var last boundary.Result
	for i := 0; i < 50; i++ { // the client reconnects on its own
		if last = fx.invoke("call_back"); last.Status() == canonical.StatusReady {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	fx.checkReady(t, last, canonical.EvidenceFound)
	fx.checkRecord(t, "call_back", wantRec(canonical.StatusReady, canonical.EvidenceFound, "", fx.raw(), fx.mustResult(t, "call_back")))
}

func TestServerKilledWhileToolRuns(t *testing.T) {
	t.Parallel()
	srv, fx := killedServer(t)
	fx.rebuild(nil, boundary.WithStoreTimeout(300*time.Millisecond), boundary.WithStoreAttempts(2))
	fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
		srv.Kill()
		return fx.raw(), nil
	}
	res := fx.invoke("call_lost")
	fx.checkError(t, res, "call_lost", canonical.CodeStoreUnavailable, true)
	fx.calls(t, 1, 1)
	// The server came back empty (no persistence): the PROJECTING record
	// died with it, and nothing was shown for the unrecorded outcome.
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	var err error
	for i := 0; i < 50; i++ {
		if _, err = fx.store.Get(context.Background(), fx.run.ID, "call_lost"); canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Errorf("after restart: %v, want NOT_FOUND", err)
	}
}

func TestResultJSONIsTheCallersOwn(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		res := fx.invoke("call_own")
		out := res.AgentJSON()
		for i := range out {
			out[i] = 'x'
		}
		rec, err := fx.store.Get(context.Background(), fx.run.ID, "call_own")
		if err != nil || !json.Valid(rec.Result) {
			t.Errorf("stored result changed with the caller's copy: %q, %v", rec.Result, err)
		}
	})
}
