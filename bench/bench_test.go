package bench_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/toolcanon/toolcanon/bench"
	"github.com/toolcanon/toolcanon/internal/pgtest"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// TestMain stops the servers the tests started: Redis, and the PostgreSQL of
// the postgres row.
func TestMain(m *testing.M) {
	code := m.Run()
	redistest.StopAll()
	pgtest.StopShared()
	os.Exit(code)
}

// parallelism multiplies GOMAXPROCS for the /parallel variants: the work is
// network-bound, so a few goroutines per core keep the server busy.
const parallelism = 16

var prefixSeq atomic.Int64

// newConfig returns a Config with a key prefix of its own, so that
// benchmarks and tests sharing one server never meet.
func newConfig(name string) bench.Config {
	return bench.DefaultConfig(fmt.Sprintf("bench%d-%s", prefixSeq.Add(1), name))
}

// cleanup closes impl and removes its keys from addrs when tb ends.
func cleanup(tb testing.TB, impl bench.Impl, addrs []string, prefix string) {
	tb.Cleanup(func() {
		_ = impl.Close()
		if len(addrs) == 0 {
			return
		}
		p := bench.NewProbe(addrs)
		defer p.Close()
		if _, err := p.DeletePrefix(context.Background(), prefix); err != nil {
			tb.Errorf("remove %s keys: %v", prefix, err)
		}
	})
}

// impls builds the named implementation on addrs.
func newImpl(tb testing.TB, name string, addrs []string) bench.Impl {
	tb.Helper()
	cfg := newConfig(name)
	var impl bench.Impl
	var err error
	switch name {
	case "memstore":
		impl, addrs = bench.NewMemStore(name, cfg), nil
	case "redisstore", "redisstore-cluster":
		impl, err = bench.NewRedisStore(name, addrs, cfg)
	case "seed":
		impl = bench.NewSeed(addrs, cfg)
	case "watch":
		impl, err = bench.NewWatch(addrs, cfg)
	case "goredis-lua":
		impl, err = bench.NewGoRedisLua(addrs, cfg)
	case "ceiling":
		impl, err = bench.NewCeiling(name, addrs[0], cfg)
	case "floor":
		impl, err = bench.NewFloor(addrs, cfg)
	case "postgres":
		impl, err = bench.NewPostgres(context.Background(), pgtest.Database(tb), cfg, 0)
		addrs = nil
	default:
		tb.Fatalf("no implementation %q", name)
	}
	if err != nil {
		tb.Fatal(err)
	}
	cleanup(tb, impl, addrs, cfg.Prefix)
	return impl
}

// benchLifecycles measures one whole lifecycle per op; a Batcher is given
// up to bench.CeilingBatch lifecycles per round trip and reported per
// lifecycle.
func benchLifecycles(b *testing.B, impl bench.Impl, parallel bool) {
	ctx := context.Background()
	p := bench.DefaultPayload()
	calls := bench.NewCalls("b")
	// One lifecycle first: connections are open and scripts loaded.
	if err := bench.Lifecycle(ctx, impl, calls.Next(), p); err != nil {
		b.Fatal(err)
	}
	batcher, batched := impl.(bench.Batcher)
	b.ReportAllocs()
	b.SetBytes(int64(len(p.Request) + len(p.Raw) + len(p.Result)))
	b.ResetTimer()
	if !parallel {
		if batched {
			batch := make([]bench.Call, 0, bench.CeilingBatch)
			for done := 0; done < b.N; done += len(batch) {
				batch = batch[:0]
				for len(batch) < min(bench.CeilingBatch, b.N-done) {
					batch = append(batch, calls.Next())
				}
				if err := batcher.Lifecycles(ctx, batch, p); err != nil {
					b.Fatal(err)
				}
			}
			return
		}
		for i := 0; i < b.N; i++ {
			if err := bench.Lifecycle(ctx, impl, calls.Next(), p); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.SetParallelism(parallelism)
	b.RunParallel(func(pb *testing.PB) {
		batch := make([]bench.Call, 0, bench.CeilingBatch)
		for more := true; more; {
			more = pb.Next()
			if !batched {
				if more {
					if err := bench.Lifecycle(ctx, impl, calls.Next(), p); err != nil {
						b.Error(err)
						return
					}
				}
				continue
			}
			if more {
				batch = append(batch, calls.Next())
			}
			if len(batch) == bench.CeilingBatch || !more && len(batch) > 0 {
				if err := batcher.Lifecycles(ctx, batch, p); err != nil {
					b.Error(err)
					return
				}
				batch = batch[:0]
			}
		}
	})
}

// BenchmarkLifecycle measures toolcanon's stores: Begin then Complete(READY)
// of a fresh call per op, a new run every bench.CallsPerRun calls.
func BenchmarkLifecycle(b *testing.B) {
	targets := []struct {
		name  string
		addrs func(testing.TB) []string
	}{
		{"memstore", func(testing.TB) []string { return nil }},
		{"redisstore", func(tb testing.TB) []string { return []string{redistest.Addr(tb)} }},
		{"redisstore-cluster", redistest.ClusterAddrs},
	}
	for _, t := range targets {
		b.Run(t.name, func(b *testing.B) { benchLifecycles(b, newImpl(b, t.name, t.addrs(b)), false) })
		b.Run(t.name+"/parallel", func(b *testing.B) { benchLifecycles(b, newImpl(b, t.name, t.addrs(b)), true) })
	}
}

// BenchmarkBaseline measures the same lifecycle done the other ways, on the
// same server as BenchmarkLifecycle/redisstore (postgres on a PostgreSQL
// server of its own).
func BenchmarkBaseline(b *testing.B) {
	for _, name := range []string{"seed", "watch", "goredis-lua", "ceiling", "floor", "postgres"} {
		b.Run(name, func(b *testing.B) { benchLifecycles(b, newImpl(b, name, []string{redistest.Addr(b)}), false) })
		b.Run(name+"/parallel", func(b *testing.B) {
			benchLifecycles(b, newImpl(b, name, []string{redistest.Addr(b)}), true)
		})
	}
}
