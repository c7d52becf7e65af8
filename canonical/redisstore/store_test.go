package redisstore_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/canonical/storetest"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func newStore(t testing.TB, addrs []string, opts redisstore.Options) *redisstore.Store {
	t.Helper()
	opts.Addrs = addrs
	s, err := redisstore.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// backend lets the suite look at the servers behind a store without
// trusting the store: every key of the prefix with its TTL, and a DEL of a
// run's state (sent to every node; only the one that holds the key has it).
func backend(addrs []string, prefix string) (func(*testing.T) map[string]time.Duration, func(*testing.T, string)) {
	keys, err := canonical.NewKeys(prefix)
	if err != nil {
		panic(err)
	}
	all := func(t *testing.T) map[string]time.Duration {
		t.Helper()
		ttls, err := redistest.KeyTTLs(addrs, prefix+":*")
		if err != nil {
			t.Fatal(err)
		}
		out := make(map[string]time.Duration, len(ttls))
		for k, ms := range ttls {
			out[k] = time.Duration(ms) * time.Millisecond
			if ms < 0 {
				out[k] = -1
			}
		}
		return out
	}
	drop := func(t *testing.T, runID string) {
		t.Helper()
		deleted := 0
		for _, addr := range addrs {
			if n, err := redistest.Command(addr, "DEL", keys.Run(runID)); err == nil && n == "1" {
				deleted++
			}
		}
		if deleted != 1 {
			t.Fatalf("DEL of the run state of %s deleted %d keys", runID, deleted)
		}
	}
	return all, drop
}

// outcomes wraps a client and records the outcome of every lifecycle
// script reply that passes through it, so that a test can see which of the
// outcomes each script declares were reached.
type outcomes struct {
	rueidis.Client
	files map[string]string // script SHA1 -> file
	mu    sync.Mutex
	seen  map[string]map[string]bool
}

func (o *outcomes) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	file := ""
	if args := cmd.Commands(); len(args) > 1 {
		switch args[0] {
		case "EVALSHA":
			file = o.files[args[1]]
		case "EVAL":
			sum := sha1.Sum([]byte(args[1]))
			file = o.files[hex.EncodeToString(sum[:])]
		}
	}
	res := o.Client.Do(ctx, cmd)
	if arr, err := res.ToArray(); err == nil && file != "" && len(arr) > 0 {
		if out, err := arr[0].ToString(); err == nil {
			o.mu.Lock()
			if o.seen[file] == nil {
				o.seen[file] = map[string]bool{}
			}
			o.seen[file][out] = true
			o.mu.Unlock()
		}
	}
	return res
}

// The suite on a standalone server reaches every outcome every script
// declares, and every reply it gets decodes as declared (a reply that does
// not would fail the suite with STORE_UNAVAILABLE).
func TestConformanceStandalone(t *testing.T) {
	addr := redistest.Addr(t)
	all, drop := backend([]string{addr}, "tc")
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec := &outcomes{Client: c, files: redisstore.ScriptFiles(), seen: map[string]map[string]bool{}}
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		return storetest.Harness{
			Store: newStore(t, nil, redisstore.Options{Client: rec}),
			Wait:  time.Sleep, RealClock: true, AllKeys: all, DropRunState: drop,
		}
	})
	for file, declared := range redisstore.DeclaredOutcomes() {
		for _, o := range declared {
			if !rec.seen[file][o] {
				t.Errorf("%s: the suite never reached the declared outcome %s", file, o)
			}
		}
	}
}

func TestConformanceCluster(t *testing.T) {
	addrs := redistest.ClusterAddrs(t)
	all, drop := backend(addrs, "tcc")
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		return storetest.Harness{
			Store: newStore(t, addrs[:1], redisstore.Options{Prefix: "tcc", ClosedRunRetention: 30 * time.Minute}),
			Wait:  time.Sleep, RealClock: true, AllKeys: all, DropRunState: drop, ClosedRunRetention: 30 * time.Minute,
		}
	})
}
