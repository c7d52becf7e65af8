package redisstore_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

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

// keysOf lists a run's keys and their PTTL straight from the server, so the
// suite can see what the store wrote without trusting the store.
func keysOf(addrs []string, prefix string) func(t *testing.T, runID string) map[string]time.Duration {
	return func(t *testing.T, runID string) map[string]time.Duration {
		t.Helper()
		out := map[string]time.Duration{}
		for _, addr := range addrs {
			cursor := "0"
			for {
				reply, err := redistest.Command(addr, "SCAN", cursor, "MATCH", prefix+":{"+runID+"}:*", "COUNT", "1000")
				if err != nil {
					t.Fatalf("SCAN on %s: %v", addr, err)
				}
				lines := strings.Split(reply, "\n")
				cursor = lines[0]
				for _, k := range lines[1:] {
					if k == "" {
						continue
					}
					p, err := redistest.Command(addr, "PTTL", k)
					if err != nil {
						t.Fatal(err)
					}
					ms, _ := strconv.ParseInt(p, 10, 64)
					out[k] = time.Duration(ms) * time.Millisecond
				}
				if cursor == "0" {
					break
				}
			}
		}
		return out
	}
}

func TestConformanceStandalone(t *testing.T) {
	addr := redistest.Addr(t)
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		return storetest.Harness{
			Store: newStore(t, []string{addr}, redisstore.Options{}),
			Wait:  time.Sleep, RealClock: true,
			Keys: keysOf([]string{addr}, "tc"),
		}
	})
}

func TestConformanceCluster(t *testing.T) {
	addrs := redistest.ClusterAddrs(t)
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		return storetest.Harness{
			Store: newStore(t, addrs[:1], redisstore.Options{Prefix: "tcc"}),
			Wait:  time.Sleep, RealClock: true,
			Keys: keysOf(addrs, "tcc"),
		}
	})
}
