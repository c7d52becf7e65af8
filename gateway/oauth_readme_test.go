package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
)

// The README's OAuth example works as written: its grants and http member,
// put in the README's configuration, pass `gateway check` with the line it
// shows, and the gateway answers its two curl commands as it shows.
func TestReadmeOAuth(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(b), "## Put toolcanon in front of your MCP servers")
	section, _, _ = strings.Cut(section, "\n## ")
	_, full, _ := strings.Cut(section, "```json\n")
	full, _, _ = strings.Cut(full, "```")
	_, oauth, _ := strings.Cut(section, "**OAuth 2.1.**")
	oauth, _, _ = strings.Cut(oauth, "**How an agent passes its ids.**")
	_, fragment, _ := strings.Cut(oauth, "```json\n")
	fragment, _, _ = strings.Cut(fragment, "```")
	_, shell, _ := strings.Cut(oauth, "```sh\n")
	shell, _, _ = strings.Cut(shell, "```")

	var doc, members map[string]json.RawMessage
	if err := json.Unmarshal([]byte(full), &doc); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte("{"+fragment+"}"), &members); err != nil {
		t.Fatalf("the README's OAuth fragment: %v", err)
	}
	for k, v := range members {
		doc[k] = v
	}
	dir := t.TempDir()
	cfgBytes, _ := json.Marshal(doc)
	if err := os.WriteFile(filepath.Join(dir, "gateway.json"), cfgBytes, 0o600); err != nil {
		t.Fatal(err)
	}

	// shows returns the "# " line after the command that starts with cmd:
	// what the README says it prints.
	lines := strings.Split(strings.TrimSpace(shell), "\n")
	shows := func(cmd string) string {
		for i := 0; i+1 < len(lines); i++ {
			if strings.HasPrefix(lines[i], cmd) && strings.HasPrefix(lines[i+1], "# ") {
				return strings.TrimPrefix(lines[i+1], "# ")
			}
		}
		t.Fatalf("the README shows no output of %s", cmd)
		return ""
	}
	bin, _ := binaries(t)
	cmd := exec.Command(bin, "gateway", "check", "--config", "gateway.json")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != shows("toolcanon gateway check") {
		t.Errorf("gateway check: %v\n%s\nthe README shows\n%s", err, out, shows("toolcanon gateway check"))
	}

	cfg, err := gateway.LoadConfig(filepath.Join(dir, "gateway.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOGS_TOKEN", "upstream-token")
	g, err := gateway.Open(context.Background(), cfg, memstore.New(), gateway.OpenOptions{ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := "WWW-Authenticate: " + resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || got != shows("curl -si -X POST") {
		t.Errorf("POST /mcp: %d %s, the README shows %s", resp.StatusCode, got, shows("curl -si -X POST"))
	}
	path := regexp.MustCompile(`http://127\.0\.0\.1:8080(/\.well-known/\S+)`).FindStringSubmatch(shell)
	if path == nil {
		t.Fatal("the README fetches no metadata")
	}
	resp, err = http.Get(srv.URL + path[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(body)) != shows("curl -s http") {
		t.Errorf("the metadata: %s\nthe README shows %s", body, shows("curl -s http"))
	}
}
