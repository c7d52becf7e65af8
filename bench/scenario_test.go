package bench_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolcanon/toolcanon/bench"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// testSizes keep the contention of the comparison (200 beginners, 32
// completers) with fewer records and rounds, so the tests stay fast.
var testSizes = bench.Sizes{Beginners: 200, Completers: 32, Records: 64, Rounds: 2}

func check(t *testing.T, impl bench.Impl) bench.Correctness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := bench.Check(ctx, impl, bench.DefaultPayload(), testSizes)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: executed %d of %d beginners, %d of %d completers succeeded (winner stored in %d of %d rounds), %d of %d TTLs extended (max %d ms)",
		impl.Name(), c.Duplicates.Executed, c.Duplicates.Beginners, c.LostUpdate.Succeeded, c.LostUpdate.Completers,
		c.WinnerStored, c.Rounds, c.TTL.Extended, c.TTL.Records, c.TTL.MaxMs)
	// Whatever the implementation, the scenarios must have run in full.
	if c.Duplicates.Beginners != testSizes.Beginners*testSizes.Rounds || c.Duplicates.Errors != 0 {
		t.Fatalf("duplicates scenario incomplete: %+v", c.Duplicates)
	}
	if c.LostUpdate.Completers != testSizes.Completers*testSizes.Rounds || c.LostUpdate.Errors != 0 {
		t.Fatalf("lost-update scenario incomplete: %+v", c.LostUpdate)
	}
	if c.TTL.Records != testSizes.Records*testSizes.Rounds || c.TTL.Errors != 0 {
		t.Fatalf("TTL scenario incomplete: %+v", c.TTL)
	}
	return c
}

// TestCorrectness asserts the correctness columns for every implementation
// that promises them: toolcanon's stores, its scripts run by other clients,
// the WATCH/MULTI baseline, whose compare-and-set is correct by
// construction (it is slower, not wrong), and the PostgreSQL idempotency
// table, whose unique key and conditional UPDATE are too.
func TestCorrectness(t *testing.T) {
	addrs := []string{redistest.Addr(t)}
	for _, name := range []string{"memstore", "redisstore", "goredis-lua", "ceiling", "watch", "postgres"} {
		t.Run(name, func(t *testing.T) {
			c := check(t, newImpl(t, name, addrs))
			if c.Duplicates.Executed != c.Rounds || c.DuplicatesExecuted() != 0 {
				t.Errorf("%d of %d beginners executed over %d rounds: %d duplicates executed",
					c.Duplicates.Executed, c.Duplicates.Beginners, c.Rounds, c.DuplicatesExecuted())
			}
			if c.LostUpdate.Succeeded != c.Rounds || c.LostUpdates() != 0 {
				t.Errorf("%d completions succeeded over %d rounds: %d lost updates", c.LostUpdate.Succeeded, c.Rounds, c.LostUpdates())
			}
			if c.WinnerStored != c.Rounds {
				t.Errorf("stored data was the winner's in %d of %d rounds", c.WinnerStored, c.Rounds)
			}
			if c.TTL.Extended != 0 {
				t.Errorf("%d of %d TTLs extended by a completion (max %d ms)", c.TTL.Extended, c.TTL.Records, c.TTL.MaxMs)
			}
		})
	}
}

// TestSeedMeasuredBySameCode runs the seed's design through the same
// scenarios. Contention results vary from run to run, so only what must
// hold for any implementation is asserted; the counts are logged.
func TestSeedMeasuredBySameCode(t *testing.T) {
	c := check(t, newImpl(t, "seed", []string{redistest.Addr(t)}))
	// At least one caller per round is told to execute and to have
	// completed, and the stored data is that of the last writer, who was
	// told it succeeded.
	if c.Duplicates.Executed < c.Rounds || c.LostUpdate.Succeeded < c.Rounds {
		t.Errorf("fewer winners than rounds: %+v", c)
	}
	if c.WinnerStored != c.Rounds {
		t.Errorf("stored data was a winner's in %d of %d rounds", c.WinnerStored, c.Rounds)
	}
	t.Logf("seed: %d duplicates executed, %d lost updates, %d TTLs extended", c.DuplicatesExecuted(), c.LostUpdates(), c.TTL.Extended)
}

// yes is an Impl that says yes to everything, stores nothing and pushes
// every record's expiry a second later at each read: the scenarios must
// count every one of its answers as a failure.
type yes struct {
	bench.Impl // not called: every method the scenarios use is below
	reads      atomic.Int64
}

func (*yes) Name() string                                            { return "yes" }
func (*yes) Begin(context.Context, bench.Call, []byte) (bool, error) { return true, nil }
func (*yes) Complete(context.Context, bench.Call, []byte, []byte) (bool, error) {
	return true, nil
}
func (*yes) Raw(context.Context, bench.Call) ([]byte, error) { return []byte(`{}`), nil }
func (y *yes) Expiry(context.Context, bench.Call) (bench.Expiry, error) {
	ms := 1000 * y.reads.Add(1)
	return bench.Expiry{Lo: ms, Hi: ms}, nil
}

func TestScenariosCountFailures(t *testing.T) {
	ctx := context.Background()
	calls := bench.NewCalls("yes")
	p := bench.DefaultPayload()
	d, err := bench.Duplicates(ctx, &yes{}, calls, p.Request, 50)
	if err != nil || d.Executed != 50 || d.Duplicates() != 49 {
		t.Fatalf("duplicates = %+v, %v; want 50 executed, 49 duplicates", d, err)
	}
	l, err := bench.LostUpdates(ctx, &yes{}, calls, p, 8)
	if err != nil || l.Succeeded != 8 || l.Lost() != 7 || l.StoredByWinner {
		t.Fatalf("lost updates = %+v, %v; want 8 succeeded, 7 lost, stored data not a winner's", l, err)
	}
	x, err := bench.TTLExtended(ctx, &yes{}, calls, p, 10)
	if err != nil || x.Extended != 10 {
		t.Fatalf("TTL = %+v, %v; want 10 extended", x, err)
	}
}

// TestProbeSeesExtension checks the expiry reader on the server itself: an
// untouched key's expiry does not move, a PEXPIRE to a later moment does.
func TestProbeSeesExtension(t *testing.T) {
	addr := redistest.Addr(t)
	p := bench.NewProbe([]string{addr})
	defer p.Close()
	ctx := context.Background()
	key := newConfig("probe").Prefix + ":k"
	if _, err := redistest.Command(addr, "SET", key, "v", "PX", "60000"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = redistest.Command(addr, "DEL", key) })
	e0, err := p.Expiry(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	e1, err := p.Expiry(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if e1.Later(e0) {
		t.Fatalf("expiry moved from %+v to %+v with no write", e0, e1)
	}
	if _, err := redistest.Command(addr, "PEXPIRE", key, "60010"); err != nil {
		t.Fatal(err)
	}
	e2, err := p.Expiry(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !e2.Later(e1) {
		t.Fatalf("expiry %+v not later than %+v after PEXPIRE", e2, e1)
	}
	if _, err := p.Expiry(ctx, key+"-missing"); err == nil {
		t.Fatal("expiry of a missing key: no error")
	}
}

// DeletePrefix removes every key under its prefix, past one SCAN batch and
// on every master of a cluster, and no other key.
func TestDeletePrefix(t *testing.T) {
	for name, addrs := range map[string][]string{"standalone": {redistest.Addr(t)}, "cluster": redistest.ClusterAddrs(t)} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			p := bench.NewProbe(addrs)
			defer p.Close()
			prefix, other := newConfig("del").Prefix, newConfig("keep").Prefix
			const n = 2500
			w := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs})
			defer w.Close()
			for i := 0; i < n; i++ {
				if err := w.Set(ctx, fmt.Sprintf("%s:{r%d}:k", prefix, i), "v", time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Set(ctx, other+":k", "v", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			got, err := p.DeletePrefix(ctx, prefix)
			if err != nil || got != n {
				t.Fatalf("DeletePrefix = %d, %v; want %d", got, err, n)
			}
			if again, err := p.DeletePrefix(ctx, prefix); err != nil || again != 0 {
				t.Fatalf("a second DeletePrefix found %d keys (%v)", again, err)
			}
			if left, err := p.DeletePrefix(ctx, other); err != nil || left != 1 {
				t.Fatalf("the other prefix's key: %d, %v", left, err)
			}
		})
	}
}
