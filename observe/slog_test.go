package observe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/observe"
)

func jsonLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestLoggerWritesOneLinePerCall(t *testing.T) {
	var buf bytes.Buffer
	g := observe.NewLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	call := observe.Call{RunID: "run-1", ToolCallID: "call_1", Tool: "search_docs", Name: "kb.search", Version: "1.2.0", Start: time.Now()}
	ctx := g.Start(context.Background(), call)
	for p := observe.Preflight; p <= observe.Complete; p++ {
		g.Phase(ctx, call, observe.PhaseEvent{Phase: p, Duration: time.Millisecond})
	}
	if buf.Len() != 0 {
		t.Fatalf("phases were logged on their own: %s", buf.String())
	}
	g.End(ctx, call, observe.Outcome{
		Status: canonical.StatusReady, Evidence: canonical.EvidenceFound, Executed: true, Duration: 7 * time.Millisecond,
		Phases:     [observe.NumPhases]time.Duration{1 * time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 4 * time.Millisecond, 5 * time.Millisecond},
		InputBytes: 11, RequestBytes: 222, RawBytes: 3333, ResultBytes: 44, AgentBytes: 44,
	})
	g.End(ctx, observe.Call{Start: time.Now()}, observe.Outcome{
		Status: canonical.StatusError, Code: canonical.CodeInvalidToolCallID, Evidence: canonical.EvidenceError, AgentBytes: 120,
	})
	lines := jsonLines(t, &buf)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
	}
	ok := lines[0]
	want := map[string]any{
		"level": "INFO", "msg": "tool call", "run_id": "run-1", "tool_call_id": "call_1", "tool": "search_docs",
		"definition": "kb.search@1.2.0", "status": "READY", "evidence": "EVIDENCE_FOUND", "executed": true, "replayed": false,
		"duration": float64(7 * time.Millisecond),
	}
	for k, v := range want {
		if ok[k] != v {
			t.Errorf("%s = %v, want %v", k, ok[k], v)
		}
	}
	if _, has := ok["code"]; has {
		t.Error("a READY line carries a code")
	}
	phases, _ := ok["phases"].(map[string]any)
	sizes, _ := ok["bytes"].(map[string]any)
	if phases["tool"] != float64(3*time.Millisecond) || phases["complete"] != float64(5*time.Millisecond) ||
		sizes["raw"] != float64(3333) || sizes["request"] != float64(222) || sizes["agent"] != float64(44) {
		t.Errorf("phases %v, bytes %v", phases, sizes)
	}
	bad := lines[1]
	if bad["level"] != "WARN" || bad["code"] != "INVALID_TOOL_CALL_ID" || bad["status"] != "ERROR" || bad["tool_call_id"] != "" {
		t.Errorf("error line = %v", bad)
	}
}

func TestLoggerStoreOpsAtDebugOnly(t *testing.T) {
	var buf bytes.Buffer
	op := observe.StoreOp{Method: "Begin", Script: "begin", Command: "EVALSHA", RunID: "run-1", ToolCallID: "call_1", Items: 1,
		Duration: time.Millisecond, Code: canonical.CodeDuplicateToolCall}
	observe.NewLogger(slog.New(slog.NewJSONHandler(&buf, nil))).StoreOp(context.Background(), op)
	if buf.Len() != 0 {
		t.Fatalf("a store op was logged at Info: %s", buf.String())
	}
	observe.NewLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))).StoreOp(context.Background(), op)
	lines := jsonLines(t, &buf)
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
	l := lines[0]
	if l["level"] != "DEBUG" || l["msg"] != "store op" || l["script"] != "begin" || l["command"] != "EVALSHA" ||
		l["code"] != "DUPLICATE_TOOL_CALL" || l["run_id"] != "run-1" {
		t.Errorf("store op line = %v", l)
	}
}
