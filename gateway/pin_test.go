package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/gateway"
)

// Pinning again keeps what the operator wrote for a tool that still matches
// its pin, drafts a changed tool afresh, and keeps the file's own
// identity and policy.
func TestPinAgainKeepsReviewedEntries(t *testing.T) {
	_, up := binaries(t)
	ds := upstreamDrafts(t)
	search, echo := ds["search"], ds["echo"]
	search.Upstream, echo.Upstream = "up", "up"
	search.Name = "kb_search" // the operator's own name
	echo.Pin = "sha256:" + strings.Repeat("0", 64)
	file := mustMarshal(t, map[string]any{
		"upstreams": map[string]any{"up": map[string]any{"command": []string{up}}},
		"identity":  map[string]any{"project": "support", "principal": "agent-1"},
		"tools":     []any{search, echo},
		"policy":    map[string]any{"grants": []any{map[string]any{"principals": []string{"agent-1"}, "projects": []string{"support"}, "allow": []string{"tool.call:up.search"}}}},
	})
	path := filepath.Join(t.TempDir(), "gateway.json")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := gateway.LoadPinConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	drafts, err := gateway.Drafts(ctx, cfg, gateway.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := gateway.DraftConfig(file, drafts)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Identity map[string]any       `json:"identity"`
		Policy   json.RawMessage      `json:"policy"`
		Tools    []gateway.DraftEntry `json:"tools"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	byTool := map[string]gateway.DraftEntry{}
	for _, e := range doc.Tools {
		byTool[e.UpstreamTool] = e
	}
	if byTool["search"].Name != "kb_search" {
		t.Errorf("the matching entry was not kept: %+v", byTool["search"])
	}
	if byTool["echo"].Pin != ds["echo"].Pin || byTool["echo"].Name != "echo" {
		t.Errorf("the changed entry was not drafted again: %+v", byTool["echo"])
	}
	if len(doc.Tools) != len(ds) || doc.Identity["principal"] != "agent-1" || !strings.Contains(string(doc.Policy), `"agent-1"`) {
		t.Errorf("%d tools, identity %v, policy %s", len(doc.Tools), doc.Identity, doc.Policy)
	}
}
