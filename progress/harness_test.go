package progress_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// progressStore is what the stores under test are: a canonical.Store that
// also counts progress reports.
type progressStore interface {
	canonical.Store
	canonical.ProgressObserver
}

// harness is one store under test and the ways a test may reach behind it.
type harness struct {
	store progressStore
	// wait lets d pass for the store's records: a fake clock advances, a
	// real one sleeps.
	wait func(d time.Duration)
	// shortTTL is a record TTL that wait(2*shortTTL) outlives.
	shortTTL time.Duration
	// injectIndex appends entry to the run's completion index without going
	// through the Store: no Store method can write an arbitrary entry.
	injectIndex func(t *testing.T, run, entry string)
	// plantForeign makes the record stored under run/id a copy of
	// fromRun/id and indexes id in run: no Store method can file one run's
	// record under another run's key.
	plantForeign func(t *testing.T, run, fromRun, id string)
	// deleteRecord removes a record without going through the Store, or is
	// nil when the backend has no such operation.
	deleteRecord func(t *testing.T, run, id string)
}

type factory func(t *testing.T) *harness

// eachStore runs fn on memstore and on redisstore against a real
// redis-server.
func eachStore(t *testing.T, fn func(t *testing.T, h *harness)) {
	t.Run("memstore", func(t *testing.T) { fn(t, newMemHarness(t)) })
	t.Run("redis", func(t *testing.T) { fn(t, newRedisHarness(t)) })
}

// fakeClock is memstore's clock in tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newMemHarness(t *testing.T) *harness {
	clock := &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
	inner := memstore.New(memstore.WithClock(clock.Now))
	fs := &faultStore{progressStore: inner, extra: map[string][]string{}, foreign: map[[2]string]string{}}
	return &harness{
		store: fs, wait: clock.Advance, shortTTL: time.Second,
		injectIndex: func(t *testing.T, run, entry string) { fs.inject(run, entry) },
		plantForeign: func(t *testing.T, run, fromRun, id string) {
			fs.plant(run, fromRun, id)
			fs.inject(run, id)
		},
	}
}

func newRedisHarness(t testing.TB) *harness {
	addr := redistest.Addr(t)
	s, err := redisstore.New(redisstore.Options{Addrs: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	keys, err := canonical.NewKeys("tc")
	if err != nil {
		t.Fatal(err)
	}
	cmd := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := redistest.Command(addr, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out
	}
	// after scores an entry written behind the store's back after every
	// completion, as the next one would be (completions are scored in µs).
	var injected atomic.Int64
	after := func() string { return strconv.FormatInt(8e15+injected.Add(1), 10) }
	return &harness{
		// A second, not less: the short record is begun and completed before
		// it may expire, and on a loaded machine that can take hundreds of ms.
		store: s, wait: time.Sleep, shortTTL: time.Second,
		injectIndex: func(t *testing.T, run, entry string) { cmd(t, "ZADD", keys.Calls(run), after(), entry) },
		plantForeign: func(t *testing.T, run, fromRun, id string) {
			if got := cmd(t, "COPY", keys.Record(fromRun, id), keys.Record(run, id)); got != "1" {
				t.Fatalf("COPY of %s/%s: %q", fromRun, id, got)
			}
			cmd(t, "ZADD", keys.Calls(run), after(), id)
		},
		deleteRecord: func(t *testing.T, run, id string) { cmd(t, "DEL", keys.Record(run, id)) },
	}
}

// faultStore wraps memstore with what only a foreign writer could do to a
// shared store: extra index entries, and another run's record read under
// this run's key. memstore itself can produce neither.
type faultStore struct {
	progressStore
	mu      sync.Mutex
	extra   map[string][]string  // run -> entries appended after the real index
	foreign map[[2]string]string // (run, id) -> run whose record is returned instead
}

func (f *faultStore) inject(run, entry string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.extra[run] = append(f.extra[run], entry)
}

func (f *faultStore) plant(run, fromRun, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.foreign[[2]string{run, id}] = fromRun
}

func (f *faultStore) Completed(ctx context.Context, runID string, limit int) ([]string, int, error) {
	ids, n, err := f.progressStore.Completed(ctx, runID, limit)
	if err != nil {
		return nil, 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	extra := f.extra[runID]
	ids = append(ids, extra[:max(0, min(len(extra), limit-len(ids)))]...)
	return ids, n + len(extra), nil
}

func (f *faultStore) GetMany(ctx context.Context, runID string, ids []string, opts canonical.ReadOptions) ([]*canonical.Record, error) {
	recs, err := f.progressStore.GetMany(ctx, runID, ids, opts)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, id := range ids {
		if from, ok := f.foreign[[2]string{runID, id}]; ok {
			other, err := f.progressStore.GetMany(ctx, from, []string{id}, opts)
			if err != nil {
				return nil, err
			}
			recs[i] = other[0]
		}
	}
	return recs, nil
}

// countingStore counts the Store calls that reach the backend: on Redis each
// is one round trip (GetMany pipelines all its commands into one).
type countingStore struct {
	canonical.Store
	calls     atomic.Int64
	mu        sync.Mutex
	getMany   [][]string              // ids of each GetMany
	readOpts  []canonical.ReadOptions // options of each GetMany
	indexRead [][2]int                // max asked and ids returned, per Completed
	completed atomic.Int64
}

func (c *countingStore) Begin(ctx context.Context, req canonical.BeginRequest) (canonical.Record, error) {
	c.calls.Add(1)
	return c.Store.Begin(ctx, req)
}

func (c *countingStore) Complete(ctx context.Context, cm canonical.Completion) (canonical.Record, error) {
	c.calls.Add(1)
	return c.Store.Complete(ctx, cm)
}

func (c *countingStore) Get(ctx context.Context, runID, id string) (canonical.Record, error) {
	c.calls.Add(1)
	return c.Store.Get(ctx, runID, id)
}

func (c *countingStore) GetMany(ctx context.Context, runID string, ids []string, opts canonical.ReadOptions) ([]*canonical.Record, error) {
	c.calls.Add(1)
	c.mu.Lock()
	c.getMany = append(c.getMany, append([]string{}, ids...))
	c.readOpts = append(c.readOpts, opts)
	c.mu.Unlock()
	return c.Store.GetMany(ctx, runID, ids, opts)
}

func (c *countingStore) Completed(ctx context.Context, runID string, limit int) ([]string, int, error) {
	c.calls.Add(1)
	c.completed.Add(1)
	ids, n, err := c.Store.Completed(ctx, runID, limit)
	c.mu.Lock()
	c.indexRead = append(c.indexRead, [2]int{limit, len(ids)})
	c.mu.Unlock()
	return ids, n, err
}

func (c *countingStore) CloseRun(ctx context.Context, runID, principal string) error {
	c.calls.Add(1)
	return c.Store.CloseRun(ctx, runID, principal)
}

func (c *countingStore) CheckPrincipal(ctx context.Context, runID, principal string) error {
	c.calls.Add(1)
	return c.Store.CheckPrincipal(ctx, runID, principal)
}

func (c *countingStore) Usage(ctx context.Context, runID string) (canonical.RunUsage, error) {
	c.calls.Add(1)
	return c.Store.Usage(ctx, runID)
}

func (c *countingStore) ObserveProgress(ctx context.Context, runID, principal string, valid bool, threshold int64) (canonical.ProtocolState, error) {
	c.calls.Add(1)
	return c.Store.(canonical.ProgressObserver).ObserveProgress(ctx, runID, principal, valid, threshold)
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// newRunID returns a run id unique to this test, so tests share one Redis
// without flushing it.
func newRunID(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := unsafeChars.ReplaceAllString(t.Name(), "_")
	if len(name) > 90 {
		name = name[len(name)-90:]
	}
	return "r" + hex.EncodeToString(b[:]) + "-" + name
}

func ctx() context.Context { return context.Background() }

const longTTL = time.Hour

func begin(t testing.TB, s canonical.Store, run, id string, ttl time.Duration) {
	t.Helper()
	_, err := s.Begin(ctx(), canonical.BeginRequest{
		RunID: run, ToolCallID: id, Tool: "kb.search", Owner: canonical.NewOwner(),
		Request: []byte(`{"query":"q-` + id + `"}`), TTL: ttl,
		Limits: canonical.Limits{MaxCallsPerRun: 2000, MaxCallsPerTool: 2000},
	})
	if err != nil {
		t.Fatalf("Begin(%s): %v", id, err)
	}
}

// ownerOf finds the owner a record was begun with, so a test can complete it.
func ownerOf(t testing.TB, s canonical.Store, run, id string) string {
	t.Helper()
	rec, err := s.Get(ctx(), run, id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return rec.Owner
}

func complete(t testing.TB, s canonical.Store, run, id string, ev canonical.Evidence, result string) {
	t.Helper()
	_, err := s.Complete(ctx(), canonical.Completion{
		RunID: run, ToolCallID: id, Owner: ownerOf(t, s, run, id), Status: canonical.StatusReady, Evidence: ev,
		Raw: []byte(`{"secret_raw":"RAW-` + id + `"}`), Result: []byte(result),
	})
	if err != nil {
		t.Fatalf("Complete(%s): %v", id, err)
	}
}

func fail(t testing.TB, s canonical.Store, run, id string) {
	t.Helper()
	_, err := s.Complete(ctx(), canonical.Completion{
		RunID: run, ToolCallID: id, Owner: ownerOf(t, s, run, id), Status: canonical.StatusError,
		Code: canonical.CodeExecutionFailed,
	})
	if err != nil {
		t.Fatalf("Complete(%s, ERROR): %v", id, err)
	}
}

// readyCall begins and completes one READY call.
func readyCall(t testing.TB, s canonical.Store, run, id string, ev canonical.Evidence) {
	t.Helper()
	begin(t, s, run, id, longTTL)
	complete(t, s, run, id, ev, `{"evidence":["`+id+`"]}`)
}
