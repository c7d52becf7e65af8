package gateway_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/gateway"
)

// A stateless call to an upstream that declares logging waits for no
// fixed time after its answer: the median of twenty calls is well under
// the 25 ms such a call once waited for late log messages, every time.
func TestStatelessCallWaitsForNoFixedTime(t *testing.T) {
	lg := openLive(t, baseConfig(t, stdioUpstream(t, filepath.Join(t.TempDir(), "up.log"), ""), "echo"), gateway.OpenOptions{})
	srv := httptest.NewServer(lg.g.Handler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	var took []time.Duration
	for i := range 21 {
		start := time.Now()
		o := mustCall(ctx, t, cs, "echo", fmt.Sprintf("call_w%d", i), "run-wait", map[string]any{"text": "hello"})
		if i > 0 { // the first connects the upstream
			took = append(took, time.Since(start))
		}
		if !o.ready {
			t.Fatalf("call %d: %s", i, o.text)
		}
	}
	slices.Sort(took)
	if med := took[len(took)/2]; med >= 15*time.Millisecond {
		t.Fatalf("median %v over %d calls (%v … %v): a fixed wait is back", med, len(took), took[0], took[len(took)-1])
	}
}
