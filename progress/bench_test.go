package progress_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
	"github.com/toolcanon/toolcanon/progress"
)

// roundTrips counts the requests a rueidis client sends: each Do and each
// DoMulti (one pipeline) is one round trip to the server.
type roundTrips struct {
	rueidis.Client
	n atomic.Int64
}

func (c *roundTrips) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c *roundTrips) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(1)
	return c.Client.DoMulti(ctx, cmds...)
}

// BenchmarkProject projects runs of 10, 100 and 1,000 READY calls on a real
// redis-server and reports the round trips one projection costs, counted at
// the client: 1 + ceil(calls / redisstore.GetManyBatch).
func BenchmarkProject(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			h := newRedisHarness(b)
			run := newRunID(b)
			result := `{"query":"q","evidence":[{"source":"kb","document_id":"d1","excerpt":"some excerpt text of moderate length for a summary"}]}`
			for i := 0; i < n; i++ {
				id := fmt.Sprintf("call_%04d", i)
				begin(b, h.store, run, id, longTTL)
				complete(b, h.store, run, id, canonical.EvidenceFound, result)
			}
			c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redistest.Addr(b)}, DisableCache: true})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			rt := &roundTrips{Client: c}
			s, err := redisstore.New(redisstore.Options{Client: rt})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p, err := progress.Project(ctx(), s, run, progress.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Facts) != n {
					b.Fatalf("%d facts; want %d", len(p.Facts), n)
				}
			}
			b.StopTimer()
			got := float64(rt.n.Load()) / float64(b.N)
			if want := 1 + (n+redisstore.GetManyBatch-1)/redisstore.GetManyBatch; got != float64(want) {
				b.Fatalf("%v round trips per projection, want %d", got, want)
			}
			b.ReportMetric(got, "roundtrips/op")
		})
	}
}
