package otelcanon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
	"github.com/toolcanon/toolcanon/observe"
	"github.com/toolcanon/toolcanon/otelcanon"
	"github.com/toolcanon/toolcanon/registry"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// The tools of the tests' registry, bound under agent-facing names.
var inputSchema = []byte(`{"type":"object","additionalProperties":false,"required":["query"],
	"properties":{"query":{"type":"string","minLength":1,"maxLength":4096}}}`)

func def(name string, effect registry.Effect) registry.Definition {
	return registry.Definition{Name: name, Version: "1.0.0", Description: "test tool " + name, InputSchema: inputSchema,
		Effect: effect, Risk: registry.RiskLow, Timeout: 30 * time.Second}
}

var fence = registry.Fence{ProjectVersion: "7", RoleBindingVersion: "3"}

// policy denies mallory, fails for broken (with text that must go nowhere)
// and wants approval for kb.approve.
func policy(marker string) registry.Policy {
	return registry.PolicyFunc(func(_ context.Context, _ string, p registry.Principal, perm string) (registry.Decision, error) {
		switch {
		case p.Subject == "user:mallory":
			return registry.Decision{Verdict: registry.VerdictDeny}, nil
		case p.Subject == "user:broken":
			return registry.Decision{}, errors.New("policy backend down: " + marker)
		case perm == registry.CallPermissionPrefix+"kb.approve":
			return registry.Decision{Verdict: registry.VerdictRequireApproval, Fence: fence}, nil
		}
		return registry.Decision{Verdict: registry.VerdictAllow, Fence: fence}, nil
	})
}

// storeKind opens one kind of store for a world.
type storeKind struct {
	name   string
	system string // db.system.name the world reports
	open   func(t testing.TB) canonical.Store
}

var (
	redisOnce  sync.Once
	redisShare *redisstore.Store
	redisErr   error
)

func sharedRedis(t testing.TB) canonical.Store {
	addr := redistest.Addr(t)
	redisOnce.Do(func() { redisShare, redisErr = redisstore.New(redisstore.Options{Addrs: []string{addr}}) })
	if redisErr != nil {
		t.Fatal(redisErr)
	}
	return redisShare
}

var storeKinds = []storeKind{
	{"memstore", "memory", func(testing.TB) canonical.Store { return memstore.New() }},
	{"redisstore", "redis", sharedRedis},
}

// world is one test's toolcanon with OpenTelemetry's SDK recording every
// span in memory and every metric for a manual read, and an slog logger
// writing JSON lines.
type world struct {
	t      testing.TB
	kind   storeKind
	store  canonical.Store // the store, unwrapped
	obs    *otelcanon.Observer
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	logs   *syncBuffer
	reg    *registry.Registry
	marker string

	// tool and proj are what the bound tool and projector do; a test may
	// replace them between calls.
	tool func(ctx context.Context, input []byte) ([]byte, error)
	proj func(ctx context.Context, call canonical.Call, raw []byte) (canonical.Projection, error)
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newWorld(t testing.TB, kind storeKind, opts ...otelcanon.Option) *world {
	w := &world{t: t, kind: kind, store: kind.open(t), spans: tracetest.NewInMemoryExporter(),
		reader: sdkmetric.NewManualReader(), logs: &syncBuffer{}, marker: "MARKER" + canonical.NewOwner()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(w.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(w.reader))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	obs, err := otelcanon.New(tp, mp, append([]otelcanon.Option{otelcanon.WithDBSystem(kind.system)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	w.obs = obs
	w.reg, err = registry.New(def("kb.search", registry.EffectRead), def("kb.write", registry.EffectWrite), def("kb.approve", registry.EffectRead))
	if err != nil {
		t.Fatal(err)
	}
	w.tool, w.proj = w.defaultTool, w.defaultProjector
	return w
}

// boundary builds a boundary over wrap(store) (wrap may be nil), observed
// by the world's Observer and Logger, its store decorated for both.
func (w *world) boundary(wrap func(canonical.Store) canonical.Store, opts ...boundary.Option) *boundary.Boundary {
	w.t.Helper()
	s := w.store
	if wrap != nil {
		s = wrap(s)
	}
	logger := observe.NewLogger(slog.New(slog.NewJSONHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	s = observe.Store(observe.Store(s, w.obs), logger)
	tool := boundary.ToolFunc(func(ctx context.Context, in []byte) ([]byte, error) { return w.tool(ctx, in) })
	proj := canonical.ProjectorFunc(func(ctx context.Context, c canonical.Call, raw []byte) (canonical.Projection, error) {
		return w.proj(ctx, c, raw)
	})
	all := append([]boundary.Option{
		boundary.Bind("search_docs", "kb.search", "1.0.0", tool, proj),
		boundary.Bind("update_ticket", "kb.write", "1.0.0", tool, proj),
		boundary.Bind("approve_docs", "kb.approve", "1.0.0", tool, proj),
		boundary.WithObserver(w.obs), boundary.WithObserver(logger),
	}, opts...)
	b, err := boundary.New(s, w.reg, policy(w.marker), all...)
	if err != nil {
		w.t.Fatal(err)
	}
	return b
}

func (w *world) newRun() boundary.RunContext {
	return boundary.RunContext{
		ID: "run-" + canonical.NewOwner(), Project: "support",
		Principal: registry.Principal{Subject: "user:alice", ExpiresAt: time.Now().Add(time.Hour)},
		Active:    true, TTL: time.Minute,
		Limits: canonical.Limits{MaxCallsPerRun: 10, MaxCallsPerTool: 10, MaxRecordBytes: 64 << 10, MaxResultBytes: 4 << 10},
	}
}

// defaultTool answers like a search service: hits for most queries, none
// for "quantum", a failure for "fail", far too much for "everything".
func (w *world) defaultTool(ctx context.Context, input []byte) ([]byte, error) {
	var in struct{ Query string }
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	switch {
	case strings.Contains(in.Query, "quantum"):
		return []byte(`{"hits":[],"trace":"` + w.marker + `"}`), nil
	case strings.Contains(in.Query, "fail"):
		return nil, errors.New("backend: ERR " + w.marker + " tc:{run}:call:x")
	case strings.Contains(in.Query, "panic"):
		panic("tool panic " + w.marker)
	case strings.Contains(in.Query, "slow"):
		<-ctx.Done()
		return nil, ctx.Err()
	case strings.Contains(in.Query, "everything"):
		return []byte(`{"hits":[],"pad":"` + strings.Repeat("x", 100<<10) + `"}`), nil
	case strings.Contains(in.Query, "garbage"):
		return []byte(`not json ` + w.marker), nil
	}
	return []byte(`{"hits":[{"id":"doc-1","text":"Refunds need a second approver."}],"password":"` + w.marker + `"}`), nil
}

// defaultProjector keeps the hits' ids.
func (w *world) defaultProjector(_ context.Context, call canonical.Call, raw []byte) (canonical.Projection, error) {
	var r struct {
		Hits []struct {
			ID string `json:"id"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return canonical.Projection{}, errors.New("projector: " + err.Error())
	}
	ids := []string{}
	for _, h := range r.Hits {
		ids = append(ids, h.ID)
	}
	out, _ := json.Marshal(map[string]any{"tool_call_id": call.ToolCallID, "evidence": ids})
	ev := canonical.EvidenceFound
	if len(ids) == 0 {
		ev = canonical.NoEvidence
	}
	return canonical.Projection{Evidence: ev, Result: out}, nil
}

func (w *world) metrics() metricdata.ResourceMetrics {
	w.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := w.reader.Collect(context.Background(), &rm); err != nil {
		w.t.Fatal(err)
	}
	return rm
}
