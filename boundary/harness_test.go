package boundary_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
	"github.com/toolcanon/toolcanon/registry"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// factory opens a store for a test. Every case runs once per factory, on
// memstore and on redisstore over a real redis-server.
type factory struct {
	name string
	open func(tb testing.TB) canonical.Store
	// addr is the Redis the store talks to ("" for memstore), so that tests
	// can look at the server without trusting the store.
	addr func(tb testing.TB) string
}

var (
	sharedOnce  sync.Once
	sharedStore *redisstore.Store
	sharedErr   error
)

// sharedRedis is one client for all tests of the package; tests keep apart
// by their own run ids.
func sharedRedis(tb testing.TB) *redisstore.Store {
	addr := redistest.Addr(tb)
	sharedOnce.Do(func() { sharedStore, sharedErr = redisstore.New(redisstore.Options{Addrs: []string{addr}}) })
	if sharedErr != nil {
		tb.Fatal(sharedErr)
	}
	return sharedStore
}

var factories = []factory{
	{
		name: "memstore",
		open: func(testing.TB) canonical.Store { return memstore.New() },
		addr: func(testing.TB) string { return "" },
	},
	{
		name: "redisstore",
		open: func(tb testing.TB) canonical.Store { return sharedRedis(tb) },
		addr: redistest.Addr,
	},
}

// forEachStore runs f once per factory, in parallel subtests.
func forEachStore(t *testing.T, f func(t *testing.T, fx *fixture)) {
	t.Helper()
	t.Parallel()
	for _, fac := range factories {
		t.Run(fac.name, func(t *testing.T) {
			t.Parallel()
			f(t, newFixture(t, fac))
		})
	}
}

// Registry used by every test. Timeouts are whole seconds (the registry's
// rule); short timeouts come from the run's deadline.
var inputSchema = []byte(`{"type":"object","additionalProperties":false,
	"properties":{"query":{"type":"string","minLength":1,"maxLength":256},"limit":{"type":"integer","minimum":1,"maximum":50}},
	"required":["query"]}`)

func def(name string, effect registry.Effect, timeout time.Duration) registry.Definition {
	return registry.Definition{
		Name: name, Version: "1.0.0", Description: "test tool " + name, InputSchema: inputSchema,
		Effect: effect, Risk: registry.RiskLow, Permissions: []string{"kb.read"}, Timeout: timeout,
	}
}

func testRegistry(tb testing.TB) *registry.Registry {
	reg, err := registry.New(
		def("kb.search", registry.EffectRead, 30*time.Second),
		def("kb.write", registry.EffectWrite, 30*time.Second),
		def("kb.approve", registry.EffectRead, 30*time.Second),
		def("kb.slow", registry.EffectRead, time.Second),
	)
	if err != nil {
		tb.Fatal(err)
	}
	return reg
}

var testFence = registry.Fence{ProjectVersion: "7", RoleBindingVersion: "3"}

// leakText is what hostile dependencies put into their errors and panics:
// a key, Redis error text and a stack trace. None of it may reach an agent.
const leakText = "ERR connection refused tc:{run-x}:call:call_1 dial tcp 127.0.0.1:6379 goroutine 7 [running]:\nmain.go:42"

func testPolicy(marker string) registry.Policy {
	return registry.PolicyFunc(func(_ context.Context, _ string, p registry.Principal, perm string) (registry.Decision, error) {
		switch {
		case p.Subject == "user:mallory":
			return registry.Decision{Verdict: registry.VerdictDeny}, nil
		case p.Subject == "user:broken":
			return registry.Decision{}, errors.New("policy backend down: " + marker + " " + leakText)
		case perm == registry.CallPermissionPrefix+"kb.approve":
			return registry.Decision{Verdict: registry.VerdictRequireApproval, Fence: testFence}, nil
		}
		return registry.Decision{Verdict: registry.VerdictAllow, Fence: testFence}, nil
	})
}

// fakeTool counts its calls and does what fn says.
type fakeTool struct {
	calls atomic.Int64
	fn    func(ctx context.Context, input []byte) ([]byte, error)
}

func (f *fakeTool) Call(ctx context.Context, input []byte) ([]byte, error) {
	f.calls.Add(1)
	return f.fn(ctx, input)
}

// fakeProjector counts its calls and does what fn says.
type fakeProjector struct {
	calls atomic.Int64
	fn    func(ctx context.Context, call canonical.Call, raw []byte) (canonical.Projection, error)
}

func (f *fakeProjector) Project(ctx context.Context, call canonical.Call, raw []byte) (canonical.Projection, error) {
	f.calls.Add(1)
	return f.fn(ctx, call, raw)
}

// fixture is one test's world: a store, a run, a fake tool and projector, a
// boundary binding them, and a marker planted in everything the agent must
// never see.
type fixture struct {
	tb     testing.TB
	fac    factory
	store  canonical.Store // the store as the test sees it, never wrapped
	reg    *registry.Registry
	marker string
	tool   *fakeTool
	proj   *fakeProjector
	b      *boundary.Boundary
	run    boundary.RunContext
	ctx    context.Context
}

func newFixture(tb testing.TB, fac factory) *fixture {
	fx := &fixture{
		tb: tb, fac: fac, store: fac.open(tb), reg: testRegistry(tb),
		marker: "MARKER" + canonical.NewOwner(), tool: &fakeTool{}, proj: &fakeProjector{},
		ctx: context.Background(),
	}
	fx.tool.fn = func(context.Context, []byte) ([]byte, error) { return fx.raw(), nil }
	fx.proj.fn = fx.project
	fx.run = boundary.RunContext{
		ID:        "run-" + canonical.NewOwner(),
		Project:   "proj-1",
		Principal: registry.Principal{Subject: "user:alice", ExpiresAt: time.Now().Add(time.Hour)},
		Active:    true,
		TTL:       time.Minute,
	}
	fx.rebuild(nil)
	return fx
}

// rebuild makes the boundary again, over wrap(store) when wrap is given.
func (fx *fixture) rebuild(wrap func(canonical.Store) canonical.Store, opts ...boundary.Option) {
	fx.tb.Helper()
	s := fx.store
	if wrap != nil {
		s = wrap(s)
	}
	all := []boundary.Option{
		boundary.Bind("kb.search", "kb.search", "1.0.0", fx.tool, fx.proj),
		boundary.Bind("kb.find", "kb.search", "1.0.0", fx.tool, fx.proj),
		boundary.Bind("kb.write", "kb.write", "1.0.0", fx.tool, fx.proj),
		boundary.Bind("kb.approve", "kb.approve", "1.0.0", fx.tool, fx.proj),
		boundary.Bind("kb.slow", "kb.slow", "1.0.0", fx.tool, fx.proj),
	}
	b, err := boundary.New(s, fx.reg, testPolicy(fx.marker), append(all, opts...)...)
	if err != nil {
		fx.tb.Fatal(err)
	}
	fx.b = b
}

// raw is the fake tool's complete response: it carries the marker in places
// a projector must drop.
func (fx *fixture) raw() []byte {
	return []byte(`{"hits":[{"source":"kb","document_id":"d1","title":"Redis TTL","text":"PEXPIRE sets a TTL in milliseconds.",` +
		`"trace":"` + fx.marker + `"}],"password":"` + fx.marker + `","context_pack":"` + fx.marker + `"}`)
}

type hit struct {
	Source     string `json:"source"`
	DocumentID string `json:"document_id"`
}

// project is the fake projector's default: the ids of the hits, nothing else.
func (fx *fixture) project(_ context.Context, call canonical.Call, raw []byte) (canonical.Projection, error) {
	r := struct {
		Hits []hit `json:"hits"`
	}{Hits: []hit{}}
	if err := json.Unmarshal(raw, &r); err != nil {
		return canonical.Projection{}, err
	}
	out, _ := json.Marshal(map[string]any{"tool_call_id": call.ToolCallID, "evidence": r.Hits, "returned": len(r.Hits)})
	ev := canonical.EvidenceFound
	if len(r.Hits) == 0 {
		ev = canonical.NoEvidence
	}
	return canonical.Projection{Evidence: ev, Result: out}, nil
}

func (fx *fixture) envelope(id, tool, input string) boundary.Envelope {
	return boundary.Envelope{ToolCallID: id, RunID: fx.run.ID, Tool: tool, Input: []byte(input)}
}

const okInput = `{"query":"redis ttl","limit":5}`

// invoke calls kb.search with okInput.
func (fx *fixture) invoke(id string) boundary.Result {
	return fx.b.Invoke(fx.ctx, fx.run, fx.envelope(id, "kb.search", okInput))
}

// want is what a record must hold, field by field.
type want struct {
	status   canonical.Status
	evidence canonical.Evidence
	code     canonical.Code
	raw      []byte // nil: no raw stored
	result   []byte // nil: no result stored
	tool     string // agent-facing name; "" means kb.search
}

// checkRecord reads the call's record and checks every field, then returns it.
func (fx *fixture) checkRecord(t testing.TB, id string, w want) canonical.Record {
	t.Helper()
	rec, err := fx.store.Get(context.Background(), fx.run.ID, id)
	if err != nil {
		t.Fatalf("record %s: %v", id, err)
	}
	tool := w.tool
	if tool == "" {
		tool = "kb.search"
	}
	if rec.RunID != fx.run.ID || rec.ToolCallID != id || rec.Tool != tool {
		t.Errorf("identity = (%q, %q, %q), want (%q, %q, %q)", rec.RunID, rec.ToolCallID, rec.Tool, fx.run.ID, id, tool)
	}
	if rec.Status != w.status || rec.Evidence != w.evidence || rec.Error != w.code {
		t.Errorf("state = (%s, %s, %q), want (%s, %s, %q)", rec.Status, rec.Evidence, rec.Error, w.status, w.evidence, w.code)
	}
	if !bytes.Equal(rec.Raw, w.raw) {
		t.Errorf("raw = %.80q (%d bytes), want %.80q (%d bytes)", rec.Raw, len(rec.Raw), w.raw, len(w.raw))
	}
	if !bytes.Equal(rec.Result, w.result) {
		t.Errorf("result = %q, want %q", rec.Result, w.result)
	}
	if canonical.ValidateOwner(rec.Owner) != nil || len(rec.Owner) != 32 {
		t.Errorf("owner = %q, want a fresh 32-hex token", rec.Owner)
	}
	if !canonical.IsJSONObject(rec.Request) || rec.RequestDigest != canonical.RequestDigest(rec.Request) {
		t.Errorf("request %q with digest %s is not a JSON object with its digest", rec.Request, rec.RequestDigest)
	}
	var req map[string]any
	_ = json.Unmarshal(rec.Request, &req)
	if req["tool_call_id"] != id || req["run_id"] != fx.run.ID || req["agent_tool"] != tool || req["version"] != "1.0.0" || req["input"] == nil {
		t.Errorf("request = %s", rec.Request)
	}
	if rec.CreatedAt.IsZero() || rec.UpdatedAt.Before(rec.CreatedAt) {
		t.Errorf("created %v, updated %v", rec.CreatedAt, rec.UpdatedAt)
	}
	if rec.TTL <= 0 || rec.TTL > fx.run.TTL {
		t.Errorf("TTL = %v, want in (0, %v]", rec.TTL, fx.run.TTL)
	}
	done, _, err := fx.store.Completed(context.Background(), fx.run.ID, canonical.MaxIndexRead)
	if err != nil {
		t.Fatal(err)
	}
	if indexed := slices.Contains(done, id); indexed != rec.Status.Terminal() {
		t.Errorf("record is %s but in completion index = %v", rec.Status, indexed)
	}
	return rec
}

// checkAbsent checks that the call left no record and no key.
func (fx *fixture) checkAbsent(t testing.TB, id string) {
	t.Helper()
	if canonical.ValidateToolCallID(id) == nil {
		_, err := fx.store.Get(context.Background(), fx.run.ID, id)
		if canonical.CodeOf(err) != canonical.CodeNotFound {
			t.Errorf("record %s: err = %v, want NOT_FOUND", id, err)
		}
	}
	if done, _, _ := fx.store.Completed(context.Background(), fx.run.ID, canonical.MaxIndexRead); slices.Contains(done, id) {
		t.Errorf("%s is in the completion index", id)
	}
	if addr := fx.fac.addr(t); addr != "" && canonical.ValidateRunID(fx.run.ID) == nil {
		keys, err := redistest.Command(addr, "KEYS", "tc:{"+fx.run.ID+"}:call:*")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range strings.Split(keys, "\n") {
			if strings.HasSuffix(k, ":call:"+id) {
				t.Errorf("key %s exists", k)
			}
		}
	}
}

// checkNothingWritten checks that the run has no state at all: no call was
// ever begun in it.
func (fx *fixture) checkNothingWritten(t testing.TB) {
	t.Helper()
	if canonical.ValidateRunID(fx.run.ID) != nil {
		return
	}
	if _, err := fx.store.Usage(context.Background(), fx.run.ID); canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Errorf("run usage: err = %v, want NOT_FOUND", err)
	}
	if addr := fx.fac.addr(t); addr != "" {
		keys, err := redistest.Command(addr, "KEYS", "tc:{"+fx.run.ID+"}:*")
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(keys) != "" {
			t.Errorf("keys written: %q", keys)
		}
	}
}

// leaks are substrings that must never reach an agent.
func (fx *fixture) leaks() []string {
	return []string{fx.marker, "tc:{", "goroutine ", ".go:", "ERR ", "connection refused", "dial tcp",
		"NOSCRIPT", "WRONGTYPE", "i/o timeout", "EOF", "rueidis", "redis:", "password", "context_pack", "panicked"}
}

// checkSafe checks that the agent-facing JSON holds nothing it must not.
func (fx *fixture) checkSafe(t testing.TB, res boundary.Result) {
	t.Helper()
	out := res.AgentJSON()
	if !json.Valid(out) {
		t.Fatalf("agent JSON is not JSON: %q", out)
	}
	for _, s := range fx.leaks() {
		if bytes.Contains(out, []byte(s)) {
			t.Errorf("agent JSON %q contains %q", out, s)
		}
	}
}

// checkError checks an ERROR result and its agent-facing object.
func (fx *fixture) checkError(t testing.TB, res boundary.Result, id string, code canonical.Code, executed bool) {
	t.Helper()
	fx.checkSafe(t, res)
	if res.Status() != canonical.StatusError || res.Code() != code || res.Evidence() != canonical.EvidenceError {
		t.Errorf("result = (%s, %s, %s), want (ERROR, %s, ERROR); err: %v", res.Status(), res.Code(), res.Evidence(), code, res.Err())
	}
	if res.Executed() != executed {
		t.Errorf("executed = %v, want %v", res.Executed(), executed)
	}
	if res.Err() == nil {
		t.Errorf("an ERROR result carries no operator cause")
	}
	var got map[string]string
	if err := json.Unmarshal(res.AgentJSON(), &got); err != nil {
		t.Fatalf("agent JSON %q: %v", res.AgentJSON(), err)
	}
	wantObj := map[string]string{"tool_call_id": id, "status": "ERROR", "error_code": string(code), "hint": boundary.Hint(code)}
	if len(got) != len(wantObj) {
		t.Errorf("agent JSON %q has keys beyond %v", res.AgentJSON(), wantObj)
	}
	for k, v := range wantObj {
		if got[k] != v {
			t.Errorf("agent JSON %s = %q, want %q", k, got[k], v)
		}
	}
}

// checkReady checks a READY result.
func (fx *fixture) checkReady(t testing.TB, res boundary.Result, ev canonical.Evidence) {
	t.Helper()
	fx.checkSafe(t, res)
	if res.Status() != canonical.StatusReady || res.Code() != "" || res.Evidence() != ev || res.Err() != nil {
		t.Errorf("result = (%s, %q, %s, %v), want (READY, \"\", %s, nil)", res.Status(), res.Code(), res.Evidence(), res.Err(), ev)
	}
}

// calls checks how many times the tool and the projector ran.
func (fx *fixture) calls(t testing.TB, tool, proj int64) {
	t.Helper()
	if got := fx.tool.calls.Load(); got != tool {
		t.Errorf("tool ran %d times, want %d", got, tool)
	}
	if got := fx.proj.calls.Load(); got != proj {
		t.Errorf("projector ran %d times, want %d", got, proj)
	}
}

// failingStore wraps a store and makes Begin or Complete fail the way a
// broken connection does: an unclassified error full of internals.
type failingStore struct {
	canonical.Store
	beginFails    atomic.Int64 // Begins still to fail; < 0 fails forever
	completeFails atomic.Int64 // Completes still to fail; < 0 fails forever
	begins        atomic.Int64
	completes     atomic.Int64
	marker        string
}

func (s *failingStore) err(op string) error {
	return errors.New(op + ": " + leakText + " " + s.marker)
}

func take(n *atomic.Int64) bool {
	for {
		v := n.Load()
		if v == 0 {
			return false
		}
		if v < 0 || n.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

func (s *failingStore) Begin(ctx context.Context, req canonical.BeginRequest) (canonical.Record, error) {
	s.begins.Add(1)
	if take(&s.beginFails) {
		return canonical.Record{}, s.err("begin")
	}
	return s.Store.Begin(ctx, req)
}

func (s *failingStore) Complete(ctx context.Context, c canonical.Completion) (canonical.Record, error) {
	s.completes.Add(1)
	if take(&s.completeFails) {
		return canonical.Record{}, s.err("complete")
	}
	return s.Store.Complete(ctx, c)
}
