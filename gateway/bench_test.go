package gateway_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// BenchmarkAddedLatency measures what the gateway adds to a tool call: a
// go-sdk client calls the test upstream's echo tool directly, then through
// a toolcanon gateway process (on memory, then on Redis), with 1 and 32
// clients calling at once. Every call goes over streamable HTTP to real
// processes. latency-µs is the mean time of one call as its client sees
// it; added-µs is that minus the direct call's latency at the same number
// of clients, measured in the same run.
func BenchmarkAddedLatency(b *testing.B) {
	_, up := binaries(b)
	dir := b.TempDir()
	upAddr := fmt.Sprintf("127.0.0.1:%d", freePort(b))
	cmd := exec.Command(up, "--http", upAddr, "--stateless")
	cmd.Env = append(os.Environ(), "UPSTREAM_LOG="+filepath.Join(dir, "upstream.log"))
	own(b, cmd)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	waitFor(b, func() bool {
		c, err := net.Dial("tcp", upAddr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "the upstream to listen")

	cfg := baseConfig(b, map[string]any{"url": "http://" + upAddr + "/mcp"}, "echo")
	cfg["run"] = map[string]any{"max_calls": canonical.MaxCallsCeiling, "max_calls_per_tool": canonical.MaxCallsCeiling,
		"max_run_bytes": int64(canonical.MaxRunBytesCeiling), "ttl": "10m"}
	path := cfg.write(b, dir)
	targets := []struct {
		name string
		url  func() string
	}{
		{"direct", func() string { return "http://" + upAddr + "/mcp" }},
		{"gateway-memstore", func() string { return startHTTPGateway(b, path).url }},
		{"gateway-redis", func() string { return startHTTPGateway(b, path, "--redis", redistest.Addr(b)).url }},
	}
	direct := map[int]float64{}
	for _, clients := range []int{1, 32} {
		for _, tg := range targets {
			url := tg.url()
			sessions := make([]*mcp.ClientSession, clients)
			for i := range sessions {
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
					Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer cs.Close()
				sessions[i] = cs
			}
			run := "run-bench-" + canonical.NewOwner()[:8]
			b.Run(fmt.Sprintf("%s/clients=%d", tg.name, clients), func(b *testing.B) {
				var next atomic.Int64
				var failed atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for _, cs := range sessions {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							n := next.Add(1)
							if n > int64(b.N) {
								return
							}
							res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo",
								Arguments: map[string]any{"text": "hello"},
								Meta:      mcp.Meta{"io.github.toolcanon/toolCallId": fmt.Sprintf("call_%d_%d", clients, n), "io.github.toolcanon/runId": run + fmt.Sprint(b.N)}})
							if err != nil || res.IsError {
								if failed.Add(1) == 1 {
									b.Logf("first failure: %v %v", err, res.Content[0].(*mcp.TextContent).Text)
								}
							}
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				if f := failed.Load(); f > 0 {
					b.Fatalf("%d of %d calls failed", f, b.N)
				}
				lat := float64(elapsed.Microseconds()) * float64(clients) / float64(b.N)
				b.ReportMetric(lat, "latency-µs")
				if tg.name == "direct" {
					direct[clients] = lat
				} else if d, ok := direct[clients]; ok {
					b.ReportMetric(lat-d, "added-µs")
				}
			})
		}
	}
}

// BenchmarkServerInProcess is one call through NewServer over the SDK's
// in-memory transports, on memstore, with a tool that answers at once: the
// cost of the SDK on both sides, the boundary, the store and the projector,
// without a network or another process.
func BenchmarkServerInProcess(b *testing.B) {
	w := newWorld(b, gateway.Options{})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		// A run per 50 calls stays within the default run budget.
		run := fmt.Sprintf("run-%d-%d", b.N, i/50)
		res, err := w.cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "x"},
			Meta: mcp.Meta{gateway.MetaToolCallID: fmt.Sprintf("call_%d", i), gateway.MetaRunID: run}})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}
