package progress_test

import (
	"fmt"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/progress"
)

// BenchmarkProject projects runs of 10, 100 and 1,000 READY calls on a real
// redis-server and reports the store round trips one projection costs.
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
			cs := &countingStore{Store: h.store}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p, err := progress.Project(ctx(), cs, run, progress.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Facts) != n {
					b.Fatalf("%d facts; want %d", len(p.Facts), n)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cs.calls.Load())/float64(b.N), "roundtrips/op")
		})
	}
}
