package audit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/audit"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// store is an audited store of each kind the export is tested on, with a
// prefix of its own.
type store interface {
	canonical.Store
	canonical.AuditSource
}

func stores(t *testing.T, o canonical.AuditOptions) map[string]func(t *testing.T) store {
	return map[string]func(t *testing.T) store{
		"memstore": func(t *testing.T) store { return memstore.New(memstore.WithAudit(o)) },
		"redis": func(t *testing.T) store {
			return openRedis(t, redisstore.Options{Addrs: []string{redistest.Addr(t)}, Audit: &o})
		},
		"cluster": func(t *testing.T) store {
			return openRedis(t, redisstore.Options{Addrs: redistest.ClusterAddrs(t)[:1], Audit: &o})
		},
	}
}

func openRedis(t *testing.T, o redisstore.Options) *redisstore.Store {
	t.Helper()
	o.Prefix = "ax" + canonical.NewOwner()[:10]
	s, err := redisstore.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Every transition of a mixed workload of 8 workers reaches the sink once,
// in sequence order per stream, and the export verifies.
func TestExportMixedWorkload(t *testing.T) {
	for name, open := range stores(t, auditOpts) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			dir := t.TempDir()
			sink, err := audit.OpenJSONL(dir, audit.JSONLOptions{MaxBytes: 64 << 10})
			if err != nil {
				t.Fatal(err)
			}
			defer sink.Close()
			x, verifiers := newExporter(t, s, sink)
			// Export while the workload runs, then drain.
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				for ctx.Err() == nil {
					if _, err := x.Pass(ctx); err != nil && ctx.Err() == nil {
						done <- err
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
				done <- nil
			}()
			n := workload(t, s, 8, 3, 11, name)
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			exportAll(t, x)
			evs, _ := readExport(t, dir)
			checkOnce(t, evs, n)
			rep, err := audit.VerifyJSONL(dir, audit.VerifyOptions{Verifiers: verifiers})
			if err != nil || !rep.OK() || rep.Replays != 8*3*3 {
				t.Fatalf("verify: %+v %v", rep, err)
			}
		})
	}
}

// failingSink refuses every batch while down.
type failingSink struct {
	audit.Sink
	down bool
}

func (f *failingSink) Write(ctx context.Context, events []audit.Event, cp audit.Checkpoint) error {
	if f.down {
		return errors.New("the sink is down")
	}
	return f.Sink.Write(ctx, events, cp)
}

// The sink down: the backlog grows until Begin is refused with
// AUDIT_BACKLOG; once the sink is back, everything is exported and calls
// are taken again.
func TestSinkDownThenRecovery(t *testing.T) {
	o := auditOpts
	o.MaxBacklog = 40
	for name, open := range stores(t, o) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			dir := t.TempDir()
			jsonl, err := audit.OpenJSONL(dir, audit.JSONLOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer jsonl.Close()
			sink := &failingSink{Sink: jsonl, down: true}
			x, verifiers := newExporter(t, s, sink)
			ctx := context.Background()
			run := "down-" + name
			made, refused := 0, false
			for i := range 100 {
				id := "c" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
				req := canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "t", Owner: "o", Principal: "p",
					Request: []byte(`{}`), TTL: time.Hour}
				if _, err := s.Begin(ctx, req); err != nil {
					if canonical.CodeOf(err) != canonical.CodeAuditBacklog {
						t.Fatal(err)
					}
					refused = true
					break
				}
				made++
				if _, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: id, Owner: "o",
					Status: canonical.StatusError, Code: canonical.CodeExecutionFailed}); err != nil {
					t.Fatal(err)
				}
				made++
				if _, err := x.Pass(ctx); err == nil {
					t.Fatal("a pass with the sink down reported no error")
				}
			}
			if !refused || made < 40 {
				t.Fatalf("%d events made, refused %v: want AUDIT_BACKLOG at 40", made, refused)
			}
			sink.down = false
			exportAll(t, x)
			evs, _ := readExport(t, dir)
			checkOnce(t, evs, made)
			if rep, err := audit.VerifyJSONL(dir, audit.VerifyOptions{Verifiers: verifiers}); err != nil || !rep.OK() {
				t.Fatalf("verify: %+v %v", rep, err)
			}
			if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: "after", Tool: "t", Owner: "o",
				Principal: "p", Request: []byte(`{}`), TTL: time.Hour}); err != nil {
				t.Fatalf("after the recovery: %v", err)
			}
			st, err := s.AuditStatus(ctx)
			if err != nil || st.LastPass.IsZero() || st.Pending != 0 {
				t.Fatalf("status %+v %v", st, err)
			}
		})
	}
}

// Four exporters of one store, as four gateways run them, make one pass
// per interval between them: the store's export lease. The lease passes to
// another exporter only once it lapsed (its holder was not scheduled for
// three intervals, as happens on a loaded machine), never while held.
func TestOnePassPerStoreAndInterval(t *testing.T) {
	s := openRedis(t, redisstore.Options{Addrs: []string{redistest.Addr(t)}, Audit: &auditOpts})
	const interval = 200 * time.Millisecond
	signer, _ := keys(t)
	type pass struct {
		g          int
		start, end time.Time
	}
	var mu sync.Mutex
	var passes []pass
	ctx, cancel := context.WithTimeout(context.Background(), 10*interval)
	defer cancel()
	var wg sync.WaitGroup
	for g := range 4 {
		sink, err := audit.OpenJSONL(t.TempDir(), audit.JSONLOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer sink.Close()
		x := &audit.Exporter{Source: s, Sink: sink, Signer: signer, Origin: "four", Interval: interval}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for ctx.Err() == nil {
				start := time.Now()
				rep, err := x.Pass(ctx)
				if err == nil && rep.Leased {
					mu.Lock()
					passes = append(passes, pass{g, start, time.Now()})
					mu.Unlock()
				}
				select {
				case <-ctx.Done():
				case <-tick.C:
				}
			}
		}()
	}
	wg.Wait()
	if len(passes) < 1 || len(passes) > 11 {
		t.Fatalf("%d passes over 10 intervals: want one per interval", len(passes))
	}
	slices.SortFunc(passes, func(a, b pass) int { return a.start.Compare(b.start) })
	holders := map[int]bool{}
	for i, p := range passes {
		holders[p.g] = true
		if i == 0 || p.g == passes[i-1].g {
			continue
		}
		// The previous holder renewed its lease for three intervals no
		// earlier than its pass began: another exporter has it only after.
		if prev := passes[i-1]; p.end.Sub(prev.start) < 3*interval {
			t.Fatalf("exporter %d passed %v after exporter %d's pass began: the lease was held", p.g, p.end.Sub(prev.start), prev.g)
		}
	}
	t.Logf("%d passes by %d exporter(s)", len(passes), len(holders))
}

// A pass costs the server the same commands with a million unrelated keys
// as without: it reads the slots' sets of runs with pending events, never
// the keyspace.
func TestPassCostIgnoresOtherKeys(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	s := openRedis(t, redisstore.Options{Addrs: []string{srv.Addr}, Audit: &auditOpts})
	signer, _ := keys(t)
	sink, err := audit.OpenJSONL(t.TempDir(), audit.JSONLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	x := &audit.Exporter{Source: s, Sink: sink, Signer: signer, Origin: "cost", Interval: time.Millisecond}
	pass := func(label string) (int64, time.Duration) {
		workload(t, s, 2, 5, 2, label) // 10 runs with pending events
		before := serverCommands(t, srv.Addr)
		start := time.Now()
		rep, err := x.Pass(context.Background())
		el := time.Since(start)
		if err != nil || rep.Pending != 0 || rep.Runs != 10 {
			t.Fatalf("%s: %+v %v", label, rep, err)
		}
		return serverCommands(t, srv.Addr) - before, el
	}
	pass("warm-up") // the scripts loaded
	empty, t0 := pass("empty")
	fill(t, srv.Addr, 1_000_000)
	full, t1 := pass("full")
	t.Logf("a pass exporting 10 runs: %d commands, %v on an empty server; %d commands, %v with 1,000,000 other keys", empty, t0, full, t1)
	if full != empty {
		t.Fatalf("a pass costs %d commands with a million other keys, %d without", full, empty)
	}
}

// fill writes n unrelated keys, in pipelines of MSETs.
func fill(t *testing.T, addr string, n int) {
	t.Helper()
	const per = 1000
	var cmds [][]string
	for i := 0; i < n; i += per {
		cmd := []string{"MSET"}
		for j := i; j < i+per && j < n; j++ {
			cmd = append(cmd, fmt.Sprintf("other:%d", j), "v")
		}
		cmds = append(cmds, cmd)
		if len(cmds) == 50 || i+per >= n {
			if _, err := redistest.Pipeline(addr, cmds...); err != nil {
				t.Fatal(err)
			}
			cmds = cmds[:0]
		}
	}
	if got, err := redistest.Command(addr, "DBSIZE"); err != nil || got < fmt.Sprint(n) && len(got) <= len(fmt.Sprint(n)) {
		t.Fatalf("DBSIZE %s %v", got, err)
	}
}

// serverCommands returns the commands the server has run (INFO
// commandstats), INFO itself left out.
func serverCommands(t *testing.T, addr string) int64 {
	t.Helper()
	st, err := redistest.Command(addr, "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, l := range strings.Split(st, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "cmdstat_") || strings.HasPrefix(l, "cmdstat_info:") {
			continue
		}
		i := strings.Index(l, "calls=")
		j := strings.IndexByte(l[i:], ',')
		v, _ := strconv.ParseInt(l[i+6:i+j], 10, 64)
		n += v
	}
	return n
}
