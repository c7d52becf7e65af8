package boundary_test

import (
	"context"
	"errors"
	"testing"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

var boundaryAudit = canonical.AuditOptions{Key: []byte("a key of thirty-two bytes or more!"), KeyID: "b"}

// The boundary tells an audited store what the events say beyond the
// store's own knowledge: the definition a tool is bound to, and whether
// the tool ran.
func TestAuditEventsOfInvoke(t *testing.T) {
	for _, fac := range []factory{
		{name: "memstore", open: func(testing.TB) canonical.Store { return memstore.New(memstore.WithAudit(boundaryAudit)) }},
		{name: "redisstore", open: func(tb testing.TB) canonical.Store {
			s, err := redisstore.New(redisstore.Options{Addrs: []string{redistest.Addr(tb)}, Audit: &boundaryAudit})
			if err != nil {
				tb.Fatal(err)
			}
			tb.(*testing.T).Cleanup(func() { s.Close() })
			return s
		}},
	} {
		t.Run(fac.name, func(t *testing.T) {
			fx := newFixture(t, fac)
			if res := fx.invoke("call_a1"); res.Status() != canonical.StatusReady {
				t.Fatalf("call_a1: %+v", res)
			}
			fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
				return nil, boundary.NotRun(canonical.CodeUpstreamUnavailable, errors.New("refused"))
			}
			fx.invoke("call_a2")
			p, err := fx.store.(canonical.AuditSource).AuditRead(context.Background(), []string{fx.run.ID}, 10)
			if err != nil {
				t.Fatal(err)
			}
			evs := p[0].Events
			if len(evs) != 4 {
				t.Fatalf("%d events: %+v", len(evs), evs)
			}
			if evs[0].ToolVersion != "kb.search@1.0.0" || evs[0].Principal != canonical.PrincipalTag("user:alice") {
				t.Fatalf("begin event %+v", evs[0])
			}
			if evs[1].Execution != canonical.ExecutionExecuted || evs[3].Execution != canonical.ExecutionNotRun ||
				evs[3].Code != canonical.CodeUpstreamUnavailable {
				t.Fatalf("complete events %+v, %+v", evs[1], evs[3])
			}
		})
	}
}
