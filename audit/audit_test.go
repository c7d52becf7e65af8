package audit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/audit"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"golang.org/x/mod/sumdb/note"
)

// leaseInterval is the tests' export interval: the lease of an exporter
// that stops passes after three of them.
const leaseInterval = 10 * time.Millisecond

var auditOpts = canonical.AuditOptions{Key: bytes.Repeat([]byte("k"), 32), KeyID: "k1"}

// keys returns a signer and the verifiers of its key.
func keys(t testing.TB) (note.Signer, note.Verifiers) {
	t.Helper()
	skey, vkey, err := audit.GenerateKey("test.exporter")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return signer, note.VerifierList(verifier)
}

// workload runs a mixed workload of workers on s: lifecycles READY and
// ERROR, duplicates of finished calls (replays), abandons after a short
// lease and closes, over a few runs per worker. It returns how many
// transitions it made, each of which is one event.
func workload(t testing.TB, s canonical.Store, workers, runsPer, callsPer int, tag string) int {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	events := 0
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for r := range runsPer {
				run := fmt.Sprintf("run-%s-%d-%d", tag, w, r)
				for c := range callsPer {
					id := fmt.Sprintf("call_%d", c)
					owner := canonical.NewOwner()
					req := canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "kb_search", Owner: owner, Principal: "alice",
						Request: []byte(fmt.Sprintf(`{"q":"%d"}`, c)), TTL: time.Hour, Definition: "kb.search@1.0.0"}
					if c%5 == 4 {
						req.Lease = time.Millisecond
					}
					if _, err := s.Begin(ctx, req); err != nil {
						errs <- fmt.Errorf("begin %s/%s: %w", run, id, err)
						return
					}
					n++
					switch c % 5 {
					case 4:
						time.Sleep(3 * time.Millisecond)
						if _, err := s.Abandon(ctx, run, id); err != nil {
							errs <- fmt.Errorf("abandon %s/%s: %w", run, id, err)
							return
						}
					case 3:
						if _, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: id, Owner: owner,
							Status: canonical.StatusError, Code: canonical.CodeExecutionFailed, Raw: []byte(`{"err":1}`)}); err != nil {
							errs <- err
							return
						}
					default:
						if _, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: id, Owner: owner,
							Status: canonical.StatusReady, Evidence: canonical.EvidenceFound, Raw: []byte(`{"hits":[1]}`),
							Result: []byte(`{"ok":true}`), Redactions: 1}); err != nil {
							errs <- err
							return
						}
					}
					n++
					if c%5 == 0 {
						// A duplicate of the finished call: replayable.
						req.Owner = canonical.NewOwner()
						_, err := s.Begin(ctx, req)
						if _, ok := canonical.ReplayableOf(err); !ok {
							errs <- fmt.Errorf("duplicate %s/%s: %v", run, id, err)
							return
						}
						n++
					}
				}
				if err := s.CloseRun(ctx, run, "alice"); err != nil {
					errs <- err
					return
				}
				n++
			}
			mu.Lock()
			events += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return events
}

// exportAll makes passes until nothing is pending.
func exportAll(t testing.TB, x *audit.Exporter) int {
	t.Helper()
	total := 0
	for range 100 {
		rep, err := x.Pass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Leased {
			t.Fatal("the exporter does not get the lease")
		}
		total += rep.Exported
		if rep.Pending == 0 {
			return total
		}
	}
	t.Fatal("the backlog does not drain")
	return 0
}

// readExport returns the events and checkpoints of an export directory.
func readExport(t testing.TB, dir string) ([]audit.Event, []audit.Checkpoint) {
	t.Helper()
	var evs []audit.Event
	var cps []audit.Checkpoint
	if err := audit.ReadJSONL(dir, func(_ string, l audit.Line) error {
		if l.Event != nil {
			evs = append(evs, *l.Event)
		} else {
			cps = append(cps, *l.Checkpoint)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return evs, cps
}

// checkOnce fails unless events holds every stream once, in seq order
// from 1, and n events in all.
func checkOnce(t testing.TB, evs []audit.Event, n int) {
	t.Helper()
	last := map[string]int64{}
	for _, e := range evs {
		k := e.RunID + "/" + e.Gen
		if e.Seq != last[k]+1 {
			t.Fatalf("%s after seq %d", e.ID(), last[k])
		}
		last[k] = e.Seq
	}
	if len(evs) != n {
		t.Fatalf("%d events at the sink, want %d", len(evs), n)
	}
}

func newExporter(t testing.TB, src canonical.AuditSource, sink audit.Sink) (*audit.Exporter, note.Verifiers) {
	signer, verifiers := keys(t)
	return &audit.Exporter{Source: src, Sink: sink, Signer: signer, Origin: "test", RunsPerBatch: 7, EventsPerRun: 5,
		Interval: leaseInterval}, verifiers
}

func TestExportOnceInOrder(t *testing.T) {
	s := memstore.New(memstore.WithAudit(auditOpts))
	dir := t.TempDir()
	sink, err := audit.OpenJSONL(dir, audit.JSONLOptions{MaxBytes: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	x, verifiers := newExporter(t, s, sink)
	n := workload(t, s, 8, 3, 11, "a")
	if got := exportAll(t, x); got != n {
		t.Fatalf("exported %d events, want %d", got, n)
	}
	evs, _ := readExport(t, dir)
	checkOnce(t, evs, n)
	if files, _ := audit.JSONLFiles(dir); len(files) < 2 {
		t.Fatalf("%d files: the sink did not rotate", len(files))
	}
	rep, err := audit.VerifyJSONL(dir, audit.VerifyOptions{Verifiers: verifiers})
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
	if rep.Replays != 8*3*3 || rep.Events != n {
		t.Fatalf("verify: %+v", rep)
	}
	if s.AuditBacklog() != 0 {
		t.Fatalf("%d events left in the store", s.AuditBacklog())
	}
	// More work, exported by an exporter that starts afresh on the same
	// directory: the checkpoints go on from the sink's last.
	sink.Close()
	sink2, err := audit.OpenJSONL(dir, audit.JSONLOptions{MaxBytes: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer sink2.Close()
	time.Sleep(4 * leaseInterval) // the first exporter's lease passes
	x2 := &audit.Exporter{Source: s, Sink: sink2, Signer: x.Signer, Origin: "test", Interval: leaseInterval}
	m := workload(t, s, 2, 1, 4, "b")
	exportAll(t, x2)
	evs, _ = readExport(t, dir)
	checkOnce(t, evs, n+m)
	if rep, err := audit.VerifyJSONL(dir, audit.VerifyOptions{Verifiers: verifiers}); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}

// failingAcks acknowledges nothing while on: a pass that dies after its
// sink confirmed.
type failingAcks struct {
	canonical.AuditSource
	on bool
}

func (f *failingAcks) AuditAck(ctx context.Context, run string, from canonical.AuditHead, n int, to canonical.AuditHead) (bool, error) {
	if f.on {
		return false, canonical.Errorf(canonical.CodeStoreUnavailable, "acknowledgement lost")
	}
	return f.AuditSource.AuditAck(ctx, run, from, n, to)
}

// A batch the sink confirmed but the store never acknowledged is delivered
// again, and the sink holds each event once.
func TestRedeliveryIsANoOp(t *testing.T) {
	s := memstore.New(memstore.WithAudit(auditOpts))
	dir := t.TempDir()
	sink, err := audit.OpenJSONL(dir, audit.JSONLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := &failingAcks{AuditSource: s, on: true}
	x, verifiers := newExporter(t, src, sink)
	n := workload(t, s, 2, 2, 6, "r")
	if _, err := x.Pass(context.Background()); err == nil {
		t.Fatal("a pass whose acknowledgements failed reported no error")
	}
	// The process dies: a new sink on the directory, a new exporter.
	sink.Close()
	sink, err = audit.OpenJSONL(dir, audit.JSONLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	src.on = false
	time.Sleep(4 * leaseInterval) // the dead exporter's lease passes
	x2 := &audit.Exporter{Source: src, Sink: sink, Signer: x.Signer, Origin: "test", RunsPerBatch: 3, Interval: leaseInterval}
	exportAll(t, x2)
	evs, _ := readExport(t, dir)
	checkOnce(t, evs, n)
	if rep, err := audit.VerifyJSONL(dir, audit.VerifyOptions{Verifiers: verifiers}); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}

// A batch cut short (the process died while writing) is cut off when the
// directory is opened again, and delivered again whole.
func TestTornBatchIsCutOff(t *testing.T) {
	s := memstore.New(memstore.WithAudit(auditOpts))
	dir := t.TempDir()
	sink, err := audit.OpenJSONL(dir, audit.JSONLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x, verifiers := newExporter(t, s, sink)
	n := workload(t, s, 2, 1, 4, "t1")
	exportAll(t, x)
	sink.Close()
	// Events of a batch never acknowledged, the last line cut in two.
	files, _ := audit.JSONLFiles(dir)
	evs, _ := readExport(t, dir)
	f, _ := os.OpenFile(files[len(files)-1], os.O_APPEND|os.O_WRONLY, 0)
	line, _ := evs[0].MarshalCloudEvent("test")
	f.Write(append(line, '\n'))
	f.Write(line[:len(line)/2])
	f.Close()
	sink, err = audit.OpenJSONL(dir, audit.JSONLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	m := workload(t, s, 1, 1, 3, "t2")
	x.Sink = sink
	exportAll(t, x)
	evs, _ = readExport(t, dir)
	checkOnce(t, evs, n+m)
	if rep, err := audit.VerifyJSONL(dir, audit.VerifyOptions{Verifiers: verifiers}); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}

// Full backlog: Begin is refused with AUDIT_BACKLOG, completions of calls
// in flight still append theirs, and an export makes room again.
func TestBacklogRefusesThenRecovers(t *testing.T) {
	o := auditOpts
	o.MaxBacklog = 10
	s := memstore.New(memstore.WithAudit(o))
	ctx := context.Background()
	begun := 0
	var err error
	for ; begun < 20; begun++ {
		_, err = s.Begin(ctx, canonical.BeginRequest{RunID: "full", ToolCallID: fmt.Sprintf("c%d", begun), Tool: "t",
			Owner: "o", Request: []byte(`{}`), TTL: time.Hour})
		if err != nil {
			break
		}
	}
	if canonical.CodeOf(err) != canonical.CodeAuditBacklog || begun != 10 {
		t.Fatalf("begin %d: %v, want AUDIT_BACKLOG after 10", begun, err)
	}
	// In flight: completes all the same, past the bound.
	if _, err := s.Complete(ctx, canonical.Completion{RunID: "full", ToolCallID: "c0", Owner: "o",
		Status: canonical.StatusError, Code: canonical.CodeCancelled}); err != nil {
		t.Fatal(err)
	}
	if s.AuditBacklog() != 11 {
		t.Fatalf("backlog %d, want 11", s.AuditBacklog())
	}
	sink, err := audit.OpenJSONL(t.TempDir(), audit.JSONLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	x, _ := newExporter(t, s, sink)
	exportAll(t, x)
	if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: "full", ToolCallID: "again", Tool: "t", Owner: "o",
		Request: []byte(`{}`), TTL: time.Hour}); err != nil {
		t.Fatalf("after the export: %v", err)
	}
}

// A second exporter of the same store waits while the first holds the
// lease.
func TestOneExporterAtATime(t *testing.T) {
	s := memstore.New(memstore.WithAudit(auditOpts))
	workload(t, s, 1, 1, 2, "l")
	var reps []audit.PassReport
	for i := range 2 {
		sink, err := audit.OpenJSONL(t.TempDir(), audit.JSONLOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer sink.Close()
		x, _ := newExporter(t, s, sink)
		x.Interval = time.Minute
		rep, err := x.Pass(context.Background())
		if err != nil {
			t.Fatal(i, err)
		}
		reps = append(reps, rep)
	}
	if !reps[0].Leased || reps[1].Leased || reps[1].Exported != 0 {
		t.Fatalf("passes: %+v", reps)
	}
}

// Tampering: each is detected, and names where.
func TestVerifyDetectsTampering(t *testing.T) {
	s := memstore.New(memstore.WithAudit(auditOpts))
	dir := t.TempDir()
	sink, err := audit.OpenJSONL(dir, audit.JSONLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x, verifiers := newExporter(t, s, sink)
	workload(t, s, 2, 2, 6, "v")
	exportAll(t, x)
	sink.Close()
	files, _ := audit.JSONLFiles(dir)
	orig, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(orig), "\n")
	lines = lines[:len(lines)-1] // the empty string after the last newline
	eventLines := []int{}
	for i, l := range lines {
		if !strings.Contains(l, audit.CheckpointType) {
			eventLines = append(eventLines, i)
		}
	}
	// The second and third events of one stream, adjacent in the file.
	pair := -1
	for j := 0; j+1 < len(eventLines); j++ {
		a, b := eventLines[j], eventLines[j+1]
		if b == a+1 && sameStream(t, lines[a], lines[b]) {
			pair = a
			break
		}
	}
	if pair < 0 {
		t.Fatal("no two adjacent events of one stream")
	}
	mid := eventLines[len(eventLines)/2]
	cases := map[string]struct {
		edit func() string
		want string
	}{
		"untouched": {func() string { return string(orig) }, ""},
		"flipped byte": {func() string {
			l := lines[mid]
			i := strings.Index(l, `"raw_size":`)
			if i < 0 {
				i = strings.Index(l, `"request_size":`)
			}
			j := strings.IndexAny(l[i:], "0123456789") + i
			b := []byte(l)
			b[j] ^= 1 // a digit becomes another digit
			return join(lines[:mid], string(b), lines[mid+1:])
		}, "the event was changed"},
		"dropped event": {func() string { return join(lines[:mid], "", lines[mid+1:]) }, "missing"},
		"swapped pair": {func() string {
			return join(lines[:pair], lines[pair+1]+lines[pair], lines[pair+2:])
		}, "out of order"},
		"truncated tail": {func() string { return join(lines[:len(lines)-3], "", nil) }, "follow the last checkpoint"},
		"cut line":       {func() string { return string(orig[:len(orig)-40]) }, "audit"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit-000001.jsonl")
			if err := os.WriteFile(path, []byte(c.edit()), 0o600); err != nil {
				t.Fatal(err)
			}
			rep, err := audit.VerifyJSONL(path, audit.VerifyOptions{Verifiers: verifiers})
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if !rep.OK() {
					t.Fatalf("the untouched export fails: %v", rep.Problems)
				}
				return
			}
			if rep.OK() {
				t.Fatalf("%s not detected", name)
			}
			if !strings.Contains(strings.Join(rep.Problems, "\n"), c.want) {
				t.Fatalf("%s: problems %q, want one saying %q", name, rep.Problems, c.want)
			}
		})
	}
	// A tail cut at a checkpoint, whole batches gone: told by the latest
	// checkpoint kept apart.
	_, cps := readExport(t, dir)
	latest := cps[len(cps)-1]
	last := 0
	for i, l := range lines[:len(lines)-1] {
		if strings.Contains(l, audit.CheckpointType) {
			last = i
		}
	}
	path := filepath.Join(t.TempDir(), "cut.jsonl")
	os.WriteFile(path, []byte(join(lines[:last+1], "", nil)), 0o600)
	rep, _ := audit.VerifyJSONL(path, audit.VerifyOptions{Verifiers: verifiers})
	if !rep.OK() {
		t.Fatalf("a prefix ending at a checkpoint fails alone: %v", rep.Problems)
	}
	rep, _ = audit.VerifyJSONL(path, audit.VerifyOptions{Verifiers: verifiers, Latest: &latest})
	if rep.OK() {
		t.Fatal("a tail cut at a checkpoint is not told by the latest checkpoint")
	}
	// A checkpoint signed by another key.
	_, other := keys(t)
	rep, _ = audit.VerifyJSONL(dir, audit.VerifyOptions{Verifiers: other})
	if rep.OK() || !strings.Contains(strings.Join(rep.Problems, "\n"), "no verifiable signatures") {
		t.Fatalf("checkpoints of another key: %v", rep.Problems)
	}
}

func sameStream(t *testing.T, a, b string) bool {
	la, err1 := audit.ParseLine([]byte(strings.TrimSuffix(a, "\n")))
	lb, err2 := audit.ParseLine([]byte(strings.TrimSuffix(b, "\n")))
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return la.Event.RunID == lb.Event.RunID && la.Event.Gen == lb.Event.Gen
}

func join(a []string, mid string, b []string) string {
	return strings.Join(a, "") + mid + strings.Join(b, "")
}

// refusedLast lists the runs whose acknowledgement was refused after
// every other pending run: the order of AuditRuns is not promised, and
// this is the worst one for a sink that remembers only its last files.
type refusedLast struct {
	*failingAcks
	refused map[string]bool
}

func (r refusedLast) AuditAck(ctx context.Context, run string, from canonical.AuditHead, n int, to canonical.AuditHead) (bool, error) {
	ok, err := r.failingAcks.AuditAck(ctx, run, from, n, to)
	if err != nil {
		r.refused[run] = true
	}
	return ok, err
}

func (r refusedLast) AuditRuns(ctx context.Context, batch int, visit func([]string) error) error {
	var all []string
	if err := r.failingAcks.AuditRuns(ctx, 1<<20, func(runs []string) error {
		all = append(all, runs...)
		return nil
	}); err != nil {
		return err
	}
	slices.SortStableFunc(all, func(a, b string) int {
		switch {
		case r.refused[a] == r.refused[b]:
			return strings.Compare(a, b)
		case r.refused[a]:
			return 1
		}
		return -1
	})
	for len(all) > 0 {
		n := min(batch, len(all))
		if err := visit(all[:n]); err != nil {
			return err
		}
		all = all[n:]
	}
	return nil
}

// A batch written but not acknowledged is settled by the next pass before
// the sink forgets it, whichever order the runs are listed in and however
// many files the rest of the backlog fills: in the same exporter after a
// refused acknowledgement, and in a new one after the process died.
func TestUnacknowledgedBatchIsSettledFirst(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			s := memstore.New(memstore.WithAudit(auditOpts))
			dir := t.TempDir()
			opts := audit.JSONLOptions{MaxBytes: 1} // a new file for every batch
			sink, err := audit.OpenJSONL(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			src := &failingAcks{AuditSource: s}
			src2 := refusedLast{failingAcks: src, refused: map[string]bool{}}
			x, verifiers := newExporter(t, src2, sink)
			x.RunsPerBatch = 1
			n := workload(t, s, 3, 2, 4, "u1")
			src.on = true
			if _, err := x.Pass(context.Background()); err == nil {
				t.Fatal("a pass whose acknowledgements failed reported no error")
			}
			src.on = false
			n += workload(t, s, 3, 2, 4, "u2") // more runs listed before the unacknowledged one
			if restart {
				sink.Close()
				if sink, err = audit.OpenJSONL(dir, opts); err != nil {
					t.Fatal(err)
				}
				time.Sleep(4 * leaseInterval) // the dead exporter's lease passes
				x = &audit.Exporter{Source: src2, Sink: sink, Signer: x.Signer, Origin: "test",
					RunsPerBatch: 1, Interval: leaseInterval}
			}
			defer sink.Close()
			exportAll(t, x)
			evs, _ := readExport(t, dir)
			checkOnce(t, evs, n)
			if rep, err := audit.VerifyJSONL(dir, audit.VerifyOptions{Verifiers: verifiers}); err != nil || !rep.OK() {
				t.Fatalf("verify: %v %v", err, rep.Problems)
			}
		})
	}
}

// continuedCall makes, on s, a call that asks for input, is continued with
// input and completes, and returns the token and the input.
func continuedCall(t *testing.T, st store, run string) (token string, input []byte) {
	t.Helper()
	ctx := context.Background()
	s, ok := st.(interface {
		canonical.Store
		canonical.Continuer
	})
	if !ok {
		t.Fatalf("%T keeps no call open", st)
	}
	owner := canonical.NewOwner()
	req := canonical.BeginRequest{RunID: run, ToolCallID: "call_1", Tool: "kb_search", Owner: owner, Principal: "alice",
		Request: []byte(`{"q":"x"}`), TTL: time.Hour}
	if _, err := s.Begin(ctx, req); err != nil {
		t.Fatal(err)
	}
	token, next := canonical.NewOwner(), canonical.NewOwner()
	if _, err := s.AwaitInput(ctx, canonical.AwaitInput{RunID: run, ToolCallID: "call_1", Owner: owner, Token: token,
		State: []byte("page 2"), Wait: time.Minute}); err != nil {
		t.Fatal(err)
	}
	input = []byte(`{"confirm":{"action":"accept"}}`)
	if _, err := s.ContinueCall(ctx, canonical.ContinueCall{RunID: run, ToolCallID: "call_1", Owner: next, Principal: "alice",
		RequestDigest: canonical.RequestDigest(req.Request), Token: token, Lease: time.Minute, Input: input}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: "call_1", Owner: next,
		Status: canonical.StatusReady, Evidence: canonical.EvidenceFound, Raw: []byte(`{"hits":[2]}`), Result: []byte(`{"ok":1}`)}); err != nil {
		t.Fatal(err)
	}
	return token, input
}

// A continued call's events are exported with their fields, verify, and
// a continue event dropped or changed is told.
func TestContinuedCallExportsAndVerifies(t *testing.T) {
	for name, open := range stores(t, auditOpts) {
		t.Run(name, func(t *testing.T) { exportContinued(t, open(t)) })
	}
}

func exportContinued(t *testing.T, s store) {
	dir := t.TempDir()
	sink, err := audit.OpenJSONL(dir, audit.JSONLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x, verifiers := newExporter(t, s, sink)
	token, input := continuedCall(t, s, "run-continued")
	if n := exportAll(t, x); n != 4 {
		t.Fatalf("%d events exported, want 4", n)
	}
	sink.Close()
	evs, _ := readExport(t, dir)
	want := []canonical.AuditType{canonical.AuditBegin, canonical.AuditAwaitInput, canonical.AuditContinue, canonical.AuditComplete}
	if len(evs) != len(want) {
		t.Fatalf("%d events at the sink, want %d", len(evs), len(want))
	}
	for i, e := range evs {
		if e.Type != want[i] || e.Seq != int64(i+1) {
			t.Fatalf("event %d: %s seq %d, want %s seq %d", i, e.Type, e.Seq, want[i], i+1)
		}
	}
	aw, co := evs[1], evs[2]
	if aw.TokenDigest != auditOpts.Digest([]byte(token)) || aw.WaitUntil.Sub(aw.Time) != time.Minute || aw.KeyID != "k1" {
		t.Fatalf("await_input at the sink: %+v", aw)
	}
	if co.Principal != canonical.PrincipalTag("alice") || co.InputDigest != auditOpts.Digest(input) ||
		co.InputSize != int64(len(input)) || co.KeyID != "k1" {
		t.Fatalf("continue at the sink: %+v", co)
	}
	rep, err := audit.VerifyJSONL(dir, audit.VerifyOptions{Verifiers: verifiers})
	if err != nil || !rep.OK() || rep.Events != 4 {
		t.Fatalf("the export of a continued call: %+v %v", rep, err)
	}

	files, _ := audit.JSONLFiles(dir)
	orig, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(orig), token) || strings.Contains(string(orig), "accept") {
		t.Fatal("the export holds the token or the input")
	}
	lines := strings.SplitAfter(string(orig), "\n")
	lines = lines[:len(lines)-1]
	find := func(typ canonical.AuditType) int {
		for i, l := range lines {
			if strings.Contains(l, `"type":"io.github.toolcanon.audit.`+string(typ)+`"`) {
				return i
			}
		}
		t.Fatalf("no %s line", typ)
		return -1
	}
	b, w, k := find(canonical.AuditBegin), find(canonical.AuditAwaitInput), find(canonical.AuditContinue)
	edit := func(i int, from, to string) string {
		if !strings.Contains(lines[i], from) {
			t.Fatalf("line %d holds no %q", i, from)
		}
		return join(lines[:i], strings.Replace(lines[i], from, to, 1), lines[i+1:])
	}
	size := fmt.Sprintf(`"input_size":%d`, len(input))
	for name, c := range map[string]struct{ text, want string }{
		"continue dropped":          {join(lines[:k], "", lines[k+1:]), "missing"},
		"continue's input changed":  {edit(k, size, fmt.Sprintf(`"input_size":%d`, len(input)+1)), "the event was changed"},
		"continue's input unkeyed":  {edit(k, co.InputDigest, strings.Repeat("0", 64)), "the event was changed"},
		"continue's principal lent": {edit(k, co.Principal, canonical.PrincipalTag("mallory")), "the event was changed"},
		"await's wait changed":      {edit(w, fmt.Sprint(aw.WaitUntil.UnixMilli()), fmt.Sprint(aw.WaitUntil.UnixMilli()+1)), "the event was changed"},
		"await's token dropped":     {edit(w, `"token_hmac":"`+aw.TokenDigest+`",`, ""), "every member of its type"},
		"a begin given an input":    {edit(b, `"span_id":""`, `"span_id":"","input_hmac":"","input_size":0`), "every member of its type"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit-000001.jsonl")
			if err := os.WriteFile(path, []byte(c.text), 0o600); err != nil {
				t.Fatal(err)
			}
			rep, err := audit.VerifyJSONL(path, audit.VerifyOptions{Verifiers: verifiers})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || !strings.Contains(strings.Join(rep.Problems, "\n"), c.want) {
				t.Fatalf("problems %q, want one saying %q", rep.Problems, c.want)
			}
		})
	}
}

// The events of the types before continuations hash and encode as they
// did: an export written before them still verifies.
func TestEarlierTypesHashAsBefore(t *testing.T) {
	e := audit.Event{AuditEvent: canonical.AuditEvent{RunID: "run-1", Gen: "AAECAwQFBgc", Seq: 1,
		Time: time.UnixMilli(1796321576928).UTC(), Type: canonical.AuditBegin, ToolCallID: "toolu_01", Tool: "kb_search",
		ToolVersion: "kb.search@1.0.0", Principal: canonical.PrincipalTag("alice"), KeyID: "k1",
		RequestDigest: auditOpts.Digest([]byte(`{"q":"x"}`)), RequestSize: 9}}
	if err := e.Chain(audit.Genesis); err != nil {
		t.Fatal(err)
	}
	// The hash of this event as the first release of the chain made it.
	if want := "30d2d8b38ef19357413780c934ea02b4ad0c46da26d1277e26319a44269779d8"; e.Hash != want {
		t.Fatalf("hash %s, want %s", e.Hash, want)
	}
	b, err := e.MarshalCloudEvent("test")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"token_hmac", "wait_until_ms", "input_hmac", "input_size"} {
		if strings.Contains(string(b), m) {
			t.Fatalf("a begin event has %s: %s", m, b)
		}
	}
}

// The events of a continued call keep the fields of their types through
// the JSON form, and their hash covers them.
func TestContinuationEventsRoundTrip(t *testing.T) {
	base := canonical.AuditEvent{RunID: "run-1", Gen: "AAECAwQFBgc", Time: time.UnixMilli(1796321576928).UTC(),
		ToolCallID: "toolu_01", KeyID: "k1"}
	aw, co := base, base
	aw.Seq, aw.Type, aw.TokenDigest, aw.WaitUntil = 2, canonical.AuditAwaitInput, auditOpts.Digest([]byte("token")),
		base.Time.Add(time.Minute)
	co.Seq, co.Type, co.Principal = 3, canonical.AuditContinue, canonical.PrincipalTag("alice")
	co.InputDigest, co.InputSize = auditOpts.Digest([]byte(`{"a":1}`)), 7
	prev := strings.Repeat("ab", 32)
	for _, e := range []canonical.AuditEvent{aw, co} {
		ev := audit.Event{AuditEvent: e}
		if err := ev.Chain(prev); err != nil {
			t.Fatal(err)
		}
		b, err := ev.MarshalCloudEvent("test")
		if err != nil {
			t.Fatal(err)
		}
		l, err := audit.ParseLine(b)
		if err != nil || l.Event == nil || *l.Event != ev {
			t.Fatalf("%s: %v\n got %+v\nwant %+v", e.Type, err, l.Event, ev)
		}
		// Each field of the continuation is in the hash.
		for _, change := range []func(*audit.Event){
			func(x *audit.Event) { x.TokenDigest = strings.Repeat("0", 64) },
			func(x *audit.Event) { x.WaitUntil = x.WaitUntil.Add(time.Millisecond) },
			func(x *audit.Event) { x.InputDigest = strings.Repeat("1", 64) },
			func(x *audit.Event) { x.InputSize++ },
		} {
			x := ev
			change(&x)
			if h, _ := x.ChainHash(); h == ev.Hash {
				t.Fatalf("%s: a changed field hashes the same", e.Type)
			}
		}
	}
}
