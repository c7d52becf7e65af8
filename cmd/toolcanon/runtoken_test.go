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

// The command mints, from a gateway's configuration or from a key given
// apart, what that gateway verifies.
func TestRunTokenCommandMintsWhatTheGatewayVerifies(t *testing.T) {
	dir := t.TempDir()
	k1 := []byte(strings.Repeat("q", 40))
	k2 := []byte(strings.Repeat("r", 40))
	for name, key := range map[string][]byte{"k1.key": k1, "k2.key": k2} {
		if err := os.WriteFile(filepath.Join(dir, name), append(key, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A configuration whose identity.run_token has two keys, minting with k2.
	config := filepath.Join(dir, "gateway.json")
	cfg := `{"upstreams": {"up": {"command": ["./up"]}}, "identity": {"project": "p", "run_token": {"audience": "support-eu",
	  "keys": [{"id": "k1", "key_file": "k1.key"}, {"id": "k2", "key_file": "k2.key"}], "mint": "k2"}}}`
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	keys := &gateway.RunTokenKeys{Audience: "support-eu", Keys: []gateway.RunTokenKey{{ID: "k1", Key: k1}, {ID: "k2", Key: k2}}}
	for _, c := range []struct {
		args []string
		kid  string
	}{
		{[]string{"--config", config}, "k2"},
		{[]string{"--key-file", filepath.Join(dir, "k1.key"), "--key-id", "k1", "--audience", "support-eu"}, "k1"},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"run-token", "--run", "run-9", "--principal", "alice", "--ttl", "10m"}, c.args...)
		if code := run(args, &out, &errb); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		rt, err := gateway.VerifyRunToken(keys, strings.TrimSpace(out.String()), time.Now())
		if err != nil || rt.Run != "run-9" || rt.Principal != "alice" || rt.KeyID != c.kid ||
			time.Until(rt.Expires) > 10*time.Minute+gateway.RunTokenSkew+time.Second {
			t.Fatalf("%v: minted token: %+v, %v", args, rt, err)
		}
	}
	file := filepath.Join(dir, "k1.key")
	for _, args := range [][]string{
		{"run-token", "--run", "run-9", "--principal", "alice"},
		{"run-token", "--config", config, "--key-file", file, "--key-id", "k1", "--audience", "a", "--run", "run-9", "--principal", "alice"},
		{"run-token", "--key-file", file, "--run", "run-9", "--principal", "alice"},
		{"run-token", "--key-file", file, "--key-id", "k1", "--audience", "a", "--run", "bad run", "--principal", "alice"},
		{"run-token", "--config", config, "--run", "run-9", "--principal", "alice", "--ttl", "720h"},
		{"run-token", "--key-file", filepath.Join(dir, "none"), "--key-id", "k1", "--audience", "a", "--run", "run-9", "--principal", "alice"},
		{"run-token", "--config", filepath.Join(dir, "none.json"), "--run", "run-9", "--principal", "alice"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != exitUsage || out.Len() != 0 || errb.Len() == 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
}
