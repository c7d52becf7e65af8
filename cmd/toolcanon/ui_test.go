package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/internal/redistest"
)

func TestUIUsageAndOpenListener(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("tooshort\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		out  string
	}{
		{[]string{"ui"}, "--redis is required"},
		{[]string{"ui", "--redis", "127.0.0.1:1", "--cluster", "--standalone"}, "exclude each other"},
		{[]string{"ui", "--redis", "127.0.0.1:1", "--live-interval", "10ms"}, "--live-interval must be at least"},
		{[]string{"ui", "--redis", "127.0.0.1:1", "--listen", "0.0.0.0:0"}, "refusing to serve 0.0.0.0:0 without authentication"},
		{[]string{"ui", "--redis", "127.0.0.1:1", "--listen", ":7474"}, "refusing to serve :7474"},
		{[]string{"ui", "--redis", "127.0.0.1:1", "--token-file", short}, "at least 16 characters"},
		{[]string{"ui", "--redis", "127.0.0.1:1", "--session-ttl", "1s"}, "--session-ttl in 1m..720h"},
		{[]string{"ui", "--redis", "127.0.0.1:1", "--trusted-proxy", "10.0.0.0/8,proxy.example"}, `--trusted-proxy: "proxy.example" is neither`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(c.args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), c.out) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr.String(), exitUsage, c.out)
		}
	}
}

// TestUIServesLoopbackNamesOnly serves a Redis store on a loopback port and
// asks for its runs by the loopback address and by another name.
func TestUIServesLoopbackNamesOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- uiServe(ctx, []string{"ui", "--redis", redistest.Addr(t), "--listen", "127.0.0.1:0"}[1:], &stdout, &stderr)
	}()
	defer func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("exit %d: %s", code, stderr.String())
		}
	}()
	addr := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/`)
	var m []string
	for deadline := time.Now().Add(10 * time.Second); m == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		m = addr.FindStringSubmatch(stdout.String())
	}
	if m == nil {
		t.Fatalf("no URL printed: %q %q", stdout.String(), stderr.String())
	}
	res, err := http.Get("http://" + m[1] + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("runs page: %d %v", res.StatusCode, res.Header)
	}
	req, _ := http.NewRequest("GET", "http://"+m[1]+"/", nil)
	req.Host = "rebound.example"
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("another host name: %d", res.StatusCode)
	}
}
