package test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// maxBytesPerPendingEvent bounds what an audit event waiting for export
// takes in Redis (used_memory), the README says so.
const maxBytesPerPendingEvent = 300

// An event waiting for export takes at most maxBytesPerPendingEvent bytes
// of the server's memory: the same lifecycles, with typical ids, on a
// fresh server with audit off and then on; the difference, per event.
func TestAuditBytesPerPendingEvent(t *testing.T) {
	const runs, calls = 200, 25
	used := func(on bool) (int64, int) {
		srv, err := redistest.StartServer()
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Stop()
		o := redisstore.Options{Addrs: []string{srv.Addr}, Standalone: true}
		if on {
			o.Audit = &canonical.AuditOptions{Key: make([]byte, canonical.MinAuditKey), KeyID: "2026-12", MaxBacklog: 1 << 30}
		}
		s := open(t, o)
		ctx := canonical.WithTrace(context.Background(), canonical.Trace{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7"})
		before := usedMemory(t, srv.Addr)
		events := 0
		for r := range runs {
			run := fmt.Sprintf("4f1c2a7e-9b3d-4c55-8e21-%012d", r)
			for c := range calls {
				id := fmt.Sprintf("toolu_01ABCDEFGHIJKLMNOPQRS%05d", c)
				if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "search_docs", Owner: "o",
					Principal: "support-agent", Request: []byte(`{"query":"refund policy for damaged items","top_k":3}`),
					TTL: time.Hour, Definition: "kb.search@1.0.0"}); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: id, Owner: "o",
					Status: canonical.StatusReady, Evidence: canonical.EvidenceFound, Raw: []byte(`{"hits":[]}`),
					Result: []byte(`{"answer":"x"}`), Redactions: 1}); err != nil {
					t.Fatal(err)
				}
				events += 2
			}
		}
		return usedMemory(t, srv.Addr) - before, events
	}
	off, _ := used(false)
	on, events := used(true)
	per := float64(on-off) / float64(events)
	t.Logf("%.0f bytes per pending event (%d events: used_memory %d with audit, %d without)", per, events, on, off)
	if per > maxBytesPerPendingEvent {
		t.Fatalf("%.0f bytes per pending event, over %d", per, maxBytesPerPendingEvent)
	}
}

// usedMemory reads used_memory from INFO memory.
func usedMemory(t *testing.T, addr string) int64 {
	t.Helper()
	info, err := redistest.Command(addr, "INFO", "memory")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("INFO memory has no used_memory: %q", info)
	return 0
}
