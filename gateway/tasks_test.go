package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// rpcClient speaks raw JSON-RPC to a gateway over stateless HTTP, as a
// client of protocol version speaks it.
type rpcClient struct {
	t       *testing.T
	url     string
	token   string
	version string         // "2026-07-28" sends the per-request _meta and headers of that revision
	caps    map[string]any // what a 2026-07-28 request declares besides the tasks extension
	n       int
}

// rpcReply is one JSON-RPC answer.
type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// call sends method with params (an object; its _meta is extended for
// 2026-07-28) and returns the answer.
func (c *rpcClient) call(method string, params map[string]any) rpcReply {
	c.t.Helper()
	c.n++
	if params == nil {
		params = map[string]any{}
	}
	hdr := http.Header{}
	if c.version >= "2026-07-28" {
		meta, _ := params["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["io.modelcontextprotocol/protocolVersion"] = c.version
		meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "raw", "version": "1"}
		caps := map[string]any{"extensions": map[string]any{gateway.ExtensionTasks: map[string]any{}}}
		for k, v := range c.caps {
			caps[k] = v
		}
		meta["io.modelcontextprotocol/clientCapabilities"] = caps
		params["_meta"] = meta
		hdr.Set("Mcp-Protocol-Version", c.version)
		hdr.Set("Mcp-Method", method)
		for _, k := range []string{"name", "uri", "taskId"} {
			if v, ok := params[k].(string); ok {
				hdr.Set("Mcp-Name", v)
			}
		}
	} else if c.version != "" {
		hdr.Set("Mcp-Protocol-Version", c.version)
	}
	body := mustMarshal(c.t, map[string]any{"jsonrpc": "2.0", "id": c.n, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header = hdr
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out rpcReply
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var msg struct {
				ID json.RawMessage `json:"id"`
				rpcReply
			}
			if json.Unmarshal([]byte(data), &msg) == nil && string(msg.ID) == fmt.Sprint(c.n) {
				return msg.rpcReply
			}
		}
		c.t.Fatalf("%s: no answer on the event stream", method)
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		c.t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
	}
	return out
}

// ok is call that fails the test on a JSON-RPC error and decodes the
// result.
func (c *rpcClient) ok(method string, params map[string]any) map[string]any {
	c.t.Helper()
	r := c.call(method, params)
	if r.Error != nil {
		c.t.Fatalf("%s: error %d %s %s", method, r.Error.Code, r.Error.Message, r.Error.Data)
	}
	var m map[string]any
	if err := json.Unmarshal(r.Result, &m); err != nil {
		c.t.Fatal(err)
	}
	return m
}

func toolParams(tool, id, run string, args map[string]any) map[string]any {
	return map[string]any{"name": tool, "arguments": args,
		"_meta": map[string]any{gateway.MetaToolCallID: id, gateway.MetaRunID: run}}
}

// withTask is params with a 2025-11-25 task request.
func withTask(p map[string]any) map[string]any { p["task"] = map[string]any{"ttl": 60000}; return p }

// taskGateway opens a gateway over store with the test upstream's echo,
// slow and wait tools (wait long-running), served over stateless HTTP.
func taskGateway(t *testing.T, store canonical.Store, logPath string) (*liveGateway, string) {
	t.Helper()
	cfg := markLongRunning(t, baseConfig(t, stdioUpstream(t, logPath, ""), "echo", "slow", "wait", "write"), "wait")
	lg := openLiveOn(t, cfg, store, gateway.OpenOptions{CancelRelay: relayOf(store)})
	srv := httptest.NewServer(lg.g.Handler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	return lg, srv.URL
}

// relayOf is the store's cancel relay, when it has one.
func relayOf(store canonical.Store) gateway.CancelRelay {
	r, _ := store.(gateway.CancelRelay)
	return r
}

// markLongRunning sets long_running on the named tools of cfg.
func markLongRunning(t *testing.T, cfg configDoc, names ...string) configDoc {
	t.Helper()
	var tools []any
	for _, e := range cfg["tools"].([]any) {
		m := map[string]any{}
		if err := json.Unmarshal(mustMarshal(t, e), &m); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if m["name"] == n {
				m["long_running"] = true
			}
		}
		tools = append(tools, m)
	}
	cfg["tools"] = tools
	return cfg
}

// A 2025-11-25 client asks for a task (params.task): the gateway answers
// with the task only once the call's record exists, the call runs on,
// tasks/get follows it to completed, tasks/result returns what a direct
// call returns, and the same call sent again gets the same task and runs
// once; another request under its id is refused.
func TestTaskOf2025Client(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "up.log")
	store := newMemStore()
	lg, url := taskGateway(t, store, logPath)
	c := &rpcClient{t: t, url: url, version: "2025-11-25"}

	init := c.ok("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}})
	if caps := string(mustMarshal(t, init["capabilities"])); !strings.Contains(caps, `"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}`) {
		t.Errorf("initialize declares no tasks: %s", caps)
	}
	tl := c.ok("tools/list", nil)
	var listed []string
	for _, tool := range tl["tools"].([]any) {
		listed = append(listed, tool.(map[string]any)["name"].(string))
		if ex := string(mustMarshal(t, tool.(map[string]any)["execution"])); ex != `{"taskSupport":"optional"}` {
			t.Errorf("tool %v lists execution %s", tool.(map[string]any)["name"], ex)
		}
	}
	// The list is still the caller's: the write tool is not in it.
	if got := strings.Join(listed, " "); got != "echo slow wait" {
		t.Errorf("tools/list of a 2025-11-25 client: %s", got)
	}

	run := "run-task-" + canonical.NewOwner()[:8]
	created := c.ok("tools/call", withTask(toolParams("slow", "call_t1", run, map[string]any{"ms": 700})))
	task, _ := created["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if id == "" || task["status"] != "working" || task["pollInterval"] != 1000.0 || task["ttl"] != float64(24*time.Hour/time.Millisecond) {
		t.Fatalf("created %v", created)
	}
	// Durably created before the answer: the record is there already.
	if rec := lg.record(t, run, "call_t1"); rec.Status != canonical.StatusProjecting {
		t.Fatalf("the record is %s when the task is answered", rec.Status)
	}
	again := c.ok("tools/call", withTask(toolParams("slow", "call_t1", run, map[string]any{"ms": 700})))
	if again["task"].(map[string]any)["taskId"] != id {
		t.Errorf("the same call again got another task: %v", again)
	}
	other := c.call("tools/call", withTask(toolParams("slow", "call_t1", run, map[string]any{"ms": 5})))
	if other.Error == nil || !strings.Contains(string(other.Error.Data), "TOOL_CALL_IN_PROGRESS") {
		t.Errorf("another request under the id: %+v", other)
	}
	var got map[string]any
	waitFor(t, func() bool {
		got = c.ok("tasks/get", map[string]any{"taskId": id})
		return got["status"] == "completed"
	}, "the task to complete")
	result := c.ok("tasks/result", map[string]any{"taskId": id})
	if meta := string(mustMarshal(t, result["_meta"])); meta != `{"io.modelcontextprotocol/related-task":{"taskId":"`+id+`"}}` {
		t.Errorf("tasks/result _meta %s", meta)
	}
	direct := c.ok("tools/call", toolParams("slow", "call_t2", run, map[string]any{"ms": 700}))
	delete(result, "_meta")
	if a, b := strings.ReplaceAll(string(mustMarshal(t, result)), "call_t1", "call_t2"), string(mustMarshal(t, direct)); a != b {
		t.Errorf("the task's result\n%s\nis not the direct call's\n%s", a, b)
	}
	if n := countExecutions(t, logPath, "slow", "700"); n != 2 {
		t.Errorf("%d upstream executions of the task and the direct call, want 2", n)
	}
	// A refusal before the record exists is a JSON-RPC error naming the
	// code, not a task.
	bad := c.call("tools/call", withTask(toolParams("slow", "call_t3", run, map[string]any{"ms": "soon"})))
	if bad.Error == nil || !strings.Contains(bad.Error.Message, "INVALID_INPUT") {
		t.Errorf("an invalid call asking for a task: %+v", bad)
	}
	// A finished task cannot be cancelled.
	if r := c.call("tasks/cancel", map[string]any{"taskId": id}); r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("cancelling a completed task: %+v", r)
	}
}

// An agent of the current revision that declared the tasks extension gets a
// task for a long-running tool (resultType "task", ttlMs, pollIntervalMs)
// and a plain result for the others; tasks/get inlines the result the
// direct call returns.
func TestTaskOfTheExtension(t *testing.T) {
	dir := t.TempDir()
	_, url := taskGateway(t, newMemStore(), filepath.Join(dir, "up.log"))
	c := &rpcClient{t: t, url: url, version: "2026-07-28"}
	run := "run-ext-" + canonical.NewOwner()[:8]

	plain := c.ok("tools/call", toolParams("echo", "call_e1", run, map[string]any{"text": "hi"}))
	if plain["resultType"] == "task" || plain["content"] == nil {
		t.Fatalf("a tool that is not long-running: %v", plain)
	}
	created := c.ok("tools/call", toolParams("wait", "call_e2", run, map[string]any{"query": "ext", "ms": 300}))
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" || created["status"] != "working" || created["ttlMs"] == nil || created["pollIntervalMs"] != 1000.0 {
		t.Fatalf("created %v", created)
	}
	var got map[string]any
	waitFor(t, func() bool {
		got = c.ok("tasks/get", map[string]any{"taskId": id})
		return got["status"] != "working"
	}, "the task to end")
	res, _ := got["result"].(map[string]any)
	if got["status"] != "completed" || got["resultType"] != "complete" || res == nil || res["isError"] == true {
		t.Fatalf("tasks/get %v", got)
	}
	// The extension has no tasks/result, and ignores params.task.
	if r := c.call("tasks/result", map[string]any{"taskId": id}); r.Error == nil || r.Error.Code != -32601 {
		t.Errorf("tasks/result of the extension: %+v", r)
	}
	if r := c.ok("tools/call", withTask(toolParams("echo", "call_e3", run, map[string]any{"text": "no task"}))); r["resultType"] == "task" || r["task"] != nil {
		t.Errorf("params.task of the current revision made a task: %v", r)
	}
}

// A task is its record: created through gateway A, it is polled and
// cancelled through gateway B on one Redis (the cancel reaches the upstream
// call A runs), it outlives A, and its id lets nobody but its principal
// read or cancel it.
func TestTaskAcrossGatewaysOnRedis(t *testing.T) {
	addr := redistest.Addr(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "up.log")
	_, urlA := taskGateway(t, openRedisStore(t, addr), logPath)
	lgB, urlB := taskGateway(t, openRedisStore(t, addr), logPath)
	a := &rpcClient{t: t, url: urlA, version: "2025-11-25"}
	b := &rpcClient{t: t, url: urlB, version: "2025-11-25"}
	run := "run-xgw-" + canonical.NewOwner()[:8]

	created := a.ok("tools/call", withTask(toolParams("wait", "call_x1", run, map[string]any{"query": "across"})))
	id := created["task"].(map[string]any)["taskId"].(string)
	waitFor(t, func() bool { return countExecutions(t, logPath, "wait", "across") == 1 }, "the upstream to run the call")
	if got := b.ok("tasks/get", map[string]any{"taskId": id}); got["status"] != "working" {
		t.Fatalf("tasks/get through B: %v", got)
	}
	cancelled := b.ok("tasks/cancel", map[string]any{"taskId": id})
	if cancelled["status"] != "cancelled" || cancelled["taskId"] != id {
		t.Fatalf("tasks/cancel through B: %v", cancelled)
	}
	if n := countExecutions(t, logPath, "cancelled", "across"); n != 1 {
		t.Errorf("the upstream call was not cancelled (%d)", n)
	}

	// A finished task outlives the gateway that ran it: a new gateway on
	// the store answers for it.
	done := a.ok("tools/call", withTask(toolParams("echo", "call_x2", run, map[string]any{"text": "kept"})))
	doneID := done["task"].(map[string]any)["taskId"].(string)
	waitFor(t, func() bool { return b.ok("tasks/get", map[string]any{"taskId": doneID})["status"] == "completed" }, "the task to complete")
	_ = lgB.g.Close()
	_, urlC := taskGateway(t, openRedisStore(t, addr), logPath)
	c := &rpcClient{t: t, url: urlC, version: "2025-11-25"}
	if got := c.ok("tasks/get", map[string]any{"taskId": doneID}); got["status"] != "completed" {
		t.Fatalf("after the restart: %v", got)
	}
	if res := c.ok("tasks/result", map[string]any{"taskId": doneID}); !strings.Contains(string(mustMarshal(t, res)), "kept") {
		t.Fatalf("the result after the restart: %v", res)
	}

	// An id that is not the record's (another owner token, garbage, a
	// tool_call_id) is no task.
	for _, bad := range []string{id[:len(id)-2] + "AA", "t1.bm9wZQ", "call_x1"} {
		if r := c.call("tasks/get", map[string]any{"taskId": bad}); r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("tasks/get of %q: %+v", bad, r)
		}
	}
}

// The run's principal alone reaches its tasks: another principal, with the
// task's id, gets "no such task" from tasks/get, tasks/result and
// tasks/cancel, exactly as for an id that does not exist, and cancels
// nothing.
func TestTaskIsItsPrincipals(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "up.log")
	cfg := markLongRunning(t, baseConfig(t, stdioUpstream(t, logPath, ""), "wait"), "wait")
	cfg["http"] = map[string]any{"bearer_tokens": []any{
		map[string]any{"sha256": sha("alice-token"), "subject": "alice"},
		map[string]any{"sha256": sha("bob-token"), "subject": "bob"},
	}}
	lg := openLive(t, cfg, gateway.OpenOptions{})
	srv := httptest.NewServer(lg.g.Handler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	alice := &rpcClient{t: t, url: srv.URL, token: "alice-token", version: "2025-11-25"}
	bob := &rpcClient{t: t, url: srv.URL, token: "bob-token", version: "2025-11-25"}
	run := "run-own-" + canonical.NewOwner()[:8]
	id := alice.ok("tools/call", withTask(toolParams("wait", "call_o1", run, map[string]any{"query": "mine", "ms": 3000})))["task"].(map[string]any)["taskId"].(string)
	none := bob.call("tasks/get", map[string]any{"taskId": "t1.bm9uZQ"})
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		r := bob.call(m, map[string]any{"taskId": id})
		if r.Error == nil || none.Error == nil || r.Error.Code != none.Error.Code || r.Error.Message != none.Error.Message {
			t.Errorf("bob's %s of alice's task: %+v (an unknown task: %+v)", m, r, none)
		}
	}
	if got := alice.ok("tasks/get", map[string]any{"taskId": id}); got["status"] != "working" {
		t.Errorf("alice's task after bob's cancel: %v", got)
	}
	if n := countExecutions(t, logPath, "cancelled", "mine"); n != 0 {
		t.Errorf("bob's cancel reached the upstream")
	}
}

// newMemStore is an in-memory store for a test.
func newMemStore() canonical.Store { return memstore.New() }
