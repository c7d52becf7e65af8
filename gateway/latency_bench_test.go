package gateway_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// BenchmarkCallLatency measures what the gateway adds to one tool call, in
// each of its modes (stdio, stateless HTTP, HTTP with --sessions), on
// memstore and on Redis, against the same upstream called directly over the
// same transport. The upstream is the test upstream (a go-sdk server that
// declares logging), its echo tool answering at once; the agent asks for no
// logs and no progress. One iteration is one round: a call to each target
// (direct, memstore, Redis), in an order that rotates every round, so that
// the three are measured side by side in one run. Per target it reports
// the median time of one call (med-µs), and per gateway target the median
// minus the direct one (added-µs) and their ratio (ratio):
//
//	go test -run '^$' -bench '^BenchmarkCallLatency$' -benchtime 600x -count 3 ./gateway
//
// (make bench-latency) is 600 calls per target and mode, three times.
func BenchmarkCallLatency(b *testing.B) {
	_, up := binaries(b)
	dir := b.TempDir()
	redisAddr := redistest.Addr(b)
	for _, mode := range []string{"stdio", "stateless", "sessions"} {
		b.Run(mode, func(b *testing.B) {
			direct, upstream := latencyUpstream(b, up, dir, mode)
			cfg := baseConfig(b, upstream, "echo")
			cfg["run"] = map[string]any{"max_calls": canonical.MaxCallsCeiling, "max_calls_per_tool": canonical.MaxCallsCeiling,
				"max_run_bytes": int64(canonical.MaxRunBytesCeiling), "ttl": "10m"}
			path := cfg.write(b, b.TempDir())
			targets := []struct {
				name string
				cs   *mcp.ClientSession
			}{
				{"direct", direct},
				{"memstore", latencyGateway(b, path, mode)},
				{"redis", latencyGateway(b, path, mode, "--redis", redisAddr)},
			}
			run := "run-latency-" + canonical.NewOwner()[:8]
			ctx := context.Background()
			call := func(cs *mcp.ClientSession, id string) time.Duration {
				start := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"},
					Meta: mcp.Meta{"io.github.toolcanon/toolCallId": id, "io.github.toolcanon/runId": run}})
				d := time.Since(start)
				if err != nil || res.IsError {
					b.Fatalf("%s: %v %v", id, err, res)
				}
				return d
			}
			for i, tg := range targets { // warm every connection and code path
				for j := range 20 {
					call(tg.cs, fmt.Sprintf("call_warm_%d_%d", i, j))
				}
			}
			times := make([][]time.Duration, len(targets))
			b.ResetTimer()
			for n := range b.N {
				for k := range targets {
					i := (n + k) % len(targets)
					times[i] = append(times[i], call(targets[i].cs, fmt.Sprintf("call_%d_%d_%d", b.N, n, i)))
				}
			}
			b.StopTimer()
			med := make([]float64, len(targets))
			for i, tg := range targets {
				med[i] = median(times[i])
				b.ReportMetric(med[i], tg.name+"-med-µs")
			}
			for i, tg := range targets[1:] {
				b.ReportMetric(med[i+1]-med[0], tg.name+"-added-µs")
				b.ReportMetric(med[i+1]/med[0], tg.name+"-ratio")
			}
		})
	}
}

// median is the median of ds in microseconds.
func median(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return float64(m.Nanoseconds()) / 1e3
}

// latencyUpstream starts the test upstream for mode and returns a client
// connected to it directly, over mode's transport, and the upstream's
// configuration entry for the gateway: a command over stdio, a stateless or
// a sessions URL over HTTP.
func latencyUpstream(b *testing.B, up, dir, mode string) (*mcp.ClientSession, map[string]any) {
	b.Helper()
	logPath := filepath.Join(dir, mode+"-upstream.log")
	if mode == "stdio" {
		cmd := exec.Command(up)
		cmd.Env = append(os.Environ(), "UPSTREAM_LOG="+logPath)
		return latencyClient(b, &mcp.CommandTransport{Command: cmd}), stdioUpstream(b, logPath, "")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(b))
	args := []string{"--http", addr}
	if mode == "stateless" {
		args = append(args, "--stateless")
	}
	cmd := exec.Command(up, args...)
	cmd.Env = append(os.Environ(), "UPSTREAM_LOG="+logPath)
	own(b, cmd)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	waitFor(b, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "the upstream to listen")
	url := "http://" + addr + "/mcp"
	return latencyClient(b, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}), map[string]any{"url": url}
}

// latencyGateway starts a gateway process in mode over the configuration
// at path and returns a client connected to it.
func latencyGateway(b *testing.B, path, mode string, extra ...string) *mcp.ClientSession {
	b.Helper()
	bin, _ := binaries(b)
	switch mode {
	case "stdio":
		cmd := exec.Command(bin, append([]string{"gateway", "--config", path, "--stdio"}, extra...)...)
		own(b, cmd)
		return latencyClient(b, &mcp.CommandTransport{Command: cmd})
	case "sessions":
		extra = append(extra, "--sessions")
	}
	g := startHTTPGateway(b, path, extra...)
	return latencyClient(b, &mcp.StreamableClientTransport{Endpoint: g.url, MaxRetries: -1})
}

func latencyClient(b *testing.B, t mcp.Transport) *mcp.ClientSession {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, t, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return cs
}
