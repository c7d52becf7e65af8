package gateway_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioGatewayIn starts `toolcanon gateway --config cfg --stdio` with dir as
// its working directory, as the client's command.
func stdioGatewayIn(t *testing.T, dir, cfg string) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	bin, _ := binaries(t)
	cmd := exec.Command(bin, "gateway", "--config", cfg, "--stdio")
	cmd.Dir = dir
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	own(t, cmd)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, stderr
}

// A stdio upstream sees the minimal environment, what its configuration
// names, and nothing else of the gateway's: not the Redis password, not
// another upstream's token, not any other variable.
func TestUpstreamEnvironmentIsMinimal(t *testing.T) {
	_, up := binaries(t)
	dir := t.TempDir()
	envFile := filepath.Join(dir, "env")
	planted := map[string]string{
		"TOOLCANON_REDIS_PASSWORD": "planted-redis-password-4411",
		"OTHER_UPSTREAM_TOKEN":     "planted-upstream-token-9923",
		"AWS_SECRET_ACCESS_KEY":    "planted-aws-secret-7310",
	}
	for k, v := range planted {
		t.Setenv(k, v)
	}
	t.Setenv("PASSED_ON", "asked-for")
	t.Setenv("LANG", "C.UTF-8")
	cfg := baseConfig(t, map[string]any{"command": []string{up},
		"env": map[string]string{"UPSTREAM_ENVFILE": envFile}, "inherit_env": []string{"PASSED_ON"}}, "echo")
	cfg["upstreams"].(map[string]any)["other"] = map[string]any{"url": "http://127.0.0.1:9/mcp", "bearer_token_env": "OTHER_UPSTREAM_TOKEN"}
	cs, stderr := stdioGatewayIn(t, dir, cfg.write(t, dir))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if o := mustCall(ctx, t, cs, "echo", "call-env-1", "run-env", map[string]any{"text": "hi"}); !o.ready {
		t.Fatalf("echo: %s\n%s", o.text, stderr)
	}
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	for k, v := range planted {
		if strings.Contains(string(b), v) {
			t.Errorf("the upstream was given %s", k)
		}
	}
	allowed := []string{"PATH", "HOME", "LANG", "TMPDIR", "PASSED_ON", "UPSTREAM_ENVFILE", "PWD"}
	for k := range got {
		if !slices.Contains(allowed, k) {
			t.Errorf("the upstream was given %s", k)
		}
	}
	want := map[string]string{"PATH": os.Getenv("PATH"), "LANG": "C.UTF-8", "PASSED_ON": "asked-for", "UPSTREAM_ENVFILE": envFile}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// "./kb-server" is the one next to the configuration file, from whatever
// directory the gateway starts; a program of the same name on PATH never
// runs.
func TestRelativeCommandFromAnyDirectory(t *testing.T) {
	_, up := binaries(t)
	root := t.TempDir()
	cfgDir, elsewhere, decoyDir := filepath.Join(root, "conf"), filepath.Join(root, "elsewhere"), filepath.Join(root, "bin")
	for _, d := range []string{cfgDir, elsewhere, decoyDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(up, filepath.Join(cfgDir, "kb-server")); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(root, "decoy-ran")
	decoy := "#!/bin/sh\necho decoy >> " + marker + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(decoyDir, "kb-server"), []byte(decoy), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", decoyDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	cfg := baseConfig(t, map[string]any{"command": []string{"./kb-server"}}, "echo")
	path := cfg.write(t, cfgDir)
	fromElsewhere, err := filepath.Rel(elsewhere, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, config string }{{cfgDir, "gateway.json"}, {elsewhere, fromElsewhere}, {"/", path}} {
		t.Run(c.dir, func(t *testing.T) {
			cs, stderr := stdioGatewayIn(t, c.dir, c.config)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if o := mustCall(ctx, t, cs, "echo", "call-rel-1", "run-rel", map[string]any{"text": "hi"}); !o.ready {
				t.Errorf("echo from %s with --config %s: %s\n%s", c.dir, c.config, o.text, stderr)
			}
		})
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the decoy on PATH ran (%v)", err)
	}
}
