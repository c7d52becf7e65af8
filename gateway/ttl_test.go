package gateway_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// Every key two gateways on one Redis write has a TTL: tasks created
// through one and polled, read and cancelled through the other, a
// stateless call cancelled through the other replica (the cancel relay's
// log and claim), and plain calls. Each key of the gateways' prefix
// without a TTL fails the test.
func TestGatewaysOnRedisLeaveNoKeyWithoutTTL(t *testing.T) {
	addr := redistest.Addr(t)
	prefix := "tcgwsweep" + canonical.NewOwner()[:8]
	openStore := func() *redisstore.Store {
		s, err := redisstore.New(redisstore.Options{Addrs: []string{addr}, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	logPath := filepath.Join(t.TempDir(), "up.log")
	_, urlA := taskGateway(t, openStore(), logPath)
	_, urlB := taskGateway(t, openStore(), logPath)
	a := &rpcClient{t: t, url: urlA, version: "2025-11-25"}
	b := &rpcClient{t: t, url: urlB, version: "2025-11-25"}
	run := "run-sweep-" + canonical.NewOwner()[:8]

	a.ok("tools/call", toolParams("echo", "call_s1", run, map[string]any{"text": "plain"}))
	working := a.ok("tools/call", withTask(toolParams("wait", "call_s2", run, map[string]any{"query": "sweep-task"})))
	id := working["task"].(map[string]any)["taskId"].(string)
	waitFor(t, func() bool { return countExecutions(t, logPath, "wait", "sweep-task") == 1 }, "the task's call to run")
	b.ok("tasks/get", map[string]any{"taskId": id})
	if got := b.ok("tasks/cancel", map[string]any{"taskId": id}); got["status"] != "cancelled" {
		t.Fatalf("tasks/cancel: %v", got)
	}
	done := a.ok("tools/call", withTask(toolParams("echo", "call_s3", run, map[string]any{"text": "kept"})))
	doneID := done["task"].(map[string]any)["taskId"].(string)
	waitFor(t, func() bool { return b.ok("tasks/get", map[string]any{"taskId": doneID})["status"] == "completed" }, "the task to complete")
	b.ok("tasks/result", map[string]any{"taskId": doneID})

	finished := waitCall(t, urlA, nil, logPath, "call_s4", map[string]any{gateway.MetaRunID: run})
	if status, body := rawPost(t, urlB, nil, cancelBody(t, nil)); status != http.StatusAccepted {
		t.Fatalf("the cancel through the other replica: %d %s", status, body)
	}
	waitFor(t, func() bool { return countExecutions(t, logPath, "cancelled", "call_s4") == 1 }, "the relayed cancel to reach the upstream")
	<-finished

	ttls, err := redistest.KeyTTLs([]string{addr}, prefix+":*")
	if err != nil {
		t.Fatal(err)
	}
	var relayed bool
	for k, ms := range ttls {
		relayed = relayed || strings.HasSuffix(k, ":{cancels}")
		if ms == -1 {
			t.Errorf("key %s has no TTL", k)
		}
	}
	if !relayed {
		t.Errorf("the cancel went through no relay: keys %v", ttls)
	}
}
