package reaper_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/reaper"
)

// syncBuffer is a log destination safe for the reaper's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func stuck(t *testing.T, s canonical.Store, run, id string, lease time.Duration) {
	t.Helper()
	_, err := s.Begin(context.Background(), canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "kb.search",
		Owner: canonical.NewOwner(), Request: []byte(`{}`), TTL: time.Minute, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
}

func status(t *testing.T, s canonical.Store, run, id string) canonical.Code {
	t.Helper()
	rec, err := s.Get(context.Background(), run, id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status == canonical.StatusProjecting {
		return ""
	}
	return rec.Error
}

// A started reaper closes a stuck call of a run nobody named, logs it, and
// does nothing after stop.
func TestStartReapsUntilStopped(t *testing.T) {
	s := memstore.New()
	var log syncBuffer
	passes := make(chan canonical.ReapReport, 100)
	stuck(t, s, "run-a", "call_1", time.Millisecond)
	stuck(t, s, "run-b", "call_2", time.Hour)
	stop, err := reaper.Start(s, reaper.Options{Interval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&log, nil)),
		OnPass: func(r canonical.ReapReport, err error) {
			if err != nil {
				t.Errorf("pass: %v", err)
			}
			passes <- r
		}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for abandoned := 0; abandoned == 0; {
		select {
		case r := <-passes:
			abandoned += len(r.Abandoned)
		case <-deadline:
			t.Fatal("no pass abandoned the stuck call")
		}
	}
	// A call that gets stuck later is found by a later pass.
	stuck(t, s, "run-c", "call_3", time.Millisecond)
	for status(t, s, "run-c", "call_3") == "" {
		select {
		case <-passes:
		case <-deadline:
			t.Fatal("no pass abandoned the second stuck call")
		}
	}
	stop()
	stop() // idempotent
	if got := status(t, s, "run-a", "call_1"); got != canonical.CodeExecutionAbandoned {
		t.Fatalf("stuck call: %q", got)
	}
	if got := status(t, s, "run-b", "call_2"); got != "" {
		t.Fatalf("running call closed: %q", got)
	}
	out := log.String()
	for _, want := range []string{`msg="reaper: call abandoned" run_id=run-a tool_call_id=call_1 tool=kb.search`,
		`msg="reaper: call abandoned" run_id=run-c tool_call_id=call_3`, `msg="reaper: pass"`, "abandoned=1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "run-b") {
		t.Fatalf("log names the running call's run:\n%s", out)
	}

	// After stop, no pass runs.
	for len(passes) > 0 {
		<-passes
	}
	stuck(t, s, "run-d", "call_4", time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	if len(passes) != 0 || status(t, s, "run-d", "call_4") != "" {
		t.Fatal("a pass ran after stop")
	}
}

func TestRunRefusesBadOptions(t *testing.T) {
	for _, o := range []reaper.Options{{Interval: time.Millisecond}, {Interval: -time.Second}, {Reap: canonical.ReapOptions{Batch: -1}}} {
		if err := reaper.Run(context.Background(), memstore.New(), o); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
			t.Errorf("Run(%+v) = %v, want INVALID_ARGUMENT", o, err)
		}
		if _, err := reaper.Start(memstore.New(), o); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
			t.Errorf("Start(%+v) = %v, want INVALID_ARGUMENT", o, err)
		}
	}
}

// Run returns when its context ends, also while it waits for the next pass.
func TestRunEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- reaper.Run(ctx, memstore.New(), reaper.Options{Interval: time.Hour}) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
