package redisstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// Cluster is a requirement, not a hint: a standalone server is refused.
func TestClusterOptionRequiresACluster(t *testing.T) {
	_, err := redisstore.New(redisstore.Options{Addrs: []string{redistest.Addr(t)}, Cluster: true})
	if canonical.CodeOf(err) != canonical.CodeInvalidArgument || !strings.Contains(err.Error(), "is not a Redis Cluster node") {
		t.Fatalf("a standalone server with Cluster: %v", err)
	}
	s := newStore(t, redistest.ClusterAddrs(t)[:1], redisstore.Options{Cluster: true})
	if _, err := s.Usage(context.Background(), "topology-"+canonical.NewOwner()[:8]); canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Fatalf("a cluster with Cluster: %v", err)
	}
	for _, o := range []redisstore.Options{{Cluster: true, Standalone: true}, {Cluster: true, SentinelMaster: "m"},
		{Standalone: true, SentinelMaster: "m"}} {
		o.Addrs = []string{"127.0.0.1:1"}
		if _, err := redisstore.New(o); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// Through a sentinel, the store finds the master and writes there.
func TestSentinelMaster(t *testing.T) {
	master, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(master.Stop)
	sentinel, err := redistest.StartSentinel(master, "toolcanon")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sentinel.Stop)
	s := newStore(t, []string{sentinel.Addr}, redisstore.Options{SentinelMaster: "toolcanon"})
	run := "sentinel-" + canonical.NewOwner()[:8]
	if _, err := s.Begin(context.Background(), canonical.BeginRequest{RunID: run, ToolCallID: "c1", Tool: "kb.search",
		Owner: canonical.NewOwner(), Request: []byte(`{}`), TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if n, err := redistest.Command(master.Addr, "EXISTS", "tc:{"+run+"}:call:c1"); err != nil || n != "1" {
		t.Fatalf("the record is not on the master: %q, %v", n, err)
	}
	rep, err := s.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if f := rep.Findings[1]; f.Setting != "topology" || f.Value != "sentinel" || len(rep.Nodes) != 1 || rep.Nodes[0].Addr != master.Addr {
		t.Fatalf("check through the sentinel: %+v", rep)
	}
}
