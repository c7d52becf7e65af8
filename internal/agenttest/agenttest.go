// Package agenttest is what the adapters' end-to-end tests share: three
// read tools behind a real registry and policy (one that searches, one that
// fails, one whose result is over the agent limit), a run whose budget the
// test sets, and the stores every case runs on (memstore and redisstore
// over a real server of internal/redistest). The scripted models stay with
// each adapter, since each speaks its provider's wire format.
package agenttest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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

// The agent-facing names of the tools.
const (
	Search = "search" // kb.search: hits for a query
	Broken = "broken" // kb.broken: always fails
	Big    = "big"    // kb.big: a result over MaxResultBytes
)

// MaxResultBytes is the agent limit of a Run.
const MaxResultBytes = 1024

// Secret is in every raw response and must never reach a model.
const Secret = "sk-live-agenttest"

var schema = []byte(`{"type":"object","additionalProperties":false,
	"properties":{"query":{"type":"string","minLength":1,"maxLength":64}},"required":["query"]}`)

func def(name string) registry.Definition {
	return registry.Definition{
		Name: name, Version: "1.0.0", Description: "test tool " + name, InputSchema: schema,
		Effect: registry.EffectRead, Risk: registry.RiskLow, Timeout: 10 * time.Second,
	}
}

// Kit is one test's tools, counted, with a gate that holds calls until a
// number of them run at once.
type Kit struct {
	Registry *registry.Registry
	Policy   registry.Policy
	calls    sync.Map // tool name -> *atomic.Int64
	inFlight atomic.Int64
	most     atomic.Int64
	together atomic.Int64 // hold the next calls until this many run, for at most a second
	entered  atomic.Int64 // calls since Together
}

// New returns a Kit.
func New(tb testing.TB) *Kit {
	tb.Helper()
	reg, err := registry.New(def("kb.search"), def("kb.broken"), def("kb.big"))
	if err != nil {
		tb.Fatal(err)
	}
	return &Kit{Registry: reg, Policy: registry.PolicyFunc(func(context.Context, string, registry.Principal, string) (registry.Decision, error) {
		return registry.Decision{Verdict: registry.VerdictAllow, Fence: registry.Fence{ProjectVersion: "1", RoleBindingVersion: "1"}}, nil
	})}
}

// Together makes each of the next n calls wait (at most a second) until n
// calls run at once, so that a test can see that calls overlap: MostAtOnce
// reaches n only if they did.
func (k *Kit) Together(n int) { k.entered.Store(0); k.most.Store(0); k.together.Store(int64(n)) }

// MostAtOnce is the most calls that ran at once since Together.
func (k *Kit) MostAtOnce() int64 { return k.most.Load() }

// Calls is how many times the tool ran.
func (k *Kit) Calls(tool string) int64 {
	n, _ := k.calls.LoadOrStore(tool, new(atomic.Int64))
	return n.(*atomic.Int64).Load()
}

// Execute returns the execution of a tool: what a framework's tool does.
// input is the call's JSON arguments.
func (k *Kit) Execute(tool string) boundary.ToolFunc {
	return func(ctx context.Context, input []byte) ([]byte, error) {
		n, _ := k.calls.LoadOrStore(tool, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		now := k.inFlight.Add(1)
		defer k.inFlight.Add(-1)
		for m := k.most.Load(); now > m && !k.most.CompareAndSwap(m, now); m = k.most.Load() {
		}
		wait := k.together.Load()
		if k.entered.Add(1) > wait {
			wait = 0
		}
		for until := time.Now().Add(time.Second); k.inFlight.Load() < wait && time.Now().Before(until); {
			time.Sleep(time.Millisecond)
		}
		var in struct{ Query string }
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		switch tool {
		case Broken:
			return []byte(`{"error":"upstream 503","key":"` + Secret + `"}`), errors.New("upstream 503")
		case Big:
			return []byte(`{"text":"` + strings.Repeat("x", 4*MaxResultBytes) + `","key":"` + Secret + `"}`), nil
		}
		return []byte(`{"hits":[{"id":"doc-` + in.Query + `"}],"key":"` + Secret + `"}`), nil
	}
}

// project keeps the hit ids, or the text of kb.big, and drops the key.
var project = canonical.ProjectorFunc(func(_ context.Context, call canonical.Call, raw []byte) (canonical.Projection, error) {
	var r struct {
		Hits []struct{ ID string } `json:"hits"`
		Text string                `json:"text"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return canonical.Projection{}, err
	}
	ids := []string{}
	for _, h := range r.Hits {
		ids = append(ids, h.ID)
	}
	out, err := json.Marshal(map[string]any{"tool_call_id": call.ToolCallID, "hits": ids, "text": r.Text})
	return canonical.Projection{Evidence: canonical.EvidenceFound, Result: out}, err
})

var bindings = [][3]string{{Search, "kb.search"}, {Broken, "kb.broken"}, {Big, "kb.big"}}

// Bound returns the options that bind the three tools with their executions.
func (k *Kit) Bound() []boundary.Option {
	var opts []boundary.Option
	for _, b := range bindings {
		opts = append(opts, boundary.Bind(b[0], b[1], "1.0.0", k.Execute(b[0]), project))
	}
	return opts
}

// Next returns the options that bind the three tools without executions,
// for a framework that brings its own (boundary.InvokeWith).
func (k *Kit) Next() []boundary.Option {
	var opts []boundary.Option
	for _, b := range bindings {
		opts = append(opts, boundary.BindNext(b[0], b[1], "1.0.0", project))
	}
	return opts
}

// NextAs binds kb.search, without an execution, as agentName too.
func (k *Kit) NextAs(agentName string) boundary.Option {
	return boundary.BindNext(agentName, "kb.search", "1.0.0", project)
}

// Boundary builds a boundary over store with opts.
func (k *Kit) Boundary(tb testing.TB, store canonical.Store, opts ...boundary.Option) *boundary.Boundary {
	tb.Helper()
	b, err := boundary.New(store, k.Registry, k.Policy, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// Run is a fresh active run allowed calls calls in all.
func Run(calls int64) boundary.RunContext {
	return boundary.RunContext{
		ID: "run-" + canonical.NewOwner(), Project: "proj-1",
		Principal: registry.Principal{Subject: "user:alice", ExpiresAt: time.Now().Add(time.Hour)},
		Active:    true, TTL: time.Hour,
		Limits: canonical.Limits{MaxCallsPerRun: calls, MaxResultBytes: MaxResultBytes},
	}
}

// Store is one store a case runs on.
type Store struct {
	Name string
	Open func(tb testing.TB) canonical.Store
}

// Stores are memstore and redisstore over the harness's server; each Open
// of redisstore is a new client of the same server, as a second worker's.
var Stores = []Store{
	{Name: "memstore", Open: func(testing.TB) canonical.Store { return memstore.New() }},
	{Name: "redisstore", Open: Redis},
}

// Redis opens a new redisstore client of the harness's standalone server.
func Redis(tb testing.TB) canonical.Store {
	tb.Helper()
	s, err := redisstore.New(redisstore.Options{Addrs: []string{redistest.Addr(tb)}, Standalone: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// Record reads a record as the store holds it.
func Record(tb testing.TB, s canonical.Store, run boundary.RunContext, id string) canonical.Record {
	tb.Helper()
	rec, err := s.Get(context.Background(), run.ID, id)
	if err != nil {
		tb.Fatalf("record %s: %v", id, err)
	}
	return rec
}

// ErrorJSON is the agent-facing error object the boundary gives for code.
func ErrorJSON(id string, code canonical.Code) string {
	return string(boundary.Refuse(id, code, nil).AgentJSON())
}

// Model is a scripted model: its server answers the i-th request to Path
// with Replies[i] (as application/json) and keeps every request's body.
type Model struct {
	Path    string
	Replies []string
	mu      sync.Mutex
	bodies  [][]byte
}

// Serve starts the model's server, closed when tb ends.
func (m *Model) Serve(tb testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		m.mu.Lock()
		n := len(m.bodies)
		m.bodies = append(m.bodies, body)
		m.mu.Unlock()
		if err != nil || r.URL.Path != m.Path || n >= len(m.Replies) {
			http.Error(w, `{"error":{"message":"unscripted request","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, m.Replies[n])
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// Requests returns the bodies of the requests the model got, in order.
func (m *Model) Requests() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.bodies)
}

// CheckStore checks what the store holds after the scripted run whose ids
// are prefix+"a" … prefix+"e": a, b READY; c EXECUTION_FAILED; d
// RESULT_TOO_LARGE, each with its raw response kept (c's only when failRaw:
// a framework may drop what a failed tool answered) and its id's source
// recorded; e, past the budget of four, nowhere; each tool run once per
// call that began.
func CheckStore(tb testing.TB, k *Kit, s canonical.Store, run boundary.RunContext, prefix string, failRaw bool) {
	tb.Helper()
	for id, w := range map[string][2]string{
		"a": {"READY", ""}, "b": {"READY", ""}, "c": {"ERROR", "EXECUTION_FAILED"}, "d": {"ERROR", "RESULT_TOO_LARGE"},
	} {
		rec := Record(tb, s, run, prefix+id)
		kept := strings.Contains(string(rec.Raw), Secret) || (id == "c" && !failRaw && len(rec.Raw) == 0)
		if string(rec.Status) != w[0] || string(rec.Error) != w[1] || !kept {
			tb.Errorf("%s: %s %s raw %.60s", prefix+id, rec.Status, rec.Error, rec.Raw)
		}
		if !strings.Contains(string(rec.Request), `"tool_call_id_source":"model"`) {
			tb.Errorf("%s: request %s does not say the model chose the id", prefix+id, rec.Request)
		}
	}
	if _, err := s.Get(context.Background(), run.ID, prefix+"e"); canonical.CodeOf(err) != canonical.CodeNotFound {
		tb.Errorf("%se past the budget: %v", prefix, err)
	}
	if u, err := s.Usage(context.Background(), run.ID); err != nil || u.Calls != 4 {
		tb.Errorf("usage %+v, %v", u, err)
	}
	if se, br, bg := k.Calls(Search), k.Calls(Broken), k.Calls(Big); se != 2 || br != 1 || bg != 1 {
		tb.Errorf("tools ran search %d, broken %d, big %d times; want 2, 1, 1", se, br, bg)
	}
}

// CheckShared checks the outcome of two workers that each ran four searches
// of one run with a budget of five on one Redis: five READY, three
// BUDGET_EXHAUSTED, five executions, five calls counted.
func CheckShared(tb testing.TB, k *Kit, run boundary.RunContext, results ...[]boundary.Result) {
	tb.Helper()
	ready, refused := 0, 0
	for _, rs := range results {
		for _, r := range rs {
			switch {
			case r.Status() == canonical.StatusReady:
				ready++
			case r.Code() == canonical.CodeBudgetExhausted:
				refused++
			default:
				tb.Errorf("%s: %s", r.ToolCallID(), r.Code())
			}
		}
	}
	if ready != 5 || refused != 3 || k.Calls(Search) != 5 {
		tb.Errorf("%d ready, %d refused, %d executions; want 5, 3, 5", ready, refused, k.Calls(Search))
	}
	if u, err := Redis(tb).Usage(context.Background(), run.ID); err != nil || u.Calls != 5 {
		tb.Errorf("usage %+v, %v", u, err)
	}
}
