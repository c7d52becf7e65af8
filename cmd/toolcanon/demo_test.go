package main

import (
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/internal/redistest"
)

// What the demo must show, scenario by scenario.
var demoExpect = []string{
	"1. search the knowledge base (evidence found) (in parallel)",
	`"document_id":"refunds-101"`, // the first of two duplicate blocks wins
	"READY EVIDENCE_FOUND",
	"2. query the payment logs (a log full of secrets) (in parallel)",
	`"pattern":"payment timeout after <*> calling ledger at <IP> for order <*>","count":3`,
	"password=<SECRET>",
	"3. search for something the knowledge base lacks",
	"4. the agent passes back a handle it saw (the ledger's address)",
	`"pattern":"payment timeout after <*> calling ledger at <IP> for order <*>","count":3`,
	"tool got:   the address behind <IP:", "bytes, not the handle: true); the record keeps the handle",
	`"evidence":[],"returned":0`, "READY NO_EVIDENCE",
	`"error_code":"DUPLICATE_TOOL_CALL"`,
	`"error_code":"RUN_MISMATCH"`,
	`"error_code":"RESULT_TOO_LARGE"`, "ERROR ERROR/RESULT_TOO_LARGE; request", "B, raw 0 B, result 0 B; TTL left",
	`"error_code":"INVALID_INPUT"`,
	`"error_code":"NOT_READ_ONLY"`,
	`"error_code":"INVALID_TOOL_CALL_ID"`,
	`"error_code":"RUN_INACTIVE"`,
	"end of run: 4 observed facts, 1 excluded",
	"excluded call_kb_3    ERROR",
	"progress report 1: valid=false INVALID_PROGRESS_PROTOCOL",
	"claims[1].cites[0] (call_kb_3): EXCLUDED_ID",
	"progress report 2: valid=true; protocol: 2 reports, 1 violations, violated=false",
	"release decision: VERIFIED",
	`NEGATIVE    "The knowledge base has nothing on ledger sharding." cites call_kb_2`,
}

func checkDemo(t *testing.T, out string) {
	t.Helper()
	for _, want := range demoExpect {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	for _, secret := range demoSecrets {
		if strings.Contains(out, secret) {
			t.Errorf("demo output leaks planted secret %q", secret)
		}
	}
	// The duplicate never ran the tool again; the refused calls never ran it.
	if n := strings.Count(out, "(tool ran once)"); n != 5 {
		t.Errorf("%d calls ran their tool, want 5", n)
	}
	for _, leak := range []string{"context_pack", "retrieval_trace", "score", "hit_reason", "full body", "instance", "latency_ms", "tc:{"} {
		if strings.Contains(out, leak) {
			t.Errorf("demo output shows %q", leak)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}

func TestDemoOnMemoryStore(t *testing.T) {
	code, out, stderr := runCmd("demo")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "on the in-memory store") {
		t.Fatalf("store line missing:\n%s", out)
	}
	checkDemo(t, out)
}

func TestDemoOnRedis(t *testing.T) {
	addr := redistest.Addr(t)
	code, out, stderr := runCmd("demo", "--redis", addr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkDemo(t, out)
	// The run it printed can be inspected afterwards.
	line := strings.SplitN(out, "\n", 2)[0]
	run := strings.Fields(strings.TrimPrefix(line, "toolcanon demo: run "))[0]
	code, insp, stderr := runCmd("inspect", "--redis", addr, "--run", run)
	if code != exitOK || !strings.Contains(insp, "calls begun 5, completed 5") || !strings.Contains(insp, "closed") {
		t.Fatalf("inspect %s: exit %d %s\n%s", run, code, stderr, insp)
	}
}

func TestDemoOnRedisCluster(t *testing.T) {
	addrs := redistest.ClusterAddrs(t)
	code, out, stderr := runCmd("demo", "--redis", strings.Join(addrs, ","))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkDemo(t, out)
}

func TestDemoRawShowsHarnessOnlyData(t *testing.T) {
	code, out, _ := runCmd("demo", "--raw")
	if code != exitOK || !strings.Contains(out, "raw (harness only):") || !strings.Contains(out, "context_pack") {
		t.Fatalf("exit %d; --raw shows no raw payloads:\n%s", code, out)
	}
}

func TestDemoRedisDown(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	dead := srv.Addr
	srv.Stop()
	code, _, stderr := runCmd("demo", "--redis", dead)
	if code != exitFailure || !strings.Contains(stderr, "cannot reach Redis at "+dead) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}
