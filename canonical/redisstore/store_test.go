package redisstore_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
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

// isolated gives a Reap case a store of its own on the servers at addrs:
// a fresh prefix under base, which no other test's keys match.
func isolated(addrs []string, base string, opts redisstore.Options) func(*testing.T) storetest.Harness {
	return func(t *testing.T) storetest.Harness {
		prefix := base + ":reap" + canonical.NewOwner()[:12]
		all, drop := backend(addrs, prefix)
		opts.Prefix = prefix
		var seeds []string
		if opts.Client == nil {
			seeds = addrs[:1]
		}
		return storetest.Harness{Store: newStore(t, seeds, opts), Wait: time.Sleep, RealClock: true, AllKeys: all,
			DropRunState: drop, ClosedRunRetention: opts.ClosedRunRetention}
	}
}

// audited returns the harness of a store with audit on, of a prefix of its
// own over addrs.
func audited(addrs []string, base string, opts redisstore.Options) func(*testing.T, canonical.AuditOptions) storetest.Harness {
	return func(t *testing.T, o canonical.AuditOptions) storetest.Harness {
		opts.Audit = &o
		return isolated(addrs, base+":audit", opts)(t)
	}
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
			Wait:  time.Sleep, RealClock: true, AllKeys: all, DropRunState: drop, Evict: redistest.Evicter([]string{addr}, "tc"),
			Isolated: isolated([]string{addr}, "tc", redisstore.Options{Client: rec}),
			Audited:  audited([]string{addr}, "tc", redisstore.Options{Client: rec}),
		}
	})
	reachLayoutMismatch(t, addr, newStore(t, nil, redisstore.Options{Client: rec}))
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
			Evict:    redistest.Evicter(addrs, "tcc"),
			Isolated: isolated(addrs, "tcc", redisstore.Options{ClosedRunRetention: 30 * time.Minute}),
			Audited:  audited(addrs, "tcc", redisstore.Options{ClosedRunRetention: 30 * time.Minute}),
		}
	})
}

// roundTrips counts the requests a client sends: each Do and each DoMulti
// (one pipeline) is one round trip.
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

// GetMany never sends one unbounded pipeline: ceil(ids / GetManyBatch)
// round trips, ceil(ids / GetManyPayloadBatch) when it reads payloads; the
// completion index is read a page at a time, with its length, in one.
func TestReadsAreBoundedPipelines(t *testing.T) {
	addr := redistest.Addr(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rt := &roundTrips{Client: c}
	s := newStore(t, nil, redisstore.Options{Client: rt})
	ctx := context.Background()
	run := "bounded-" + canonical.NewOwner()[:8]
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%04d", i)
	}
	for _, id := range ids[:300] {
		req := canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "kb.search", Owner: "o", Request: []byte(`{}`),
			TTL: time.Hour, Limits: canonical.Limits{MaxCallsPerRun: 1000, MaxCallsPerTool: 1000}}
		if _, err := s.Begin(ctx, req); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: id, Owner: "o", Status: canonical.StatusError,
			Code: canonical.CodeExecutionFailed}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		opts canonical.ReadOptions
		want int64
	}{
		{canonical.ReadOptions{}, (1000 + redisstore.GetManyBatch - 1) / redisstore.GetManyBatch},
		{canonical.ReadOptions{Raw: true}, (1000 + redisstore.GetManyPayloadBatch - 1) / redisstore.GetManyPayloadBatch},
	} {
		rt.n.Store(0)
		recs, err := s.GetMany(ctx, run, ids, c.opts)
		if err != nil || len(recs) != 1000 || recs[299] == nil || recs[300] != nil {
			t.Fatalf("GetMany(%+v): %d records, %v", c.opts, len(recs), err)
		}
		if got := rt.n.Load(); got != c.want {
			t.Fatalf("GetMany of 1000 ids (%+v) took %d round trips, want %d", c.opts, got, c.want)
		}
	}
	rt.n.Store(0)
	page, n, err := s.Completed(ctx, run, 10)
	if err != nil || len(page) != 10 || n != 300 || rt.n.Load() != 1 {
		t.Fatalf("Completed(10) = %d ids of %d, %v, in %d round trips", len(page), n, err, rt.n.Load())
	}
}

// Check reports every master of a cluster, and only masters.
func TestCheckReportsEveryMaster(t *testing.T) {
	addrs := redistest.ClusterAddrs(t)
	s := newStore(t, addrs[:1], redisstore.Options{Prefix: "tcc"})
	rep, err := s.Check(context.Background())
	if err != nil || len(rep.Nodes) != len(addrs) {
		t.Fatalf("report %+v, %v; want one node per master (%d)", rep, err, len(addrs))
	}
	for _, n := range rep.Nodes {
		got := map[string]redisstore.Level{}
		for _, f := range n.Findings {
			got[f.Setting] = f.Level
		}
		want := map[string]redisstore.Level{"redis_version": redisstore.LevelOK, "scripting": redisstore.LevelOK,
			"acl": redisstore.LevelOK, "maxmemory-policy": redisstore.LevelOK, "appendonly": redisstore.LevelWarn,
			"save": redisstore.LevelWarn, "connected_replicas": redisstore.LevelWarn, "durability": redisstore.LevelWarn,
			"cluster_state": redisstore.LevelOK}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: %v, want %v", n.Addr, got, want)
		}
	}
	if rep.Warnings() != 4*len(addrs) {
		t.Fatalf("%d warnings", rep.Warnings())
	}
}

// Within one run, the run's state, leases and live marker expire with the
// run's latest-expiring record, and the completion index with its
// latest-expiring completed one, through every path a begin or complete
// takes: a run's first begin, a begin that extends (the run's keys are
// then set without reading theirs), one whose record expires earlier, a
// leases key or index made anew, and keys an operator left without an
// expiry (PERSIST), which get one back.
func TestCoveringKeysFollowTheLatestRecord(t *testing.T) {
	addr := redistest.Addr(t)
	s := newStore(t, []string{addr}, redisstore.Options{})
	keys := s.Keys()
	ctx := context.Background()
	run := "follow-" + canonical.NewOwner()[:8]
	redis := func(t *testing.T, cmds ...[]string) []string {
		t.Helper()
		out, err := redistest.Pipeline(addr, cmds...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	expiry := func(t *testing.T, ks ...string) []string {
		t.Helper()
		cmds := make([][]string, len(ks))
		for i, k := range ks {
			cmds[i] = []string{"PEXPIRETIME", k}
		}
		return redis(t, cmds...)
	}
	begin := func(t *testing.T, id string, ttl time.Duration) {
		t.Helper()
		if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "kb.search", Owner: "o",
			Request: []byte(`{}`), TTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	complete := func(t *testing.T, id string) {
		t.Helper()
		if _, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: id, Owner: "o",
			Status: canonical.StatusError, Code: canonical.CodeExecutionFailed}); err != nil {
			t.Fatal(err)
		}
	}
	// covered checks that the run's keys expire with latest's record and,
	// when done is set, no earlier than done's.
	// The run's keys expire together, at most a granule (a second here)
	// after the latest record.
	covered := func(t *testing.T, step, latest, done string) {
		t.Helper()
		want := atoi(t, expiry(t, keys.Record(run, latest))[0])
		e := expiry(t, keys.Run(run), keys.Live(run), keys.Calls(run))
		if e[0] != e[1] || e[0] != e[2] || atoi(t, e[0]) < want || atoi(t, e[0]) > want+1000 {
			t.Errorf("%s: state, marker and calls expire at %v, want together within a second after %d (%s)", step, e, want, latest)
		}
		if done != "" {
			if x, w := atoi(t, e[2]), atoi(t, expiry(t, keys.Record(run, done))[0]); x < w {
				t.Errorf("%s: the calls expire at %d, before %d (%s)", step, x, w, done)
			}
		}
	}
	begin(t, "c1", time.Hour)
	covered(t, "first begin", "c1", "")
	begin(t, "c2", 2*time.Hour)
	covered(t, "a begin that extends", "c2", "")
	complete(t, "c1")
	covered(t, "a completion", "c2", "c1")
	complete(t, "c2")
	covered(t, "the last completion", "c2", "c2")
	begin(t, "c3", 3*time.Hour) // no call in flight
	covered(t, "a begin with none in flight", "c3", "c2")
	begin(t, "c4", 30*time.Minute)
	covered(t, "a begin that expires earlier", "c3", "c2")
	complete(t, "c4")
	covered(t, "a completion that expires earlier", "c3", "c2")
	redis(t, []string{"PERSIST", keys.Calls(run)}, []string{"PERSIST", keys.Live(run)})
	begin(t, "c5", 4*time.Hour)
	covered(t, "calls and marker without an expiry", "c5", "c2")
	redis(t, []string{"PERSIST", keys.Run(run)})
	begin(t, "c6", 5*time.Hour)
	covered(t, "a state without an expiry", "c6", "")
	complete(t, "c3")
	covered(t, "a completion after", "c6", "c3")
	for _, k := range []string{keys.Run(run), keys.Live(run), keys.Calls(run)} {
		if e := expiry(t, k)[0]; e == "-1" {
			t.Errorf("%s has no expiry", k)
		}
	}
}

// A key set to cover a record expires exactly when it should: the run's
// state, calls and live marker a granule after the record (after Begin),
// and after a Complete or an Abandon still with the state. The index used
// to be set from the record's PTTL and a PEXPIRE, two clock reads, and in
// about 1-6% of completions it expired 1 ms after its only record; 400
// completions and 100 abandons would have shown it (0.99^400 < 2%).
func TestCoveringKeysExpireWithTheirRecord(t *testing.T) {
	addr := redistest.Addr(t)
	s := newStore(t, []string{addr}, redisstore.Options{})
	keys := s.Keys()
	ctx := context.Background()
	expiry := func(t *testing.T, ks ...string) []string {
		t.Helper()
		cmds := make([][]string, len(ks))
		for i, k := range ks {
			cmds[i] = []string{"PEXPIRETIME", k}
		}
		out, err := redistest.Pipeline(addr, cmds...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	const completions, abandons = 400, 100
	prefix := "cover-" + canonical.NewOwner()[:8]
	for i := range completions + abandons {
		run, id := fmt.Sprintf("%s-%d", prefix, i), "c"
		req := canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "kb.search", Owner: "o", Request: []byte(`{}`),
			TTL: time.Hour + time.Duration(i)*time.Millisecond}
		if i >= completions {
			req.Lease = time.Millisecond
		}
		if _, err := s.Begin(ctx, req); err != nil {
			t.Fatal(err)
		}
		e := expiry(t, keys.Record(run, id), keys.Run(run), keys.Calls(run), keys.Live(run))
		granule := canonical.ExpiryGranule(req.TTL).Milliseconds()
		if atoi(t, e[0])+granule != atoi(t, e[1]) || e[1] != e[2] || e[1] != e[3] {
			t.Fatalf("after Begin %d: record, state, calls, marker expire at %v; want the three a granule (%dms) after the record", i, e, granule)
		}
	}
	time.Sleep(5 * time.Millisecond) // the abandoned calls' leases pass
	past := 0
	for i := range completions + abandons {
		run, id := fmt.Sprintf("%s-%d", prefix, i), "c"
		var err error
		if i < completions {
			_, err = s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: id, Owner: "o",
				Status: canonical.StatusError, Code: canonical.CodeExecutionFailed})
		} else {
			_, err = s.Abandon(ctx, run, id)
		}
		if err != nil {
			t.Fatal(err)
		}
		// The calls expire with the run's keys.
		e := expiry(t, keys.Record(run, id), keys.Calls(run), keys.Run(run))
		if e[1] != e[2] {
			past++
			t.Errorf("call %d: record, index, state expire at %v", i, e)
		}
	}
	t.Logf("%d of %d indexes expire other than they should", past, completions+abandons)
}

// reachLayoutMismatch plants a run state and a record of layout 1 (no
// layout field; a header whose first byte is 1) and has every script meet
// them: each refuses with LAYOUT_MISMATCH, the suite's one outcome that
// only another release's keys reach. test/upgrade_test.go runs the
// previous releases' own scripts.
func reachLayoutMismatch(t *testing.T, addr string, s *redisstore.Store) {
	t.Helper()
	ctx := context.Background()
	run := "layout1-" + canonical.NewOwner()[:8]
	keys := s.Keys()
	rec, err := s.Begin(ctx, canonical.BeginRequest{RunID: run + "-new", ToolCallID: "c1", Tool: "t", Owner: "o",
		Request: []byte(`{}`), TTL: time.Minute})
	if err != nil || rec.Status != canonical.StatusProjecting {
		t.Fatal(err)
	}
	header, err := redistest.Command(addr, "HGET", keys.Record(run+"-new", "c1"), "h")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{
		{"HSET", keys.Run(run), "state", "open", "calls", "1", "bytes", "2", "lim_calls_run", "256"},
		{"PEXPIRE", keys.Run(run), "60000"},
		{"HSET", keys.Record(run, "c1"), "h", "1" + header[1:]},
		{"PEXPIRE", keys.Record(run, "c1"), "60000"},
	} {
		if _, err := redistest.Command(addr, cmd...); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: "c2", Tool: "t", Owner: "o", Request: []byte(`{}`), TTL: time.Minute})
	wantLayout(t, "begin", err)
	_, err = s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: "c1", Owner: "o", Status: canonical.StatusError,
		Code: canonical.CodeExecutionFailed})
	wantLayout(t, "complete", err)
	_, err = s.Abandon(ctx, run, "c1")
	wantLayout(t, "abandon", err)
	wantLayout(t, "close", s.CloseRun(ctx, run, ""))
	_, err = s.ObserveProgress(ctx, run, "", true, 3)
	wantLayout(t, "progress", err)
	_, err = s.Get(ctx, run, "c1")
	wantLayout(t, "get", err)
	_, err = s.Usage(ctx, run)
	wantLayout(t, "usage", err)
	wantLayout(t, "check", s.CheckPrincipal(ctx, run, ""))
	_, err = s.AwaitInput(ctx, canonical.AwaitInput{RunID: run, ToolCallID: "c1", Owner: "o", Token: "t", Wait: time.Minute})
	wantLayout(t, "await input", err)
	_, err = s.ContinueCall(ctx, canonical.ContinueCall{RunID: run, ToolCallID: "c1", Owner: "o", Token: "t",
		RequestDigest: canonical.RequestDigest([]byte(`{}`)), Lease: time.Minute})
	wantLayout(t, "continue", err)
}

func wantLayout(t *testing.T, op string, err error) {
	t.Helper()
	if canonical.CodeOf(err) != canonical.CodeLayoutMismatch {
		t.Errorf("%s on layout 1: %v, want LAYOUT_MISMATCH", op, err)
	}
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return v
}
