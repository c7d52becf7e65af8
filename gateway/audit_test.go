package gateway_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
)

// service records when it ran and when it was stopped.
type service struct {
	started, stopped chan struct{}
}

func (s *service) Run(ctx context.Context) error {
	close(s.started)
	<-ctx.Done()
	close(s.stopped)
	return ctx.Err()
}

// A gateway runs its audit exporter beside its calls, whatever the
// context Open was given, until Close, which waits for it to stop.
func TestGatewayRunsItsAuditExporter(t *testing.T) {
	dir := t.TempDir()
	cfg, err := gateway.LoadConfig(baseConfig(t, stdioUpstream(t, filepath.Join(dir, "upstream.log"), ""), "search").write(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	x := &service{started: make(chan struct{}), stopped: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	g, err := gateway.Open(ctx, cfg, memstore.New(), gateway.OpenOptions{NoReaper: true, AuditExporter: x})
	cancel() // Open's context ends; the exporter does not
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-x.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the exporter did not start")
	}
	select {
	case <-x.stopped:
		t.Fatal("the exporter stopped with Open's context")
	case <-time.After(50 * time.Millisecond):
	}
	g.Close()
	select {
	case <-x.stopped:
	default:
		t.Fatal("Close returned before the exporter stopped")
	}
}
