package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// memoryRecords is how many READY records one measurement writes.
const memoryRecords = 10000

// memoryCallsPerRun is how many of them one run holds: the runs' own keys
// (state, completion index) are counted in the per-record figure, as they
// are in a server that holds real runs.
const memoryCallsPerRun = 100

// maxRecordOverhead bounds what Redis holds per READY record beyond its
// payload bytes, with run and call ids as long as measureRecordMemory's
// ones (a 77-byte record key): the record's key and expiry, its hash's
// table and fields, its header, its entry in its run's calls and its share
// of its run's keys (layout 4: 820, 956 and 956 B at 1, 8 and 64 KiB, the
// request in the header's field up to 512 B with the header; 820, 900 and
// 956 B when it was up to 4 KiB, which cost a completion three copies of
// the request in Lua; layout 3: 903 B at each size). TestRecordMemoryOverhead measures the whole and logs it; no part
// of it is measured alone.
const maxRecordOverhead = 960

// memorySizes are the total payloads (request + raw + result) measured.
var memorySizes = []struct {
	name  string
	bytes int
}{
	{"1KiB", 1 << 10},
	{"8KiB", 8 << 10},
	{"64KiB", 64 << 10},
}

// recordMemory is one measurement: used_memory after minus before, per record.
type recordMemory struct {
	perRecord, payload float64
}

func (m recordMemory) overhead() float64 { return m.perRecord - m.payload }

// jsonOfLen returns a JSON object of exactly n bytes (n >= 16) whose bytes
// vary with seed, so that no two payloads are equal.
func jsonOfLen(n int, seed string) []byte {
	head := `{"id":"` + seed + `","d":"`
	tail := `"}`
	pad := n - len(head) - len(tail)
	if pad < 0 {
		panic(fmt.Sprintf("jsonOfLen(%d): too short for seed %q", n, seed))
	}
	b := make([]byte, 0, n)
	b = append(b, head...)
	for i := 0; i < pad; i++ {
		b = append(b, byte('a'+(i+len(seed))%26))
	}
	return append(b, tail...)
}

// splitPayload splits a total payload into request (1/8), result (1/8) and
// raw (the rest).
func splitPayload(total int) (request, raw, result int) {
	request, result = total/8, total/8
	return request, total - request - result, result
}

// usedMemory reads used_memory from INFO memory.
func usedMemory(tb testing.TB, addr string) int64 {
	tb.Helper()
	info, err := redistest.Command(addr, "INFO", "memory")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatalf("INFO memory has no used_memory: %q", info)
	return 0
}

// waitNoClients waits until the server at addr has no client but the one
// that asks.
func waitNoClients(tb testing.TB, addr string) {
	tb.Helper()
	for range 500 {
		info, err := redistest.Command(addr, "INFO", "clients")
		if err != nil {
			tb.Fatal(err)
		}
		if strings.Contains(info, "connected_clients:1\r") || strings.Contains(info, "connected_clients:1\n") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatalf("clients of %s still connected after 5s", addr)
}

// measureRecordMemory starts a fresh redis-server, writes n READY records of total payload bytes each (memoryCallsPerRun per run, ids
// as long as real frameworks' ones) and returns the used_memory delta per
// record. The scripts are loaded before the first reading, and both
// readings are taken with no client of the store connected, so that
// neither counts the clients' buffers, which grow with the payloads.
func measureRecordMemory(tb testing.TB, total, n int) recordMemory {
	tb.Helper()
	// No slow log: on a loaded machine it would keep copies of up to 128
	// slow commands' arguments, which belong to no record.
	srv, err := redistest.StartServer("--slowlog-log-slower-than", "-1")
	if err != nil {
		tb.Fatal(err)
	}
	defer srv.Stop()
	var s *redisstore.Store
	open := func() {
		if s, err = redisstore.New(redisstore.Options{Addrs: []string{srv.Addr}, Standalone: true, Timeout: time.Minute}); err != nil {
			tb.Fatal(err)
		}
	}
	closeAndRead := func() int64 {
		_ = s.Close()
		waitNoClients(tb, srv.Addr)
		return usedMemory(tb, srv.Addr)
	}
	open()
	ctx := context.Background()
	reqLen, rawLen, resLen := splitPayload(total)
	limits := canonical.Limits{MaxCallsPerRun: memoryCallsPerRun, MaxCallsPerTool: memoryCallsPerRun,
		MaxRecordBytes: int64(total), MaxResultBytes: int64(resLen), MaxRunBytes: int64(total) * memoryCallsPerRun}
	write := func(run, id string) error {
		owner := canonical.NewOwner()
		if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "kb.search", Owner: owner,
			Request: jsonOfLen(reqLen, id), TTL: time.Hour, Limits: limits}); err != nil {
			return err
		}
		rec, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: id, Owner: owner,
			Status: canonical.StatusReady, Evidence: canonical.EvidenceFound,
			Raw: jsonOfLen(rawLen, id), Result: jsonOfLen(resLen, id)})
		if err == nil && rec.Size() != int64(total) {
			err = fmt.Errorf("record %s holds %d payload bytes, want %d", id, rec.Size(), total)
		}
		return err
	}
	// Warm up: the scripts are loaded.
	for i := range 4 {
		if err := write("warmup-"+canonical.NewOwner(), fmt.Sprintf("toolu_warmup_%d", i)); err != nil {
			tb.Fatal(err)
		}
	}
	before := closeAndRead()
	open()
	const workers = 8
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				// Run ids like UUIDs, call ids like Anthropic's (toolu_ and 24 characters).
				run := fmt.Sprintf("4f1c2a7e-9b3d-4c55-8e21-%012d", i/memoryCallsPerRun)
				id := fmt.Sprintf("toolu_01%022d", i)
				if err := write(run, id); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}
	after := closeAndRead()
	return recordMemory{perRecord: float64(after-before) / float64(n), payload: float64(total)}
}

// BenchmarkRecordMemory reports what Redis holds per READY record: the
// used_memory delta over memoryRecords records on a fresh server, per
// record (B/record), the payload bytes of one record (payload-B/record) and
// the difference (overhead-B/record). Run it once: make bench-memory.
func BenchmarkRecordMemory(b *testing.B) {
	for _, size := range memorySizes {
		b.Run(size.name, func(b *testing.B) {
			var m recordMemory
			for range b.N {
				m = measureRecordMemory(b, size.bytes, memoryRecords)
			}
			b.ReportMetric(m.perRecord, "B/record")
			b.ReportMetric(m.payload, "payload-B/record")
			b.ReportMetric(m.overhead(), "overhead-B/record")
		})
	}
}

// What Redis holds per READY record beyond its payload stays under
// maxRecordOverhead at every size, size classes included: 2,500 records of
// each size on a fresh server.
func TestRecordMemoryOverhead(t *testing.T) {
	for _, size := range memorySizes {
		m := measureRecordMemory(t, size.bytes, 2500)
		t.Logf("%s: %.0f B/record, overhead %.0f B", size.name, m.perRecord, m.overhead())
		if m.overhead() > maxRecordOverhead {
			t.Errorf("%s: %.0f B per record for %.0f B of payload: overhead %.0f B, over %d B",
				size.name, m.perRecord, m.payload, m.overhead(), maxRecordOverhead)
		}
	}
}
