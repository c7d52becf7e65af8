package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/audit"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

var testAudit = canonical.AuditOptions{Key: bytes.Repeat([]byte{9}, 32), KeyID: "cli"}

// buildCLI builds this command into a temporary directory.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "toolcanon")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// keygen makes a signer key file and returns it with the verifier key.
func keygen(t *testing.T) (file, vkey string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "signer.key")
	var out, errb bytes.Buffer
	if code := run([]string{"audit", "keygen", "--name", "cli.test", "--signing-key-file", file}, &out, &errb); code != exitOK {
		t.Fatalf("keygen: %d %s", code, errb.String())
	}
	return file, strings.TrimSpace(out.String())
}

// The exporter process killed (SIGKILL) at random points while a workload
// of 8 workers runs loses nothing and duplicates nothing at the sink.
func TestAuditExportSurvivesSIGKILL(t *testing.T) {
	bin := buildCLI(t)
	addr := redistest.Addr(t)
	prefix := "sk" + canonical.NewOwner()[:8]
	o := testAudit
	s, err := redisstore.New(redisstore.Options{Addrs: []string{addr}, Prefix: prefix, Audit: &o})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	keyFile, vkey := keygen(t)
	dir := t.TempDir()

	var wg sync.WaitGroup
	var mu sync.Mutex
	events := 0
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for r := range 4 {
				runID := fmt.Sprintf("kill-%d-%d", w, r)
				n := 0
				for c := range 12 {
					id := fmt.Sprintf("c%d", c)
					req := canonical.BeginRequest{RunID: runID, ToolCallID: id, Tool: "t", Owner: "o" + id, Principal: "p",
						Request: []byte(`{"c":1}`), TTL: time.Hour}
					if _, err := s.Begin(ctx, req); err != nil {
						t.Error(err)
						return
					}
					if _, err := s.Complete(ctx, canonical.Completion{RunID: runID, ToolCallID: id, Owner: "o" + id,
						Status: canonical.StatusReady, Evidence: canonical.NoEvidence, Raw: []byte(`[]`), Result: []byte(`{}`)}); err != nil {
						t.Error(err)
						return
					}
					n += 2
					if c%4 == 0 {
						req.Owner = "dup"
						if _, err := s.Begin(ctx, req); canonical.CodeOf(err) != canonical.CodeDuplicateToolCall {
							t.Errorf("duplicate: %v", err)
							return
						}
						n++
					}
					time.Sleep(5 * time.Millisecond)
				}
				if err := s.CloseRun(ctx, runID, "p"); err != nil {
					t.Error(err)
					return
				}
				n++
				mu.Lock()
				events += n
				mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	args := []string{"audit", "export", "--redis", addr, "--prefix", prefix, "--jsonl", dir, "--signing-key-file", keyFile,
		"--interval", "20ms", "--max-file-bytes", "32768"}
	kills := 0
	for working := true; working || kills < 12; {
		select {
		case <-done:
			working = false
		default:
		}
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+rand.IntN(180)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		kills++
		if strings.Contains(stderr.String(), "held by another exporter") {
			t.Fatalf("the directory's lock outlived a killed exporter: %s", stderr.String())
		}
	}
	if t.Failed() {
		return
	}
	// What the killed passes left: exported by passes that finish.
	time.Sleep(100 * time.Millisecond) // the last killed exporter's lease passes
	for i := 0; ; i++ {
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, append(args[:len(args):len(args)], "--once")...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("export --once: %v %s", err, errb.String())
		}
		if strings.Contains(out.String(), " 0 left pending") && !strings.Contains(out.String(), "lease") {
			break
		}
		if i > 50 {
			t.Fatalf("the backlog does not drain: %s", out.String())
		}
		time.Sleep(70 * time.Millisecond)
	}
	var evs []audit.Event
	if err := audit.ReadJSONL(dir, func(_ string, l audit.Line) error {
		if l.Event != nil {
			evs = append(evs, *l.Event)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	last := map[string]int64{}
	for _, e := range evs {
		k := e.RunID + "/" + e.Gen
		if e.Seq != last[k]+1 {
			t.Fatalf("%s after seq %d", e.ID(), last[k])
		}
		last[k] = e.Seq
	}
	if len(evs) != events {
		t.Fatalf("%d events at the sink, %d made, after %d kills", len(evs), events, kills)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"audit", "verify", dir, "--key", vkey}, &out, &errb); code != exitOK {
		t.Fatalf("verify: %d\n%s%s", code, out.String(), errb.String())
	}
	t.Logf("%d events exactly once after %d SIGKILLs of the exporter; %s", events, kills, strings.TrimSpace(out.String()))
}

// audit verify on a tampered export names the fault and exits 1; the
// untouched export verifies.
func TestAuditVerifyCommand(t *testing.T) {
	addr := redistest.Addr(t)
	prefix := "vf" + canonical.NewOwner()[:8]
	o := testAudit
	s, err := redisstore.New(redisstore.Options{Addrs: []string{addr}, Prefix: prefix, Audit: &o})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for c := range 3 {
		id := fmt.Sprintf("c%d", c)
		if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: "verify-run", ToolCallID: id, Tool: "t", Owner: "o", Principal: "p",
			Request: []byte(`{}`), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	dir, vkey := exportVerified(t, addr, prefix, "3 event(s) of 1 run(s) exported")
	var out, errb bytes.Buffer
	// A key file with no key in it is refused, never read as "check no signature".
	empty := filepath.Join(t.TempDir(), "empty.key")
	os.WriteFile(empty, []byte("\n"), 0o600)
	out.Reset()
	errb.Reset()
	if code := run([]string{"audit", "verify", dir, "--key-file", empty}, &out, &errb); code != exitUsage ||
		!strings.Contains(errb.String(), "holds no key") {
		t.Fatalf("verify with an empty key file: %d %s %s", code, out.String(), errb.String())
	}
	file := filepath.Join(dir, "audit-000001.jsonl")
	b, _ := os.ReadFile(file)
	tampered := bytes.Replace(b, []byte(`"request_size":2`), []byte(`"request_size":3`), 1)
	os.WriteFile(file, tampered, 0o600)
	out.Reset()
	if code := run([]string{"audit", "verify", dir, "--key", vkey}, &out, &errb); code != exitFailure ||
		!strings.Contains(out.String(), "the event was changed") || !strings.Contains(out.String(), "NOT VERIFIED") {
		t.Fatalf("verify of a tampered export: %d %s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"audit", "tail", dir, "-n", "2"}, &out, &errb); code != exitOK || strings.Count(out.String(), "\n") != 2 {
		t.Fatalf("tail: %d %q", code, out.String())
	}
}

// exportVerified exports the audit stream under prefix once to a new
// directory with a new key, checks that the export said want and that
// verify accepts it, and returns the directory and the verifier key.
func exportVerified(t *testing.T, addr, prefix, want string) (dir, vkey string) {
	t.Helper()
	keyFile, vkey := keygen(t)
	dir = t.TempDir()
	var out, errb bytes.Buffer
	if code := run([]string{"audit", "export", "--redis", addr, "--prefix", prefix, "--jsonl", dir, "--signing-key-file", keyFile,
		"--once"}, &out, &errb); code != exitOK || !strings.Contains(out.String(), want) {
		t.Fatalf("export: %d %s %s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"audit", "verify", dir, "--key", vkey}, &out, &errb); code != exitOK || !strings.Contains(out.String(), "verified") {
		t.Fatalf("verify: %d %s %s", code, out.String(), errb.String())
	}
	return dir, vkey
}

// A call that waited for input and was continued is exported, verified and
// tailed with what its await_input and continue events say.
func TestAuditTailsAContinuedCall(t *testing.T) {
	addr := redistest.Addr(t)
	prefix := "ct" + canonical.NewOwner()[:8]
	o := testAudit
	s, err := redisstore.New(redisstore.Options{Addrs: []string{addr}, Prefix: prefix, Audit: &o})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	req := canonical.BeginRequest{RunID: "cont-run", ToolCallID: "c1", Tool: "t", Owner: "o1", Principal: "p",
		Request: []byte(`{}`), TTL: time.Hour}
	if _, err := s.Begin(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AwaitInput(ctx, canonical.AwaitInput{RunID: "cont-run", ToolCallID: "c1", Owner: "o1", Token: "tok",
		Wait: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ContinueCall(ctx, canonical.ContinueCall{RunID: "cont-run", ToolCallID: "c1", Owner: "o2", Principal: "p",
		RequestDigest: canonical.RequestDigest(req.Request), Token: "tok", Lease: time.Minute, Input: []byte(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	dir, _ := exportVerified(t, addr, prefix, "3 event(s) of 1 run(s) exported")
	var out, errb bytes.Buffer
	if code := run([]string{"audit", "tail", dir, "-n", "3"}, &out, &errb); code != exitOK {
		t.Fatalf("tail: %d %q %s", code, out.String(), errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	tag := canonical.PrincipalTag("p")[:12]
	if len(lines) != 3 || !strings.Contains(lines[0], " await_input call=c1 until=") ||
		!strings.Contains(lines[1], " continue    call=c1 principal="+tag+" input=7B") {
		t.Fatalf("tail:\n%s", out.String())
	}
}
