package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/gateway"
)

func newUpstream(t *testing.T, pins map[string]string) (*gateway.Upstream, string) {
	t.Helper()
	_, up := binaries(t)
	dir := t.TempDir()
	pidPath := filepath.Join(dir, "upstream.pid")
	u, err := gateway.NewUpstream(gateway.UpstreamOptions{Name: "up", Command: []string{up},
		Env: map[string]string{"UPSTREAM_PIDFILE": pidPath, "UPSTREAM_LOG": filepath.Join(dir, "upstream.log")}, Pins: pins})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = u.Close() })
	return u, pidPath
}

func TestUpstreamChecksPinsOnConnect(t *testing.T) {
	ds := upstreamDrafts(t)
	u, _ := newUpstream(t, map[string]string{
		"search": ds["search"].Pin, "echo": "sha256:" + fmt.Sprintf("%064d", 0), "gone": ds["search"].Pin,
	})
	if err := u.Check("search"); err != nil {
		t.Fatalf("before any connection a pinned tool is not refused: %v", err)
	}
	if err := u.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := u.Check("search"); err != nil {
		t.Errorf("search matches its pin: %v", err)
	}
	for _, name := range []string{"echo", "gone"} {
		if err := u.Check(name); canonical.CodeOf(err) != canonical.CodeToolDefinitionChanged {
			t.Errorf("%s: %v, want TOOL_DEFINITION_CHANGED", name, err)
		}
	}
	if err := u.Check("fail"); canonical.CodeOf(err) != canonical.CodeUnknownTool {
		t.Errorf("an unpinned tool: %v", err)
	}
	if _, err := u.Tool("echo").Call(context.Background(), []byte(`{"text":"x"}`)); canonical.CodeOf(err) != canonical.CodeToolDefinitionChanged {
		t.Errorf("calling a changed tool: %v", err)
	}
}

func TestUpstreamErrorResultKeepsRaw(t *testing.T) {
	ds := upstreamDrafts(t)
	u, _ := newUpstream(t, map[string]string{"fail": ds["fail"].Pin})
	raw, err := u.Tool("fail").Call(context.Background(), []byte(`{"query":"x"}`))
	if !errors.Is(err, gateway.ErrToolError) || !strings.Contains(string(raw), "backend exploded") {
		t.Fatalf("raw %s, err %v", raw, err)
	}
}

// Calls in parallel while the upstream changes a tool: under the race
// detector, the session, the pin state and the re-verification share no
// unguarded state, and the change is seen.
func TestUpstreamParallelCallsDuringAChange(t *testing.T) {
	ds := upstreamDrafts(t)
	u, pidPath := newUpstream(t, map[string]string{"search": ds["search"].Pin, "echo": ds["echo"].Pin})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				if _, err := u.Tool("echo").Call(ctx, []byte(fmt.Sprintf(`{"text":"%d-%d"}`, g, i))); err != nil {
					errs <- err
				}
				_ = u.Check("search")
				_ = u.Listed("search")
			}
		}()
	}
	pid := readPid(t, pidPath)
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("echo: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for canonical.CodeOf(u.Check("search")) != canonical.CodeToolDefinitionChanged {
		if time.Now().After(deadline) {
			t.Fatal("the change of search was never seen")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := u.Check("echo"); err != nil {
		t.Fatalf("echo did not change: %v", err)
	}
	// A tool that no longer matches its pin lends nothing to a listing.
	if got := u.Listed("search"); got != nil {
		t.Errorf("the changed search is still listed as %+v", got)
	}
	if got := u.Listed("echo"); got == nil || got.Name != "echo" {
		t.Errorf("echo is listed as %+v", got)
	}
}
