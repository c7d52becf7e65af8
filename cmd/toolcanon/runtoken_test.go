package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/gateway"
)

func TestRunTokenCommandMintsWhatTheGatewayVerifies(t *testing.T) {
	key := []byte(strings.Repeat("q", 40))
	file := filepath.Join(t.TempDir(), "run.key")
	if err := os.WriteFile(file, append(key, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"run-token", "--key-file", file, "--run", "run-9", "--principal", "alice", "--ttl", "10m"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	rt, err := gateway.VerifyRunToken(key, strings.TrimSpace(out.String()), time.Now())
	if err != nil || rt.Run != "run-9" || rt.Principal != "alice" || time.Until(rt.Expires) > 10*time.Minute+time.Second {
		t.Fatalf("minted token: %+v, %v", rt, err)
	}
	for _, args := range [][]string{
		{"run-token", "--run", "run-9", "--principal", "alice"},
		{"run-token", "--key-file", file, "--run", "bad run", "--principal", "alice"},
		{"run-token", "--key-file", file, "--run", "run-9", "--principal", "alice", "--ttl", "720h"},
		{"run-token", "--key-file", filepath.Join(t.TempDir(), "none"), "--run", "run-9", "--principal", "alice"},
	} {
		out.Reset()
		errb.Reset()
		if code := run(args, &out, &errb); code != exitUsage || out.Len() != 0 || errb.Len() == 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
}
