package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

// FuzzParseTaskID: whatever id an agent presents, parseTaskID accepts only
// what taskID writes, and reads back what it wrote.
func FuzzParseTaskID(f *testing.F) {
	f.Add(taskID(&canonical.Record{RunID: "run-1", ToolCallID: "call_1", Owner: canonical.NewOwner()}))
	f.Add("t1.")
	f.Add("t1.cnVuLTEKY2FsbF8xCg")
	f.Add("call_1")
	f.Fuzz(func(t *testing.T, id string) {
		run, call, owner, ok := parseTaskID(id)
		if !ok {
			return
		}
		if canonical.ValidateRunID(run) != nil || canonical.ValidateToolCallID(call) != nil || owner == "" {
			t.Fatalf("%q read as %q %q %q", id, run, call, owner)
		}
		if again := taskID(&canonical.Record{RunID: run, ToolCallID: call, Owner: owner}); again != id {
			t.Fatalf("%q read back as %q", id, again)
		}
	})
}

// FuzzLiftTask: whatever message comes in, liftTask returns it unchanged
// or, for a tools/call with params.task, the same call with the task under
// _meta and nothing else changed.
func FuzzLiftTask(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{"ttl":60000},"_meta":{"a":1}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":null,"_meta":null}}`))
	f.Add([]byte(`{"method":"tools/list","params":{"task":1}}`))
	f.Add([]byte(`{"method":"tools/call","params":{"task":{},"_meta":[1]}}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		out := liftTask(msg)
		if bytes.Equal(out, msg) {
			return
		}
		var before, after struct {
			Method string                     `json:"method"`
			Params map[string]json.RawMessage `json:"params"`
		}
		if json.Unmarshal(msg, &before) != nil || json.Unmarshal(out, &after) != nil || before.Method != "tools/call" || after.Method != "tools/call" {
			t.Fatalf("%s lifted to %s", msg, out)
		}
		if _, ok := after.Params["task"]; ok {
			t.Fatalf("the task stayed in params: %s", out)
		}
		var meta map[string]json.RawMessage
		if json.Unmarshal(after.Params["_meta"], &meta) != nil || !bytes.Equal(compact(meta[MetaTask]), compact(before.Params["task"])) {
			t.Fatalf("the task is not under _meta: %s", out)
		}
		for k, v := range before.Params {
			if k != "task" && k != "_meta" && !bytes.Equal(compact(after.Params[k]), compact(v)) {
				t.Fatalf("params.%s changed: %s", k, out)
			}
		}
	})
}

func compact(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

// FuzzRoutingHeaders: whatever a request's body and routing headers say,
// headers that repeat the body's method and name agree, and headers that
// name another method never do.
func FuzzRoutingHeaders(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`), "tools/call", "echo")
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"kb://docs/readme"}}`), "resources/read", "kb://x")
	f.Add([]byte(`{"method":"tasks/get","params":{"taskId":7}}`), "", "")
	f.Fuzz(func(t *testing.T, body []byte, method, name string) {
		h, ok := readHead(body)
		if !ok {
			return
		}
		same := http.Header{}
		if h.Method != "" {
			same.Set(HeaderMethod, h.Method)
		}
		if n := h.name(); headerSafe(n) {
			same.Set(HeaderName, n)
		}
		if !headersAgree(same, h) {
			t.Fatalf("the body's own method and name disagree: %q %q", same.Get(HeaderMethod), same.Get(HeaderName))
		}
		other := http.Header{}
		other.Set(HeaderMethod, method)
		if method != "" && method != h.Method && headersAgree(other, h) {
			t.Fatalf("Mcp-Method %q agreed with a %q body", method, h.Method)
		}
	})
}
