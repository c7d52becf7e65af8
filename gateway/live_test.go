package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
)

// observed keeps what the gateway's Observe hook saw, by tool_call_id.
type observed struct {
	mu  sync.Mutex
	res map[string]boundary.Result
}

func (o *observed) hook(_ context.Context, _ *gateway.Call, res boundary.Result, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.res == nil {
		o.res = map[string]boundary.Result{}
	}
	o.res[res.ToolCallID()] = res
}

func (o *observed) get(id string) (boundary.Result, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r, ok := o.res[id]
	return r, ok
}

// liveGateway is a gateway opened in process over cfg, with a go-sdk
// client joined to it in memory.
type liveGateway struct {
	g     *gateway.Gateway
	store canonical.Store
	obs   *observed
	log   *syncBuffer
}

func openLive(t *testing.T, cfg configDoc, opts gateway.OpenOptions) *liveGateway {
	t.Helper()
	c, err := gateway.LoadConfig(cfg.write(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	lg := &liveGateway{store: memstore.New(), obs: &observed{}, log: &syncBuffer{}}
	opts.Observe = lg.obs.hook
	opts.Logger = slog.New(slog.NewTextHandler(lg.log, nil))
	opts.NoReaper = true
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if lg.g, err = gateway.Open(ctx, c, lg.store, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lg.g.Close() })
	return lg
}

// agent joins a go-sdk client with the given options to the gateway's
// server in memory.
func (lg *liveGateway) agent(t *testing.T, copts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	return connectWith(t, lg.g.Server(), copts, sopts)
}

func (lg *liveGateway) record(t *testing.T, run, id string) canonical.Record {
	t.Helper()
	rec, err := lg.store.Get(context.Background(), run, id)
	if err != nil {
		t.Fatalf("record %s/%s: %v", run, id, err)
	}
	return rec
}

// An upstream that cannot be started or reached is UPSTREAM_UNAVAILABLE,
// with executed=false and a hint that says nothing ran; the record keeps
// the call, so its id stays spent (one record per id).
func TestUnreachableUpstreamIsUpstreamUnavailable(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]map[string]any{
		"missing program": {"command": []string{filepath.Join(dir, "no-such-server")}},
		"exits at once":   {"command": []string{"/bin/false"}},
		"closed port":     {"url": fmt.Sprintf("http://127.0.0.1:%d/mcp", freePort(t))},
	}
	for name, up := range cases {
		t.Run(name, func(t *testing.T) {
			lg := openLive(t, baseConfig(t, up, "echo"), gateway.OpenOptions{})
			cs := lg.agent(t, nil, nil)
			ctx := context.Background()
			o := mustCall(ctx, t, cs, "echo", "call_u1", "run-u", map[string]any{"text": "hi"})
			if o.code != string(canonical.CodeUpstreamUnavailable) {
				t.Fatalf("unreachable upstream: %s", o.text)
			}
			if hint, _ := o.obj["hint"].(string); hint != boundary.Hint(canonical.CodeUpstreamUnavailable) {
				t.Fatalf("hint %q", hint)
			}
			res, ok := lg.obs.get("call_u1")
			if !ok || res.Executed() {
				t.Fatalf("observed %+v (seen %v): want executed=false", res, ok)
			}
			if rec := lg.record(t, "run-u", "call_u1"); rec.Status != canonical.StatusError || rec.Error != canonical.CodeUpstreamUnavailable {
				t.Fatalf("record %s/%s", rec.Status, rec.Error)
			}
			if o := mustCall(ctx, t, cs, "echo", "call_u1", "run-u", map[string]any{"text": "hi"}); o.code != string(canonical.CodeDuplicateToolCall) {
				t.Fatalf("the same id again: %s", o.text)
			}
		})
	}
}
