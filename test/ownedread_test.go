package test

import (
	"context"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
	"github.com/toolcanon/toolcanon/progress"
)

// meddling is a store that, once, right after a read of a run's owner or
// index has answered, lets the run expire and another principal begin and
// complete it again with the same call id: what a reader whose check and
// reads are apart may meet.
type meddling struct {
	canonical.Store
	meddle func()
}

func (m *meddling) after() {
	if f := m.meddle; f != nil {
		m.meddle = nil
		f()
	}
}

func (m *meddling) CheckPrincipal(ctx context.Context, runID, principal string) error {
	defer m.after()
	return m.Store.CheckPrincipal(ctx, runID, principal)
}

func (m *meddling) Completed(ctx context.Context, runID string, max int) ([]string, int, error) {
	defer m.after()
	return m.Store.Completed(ctx, runID, max)
}

func (m *meddling) ReadIndex(ctx context.Context, runID, principal string, max int) (canonical.RunIndex, error) {
	defer m.after()
	return m.Store.(canonical.OwnedReader).ReadIndex(ctx, runID, principal, max)
}

func (m *meddling) ReadRecords(ctx context.Context, runID, principal, gen string, ids []string, opts canonical.ReadOptions) ([]*canonical.Record, error) {
	return m.Store.(canonical.OwnedReader).ReadRecords(ctx, runID, principal, gen, ids, opts)
}

func (m *meddling) ReadUsage(ctx context.Context, runID, principal string) (canonical.RunUsage, error) {
	return m.Store.(canonical.OwnedReader).ReadUsage(ctx, runID, principal)
}

// A projection for the run's owner never hands it records of a run that
// another principal began again under the same id between its reads: the
// owner check and the first read are one, and every record read must be of
// the generation that read found.
func TestProjectionNeverReadsANewcomersRun(t *testing.T) {
	clock := time.UnixMilli(1_800_000_000_000)
	mem := memstore.New(memstore.WithClock(func() time.Time { return clock }))
	addr := redistest.Addr(t)
	red := open(t, redisstore.Options{Addrs: []string{addr}, Prefix: "tcowned"})
	for name, st := range map[string]struct {
		s    canonical.Store
		wait func(time.Duration)
	}{
		"memstore": {mem, func(d time.Duration) { clock = clock.Add(d) }},
		"redis":    {red, time.Sleep},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			run := "owned-" + canonical.NewOwner()[:12]
			req := canonical.BeginRequest{RunID: run, ToolCallID: "c1", Tool: "kb.search", Owner: "o-alice",
				Principal: "alice", Request: []byte(`{"q":"alice"}`), TTL: 200 * time.Millisecond}
			if _, err := st.s.Begin(ctx, req); err != nil {
				t.Fatal(err)
			}
			if _, err := st.s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: "c1", Owner: "o-alice",
				Status: canonical.StatusReady, Evidence: canonical.EvidenceFound, Result: []byte(`{"who":"alice"}`)}); err != nil {
				t.Fatal(err)
			}
			m := &meddling{Store: st.s, meddle: func() {
				st.wait(400 * time.Millisecond) // the run expires
				bob := req
				bob.Owner, bob.Principal, bob.Request, bob.TTL = "o-bob", "bob", []byte(`{"q":"bob"}`), time.Hour
				if _, err := st.s.Begin(ctx, bob); err != nil {
					t.Errorf("bob's begin: %v", err)
				}
				if _, err := st.s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: "c1", Owner: "o-bob",
					Status: canonical.StatusReady, Evidence: canonical.EvidenceFound, Result: []byte(`{"who":"bob"}`)}); err != nil {
					t.Errorf("bob's complete: %v", err)
				}
			}}
			p, err := progress.Project(ctx, m, run, progress.Options{Principal: "alice"})
			if err == nil {
				for _, f := range p.Facts {
					t.Fatalf("alice's projection holds a fact of bob's run: %+v", f)
				}
			} else if canonical.CodeOf(err) != canonical.CodeRunForbidden {
				t.Fatalf("projection: %v; want RUN_FORBIDDEN or no fact", err)
			}
		})
	}
}
