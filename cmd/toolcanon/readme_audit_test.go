package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// The commands of the README's "Export, verify, keep six months" run as
// printed, in a directory of their own, against a server the test starts:
// the keys are made, a store's events exported, verified, tailed, old
// files removed, and what is left verified again.
func TestReadmeAuditCommands(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "### Export, verify, keep six months")
	if !ok {
		t.Fatal("the README has no Export, verify, keep six months section")
	}
	var lines []string
	for _, block := range strings.Split(sec, "```sh\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
			lines = append(lines, l)
		}
	}
	if len(lines) < 6 {
		t.Fatalf("the section shows %d commands", len(lines))
	}
	addr := redistest.Addr(t)
	dir := t.TempDir()
	// The events of a run, on the server the commands name.
	o := canonical.AuditOptions{Key: bytes.Repeat([]byte{5}, 32), KeyID: "2026-12"}
	s, err := redisstore.New(redisstore.Options{Addrs: []string{addr}, Audit: &o})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runID := "readme-" + canonical.NewOwner()[:8]
	for i := range 3 {
		id := fmt.Sprintf("call_%d", i)
		if _, err := s.Begin(context.Background(), canonical.BeginRequest{RunID: runID, ToolCallID: id, Tool: "t", Owner: "o",
			Principal: "p", Request: []byte(`{}`), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, l := range lines {
		l = strings.ReplaceAll(l, "127.0.0.1:6379", addr)
		var out, errb bytes.Buffer
		var code int
		if args, ok := strings.CutPrefix(l, "toolcanon "); ok {
			argv := strings.Fields(args)
			redirect := ""
			if i := strings.Index(args, " > "); i >= 0 {
				argv, redirect = strings.Fields(args[:i]), strings.TrimSpace(args[i+3:])
			}
			for i, a := range argv {
				if !strings.HasPrefix(a, "-") && strings.Contains(a, "audit-") {
					argv[i] = filepath.Join(dir, a)
				}
			}
			code = run(argv, &out, &errb)
			if redirect != "" {
				os.WriteFile(filepath.Join(dir, redirect), out.Bytes(), 0o600)
			}
			seen[argv[1]] = true
		} else {
			cmd := exec.Command("sh", "-c", l)
			cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &errb
			if err := cmd.Run(); err != nil {
				code = 1
			}
		}
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", l, code, out.String(), errb.String())
		}
		if strings.Contains(l, "audit verify") && !strings.Contains(out.String(), "verified") {
			t.Fatalf("%s: %s", l, out.String())
		}
		if strings.Contains(l, "audit export") && !strings.Contains(out.String(), "3 event(s) of 1 run(s) exported") {
			t.Fatalf("%s: %s", l, out.String())
		}
	}
	for _, sub := range []string{"keygen", "export", "verify", "tail"} {
		if !seen[sub] {
			t.Errorf("the section never runs toolcanon audit %s", sub)
		}
	}
}
