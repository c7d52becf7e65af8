package memstore_test

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
)

// liveRecords is how many live records BenchmarkBeginLive holds before it
// measures.
const liveRecords = 500_000

// perRun is how many records the benchmarks put in one run: below the
// default per-tool budget, so that no Begin is refused.
const perRun = 50

var (
	liveOnce  sync.Once
	liveStore *memstore.Store
	liveNext  int // next measured call; the store and this counter outlive one b.N
)

var benchRequest = []byte(`{"query":"disk usage of /var on the build hosts","limit":20}`)

// filledStore returns a store holding liveRecords live records, filled
// once for every b.N.
func filledStore(b *testing.B) *memstore.Store {
	liveOnce.Do(func() {
		s := memstore.New()
		ctx := context.Background()
		for i := 0; i < liveRecords; i++ {
			if _, err := s.Begin(ctx, canonical.BeginRequest{
				RunID: "live-" + strconv.Itoa(i/perRun), ToolCallID: "c" + strconv.Itoa(i%perRun),
				Tool: "kb.search", Owner: "o", Request: benchRequest, TTL: time.Hour,
			}); err != nil {
				b.Fatal(err)
			}
		}
		liveStore = s
	})
	return liveStore
}

// BenchmarkBeginLive measures the latency of each Begin on a store that
// holds 500k live records, and reports its median, its 99.9th percentile
// and its maximum: a Begin must never wait for work proportional to the
// store's size.
func BenchmarkBeginLive(b *testing.B) {
	s := filledStore(b)
	ctx := context.Background()
	lat := make([]time.Duration, b.N)
	reqs := make([]canonical.BeginRequest, b.N)
	for i := range reqs {
		n := liveNext + i
		reqs[i] = canonical.BeginRequest{
			RunID: "m-" + strconv.Itoa(n/perRun), ToolCallID: "c" + strconv.Itoa(n%perRun),
			Tool: "kb.search", Owner: "o", Request: benchRequest, TTL: time.Hour,
		}
	}
	liveNext += b.N
	runtime.GC() // the fill's garbage is not the measured Begins' cost
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := range reqs {
		t0 := time.Now()
		_, err := s.Begin(ctx, reqs[i])
		lat[i] = time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	slices.Sort(lat)
	at := func(q float64) float64 { return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Nanoseconds()) }
	b.ReportMetric(at(0.5), "p50-ns")
	b.ReportMetric(at(0.999), "p99.9-ns")
	b.ReportMetric(float64(lat[len(lat)-1].Nanoseconds()), "max-ns")
	gcs := after.NumGC - before.NumGC
	var pause uint64
	for g := before.NumGC; g < after.NumGC && g-before.NumGC < 256; g++ {
		pause = max(pause, after.PauseNs[g%256])
	}
	b.Logf("N=%d: %d GC cycles during the measurement, longest stop-the-world pause %v", b.N, gcs, time.Duration(pause))
}

// BenchmarkScaling runs whole lifecycles (Begin then Complete) in parallel
// over many runs, each goroutine on runs of its own, and reports
// lifecycles per second. Run it with -cpu 1,2: runs are independent, so
// the rate should grow with the cores. It also logs lifecycles per second
// of the process's CPU time: when that stays level from 1 to 2 cores, the
// store adds no contention, and a rate that does not double means the
// cores were not free.
func BenchmarkScaling(b *testing.B) {
	s := memstore.New()
	ctx := context.Background()
	var worker atomic.Int64
	raw := []byte(`{"hits":[{"id":"doc-1","score":0.9}]}`)
	result := []byte(`{"hits":1}`)
	cpu0 := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		prefix := "s" + strconv.FormatInt(worker.Add(1), 10) + "-"
		for i := 0; pb.Next(); i++ {
			run, id := prefix+strconv.Itoa(i/perRun), "c"+strconv.Itoa(i%perRun)
			if _, err := s.Begin(ctx, canonical.BeginRequest{
				RunID: run, ToolCallID: id, Tool: "kb.search", Owner: "o", Request: benchRequest, TTL: time.Hour,
			}); err != nil {
				b.Error(err)
				return
			}
			if _, err := s.Complete(ctx, canonical.Completion{
				RunID: run, ToolCallID: id, Owner: "o", Status: canonical.StatusReady,
				Evidence: canonical.EvidenceFound, Raw: raw, Result: result,
			}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lifecycles/s")
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.Logf("N=%d: %.0f lifecycles per CPU-second (%v of CPU in %v)", b.N, float64(b.N)/cpu.Seconds(), cpu.Round(time.Millisecond), b.Elapsed().Round(time.Millisecond))
	}
}
