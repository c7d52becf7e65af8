package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// seedStuck begins, under a prefix of its own, runs calls left stuck in
// each of n runs (lease passed), one running call and one completed; it
// returns the prefix and the stuck calls as "run call".
func seedStuck(t *testing.T, addrs []string, n int) (string, []string) {
	t.Helper()
	prefix := "tcreap" + canonical.NewOwner()[:8]
	s, err := redisstore.New(redisstore.Options{Addrs: addrs, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	begin := func(run, id string, lease time.Duration) {
		if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "kb.search", Owner: "o-" + id,
			Request: []byte(`{}`), TTL: time.Hour, Lease: lease}); err != nil {
			t.Fatal(err)
		}
	}
	var stuck []string
	for i := 0; i < n; i++ {
		run := fmt.Sprintf("run-%02d", i)
		begin(run, "c_dead", 20*time.Millisecond)
		stuck = append(stuck, run+" c_dead")
	}
	begin("run-00", "c_live", time.Hour)
	begin("run-00", "c_done", 20*time.Millisecond)
	if _, err := s.Complete(ctx, canonical.Completion{RunID: "run-00", ToolCallID: "c_done", Owner: "o-c_done",
		Status: canonical.StatusReady, Evidence: canonical.NoEvidence, Raw: []byte(`{}`), Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	return prefix, stuck
}

// reap --all --once finds the stuck calls of every run, on a server and on
// every master of a cluster, without being told the runs.
func TestReapAllOnce(t *testing.T) {
	for name, addrs := range map[string][]string{"standalone": {redistest.Addr(t)}, "cluster": redistest.ClusterAddrs(t)} {
		t.Run(name, func(t *testing.T) {
			prefix, stuck := seedStuck(t, addrs, 12)
			code, out, stderr := runCmd("reap", "--redis", strings.Join(addrs, ","), "--prefix", prefix, "--all", "--once", "--batch", "5")
			if code != exitOK {
				t.Fatalf("exit %d\n%s%s", code, out, stderr)
			}
			for _, c := range stuck {
				if !strings.Contains(out, c+"  abandoned: ERROR EXECUTION_ABANDONED") {
					t.Fatalf("output lacks %q:\n%s", c, out)
				}
			}
			nodes := fmt.Sprintf("%d node(s)", len(addrs))
			if strings.Contains(out, "c_live") || strings.Contains(out, "c_done") || !strings.Contains(out, nodes) ||
				!strings.Contains(out, "12 run(s) looked at, 12 lease(s) passed: 12 call(s) abandoned, 0 gone, 0 skipped, 0 error(s)") {
				t.Fatalf("output:\n%s", out)
			}
			code, out, _ = runCmd("reap", "--redis", strings.Join(addrs, ","), "--prefix", prefix, "--all", "--once")
			if code != exitOK || !strings.Contains(out, " run(s) looked at, 0 lease(s) passed: 0 call(s) abandoned") {
				t.Fatalf("second pass: exit %d\n%s", code, out)
			}
		})
	}
}

// lockedBuffer is written by the command while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// reap --all without --once reaps every interval, logs what it does, and
// ends on SIGTERM.
func TestReapAllRunsUntilStopped(t *testing.T) {
	addr := redistest.Addr(t)
	prefix, stuck := seedStuck(t, []string{addr}, 3)
	var out, errb lockedBuffer
	done := make(chan int)
	go func() {
		done <- run([]string{"reap", "--redis", addr, "--prefix", prefix, "--all", "--interval", "50ms"}, &out, &errb)
	}()
	wait := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("no %s:\nstdout:\n%s\nstderr:\n%s", what, out.String(), errb.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	wait("start line", func() bool { return strings.Contains(errb.String(), "reaping every run every 50ms") })
	wait("abandon of every stuck call", func() bool {
		for _, c := range stuck {
			run, id, _ := strings.Cut(c, " ")
			if !strings.Contains(out.String(), "run_id="+run+" tool_call_id="+id) {
				return false
			}
		}
		return true
	})
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reap --all did not stop on SIGTERM")
	}
	if o := out.String(); !strings.Contains(o, `msg="reaper: pass"`) || !strings.Contains(o, "abandoned=3") || strings.Contains(o, "c_live") {
		t.Fatalf("log:\n%s", o)
	}
	for _, args := range [][]string{{"reap", "--redis", addr, "--all", "--run", "x"}, {"reap", "--redis", addr},
		{"reap", "--redis", addr, "--all", "--interval", "1ms"}, {"reap", "--redis", addr, "--all", "--batch", "0"}} {
		if code, _, _ := runCmd(args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}
