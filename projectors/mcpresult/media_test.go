package mcpresult_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/mcpresult"
)

// mediaResult has a text, a small allowed image, an audio clip, an image
// over the budget, one of a type not allowed, a resource link, an embedded
// text resource with secrets and an embedded blob.
const mediaResult = `{"content":[{"type":"text","text":"a chart"},
{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="},
{"type":"audio","mimeType":"audio/wav","data":"UklGRg=="},
{"type":"image","mimeType":"image/png","data":"` + "AAAA" + `"},
{"type":"image","mimeType":"image/svg+xml","data":"PHN2Zy8+"},
{"type":"resource_link","uri":"file:///reports/q3.pdf","name":"q3.pdf","mimeType":"application/pdf"},
{"type":"resource","resource":{"uri":"file:///notes.txt","mimeType":"text/plain","text":"notes: password=hunter2 on db01.internal"}},
{"type":"resource","resource":{"uri":"file:///blob.bin","blob":"AQID"}},
{"type":"video","data":"x"}]}`

type mediaProjection struct {
	Content     json.RawMessage  `json:"content"`
	Attachments []map[string]any `json:"attachments"`
	Withheld    []map[string]any `json:"withheld"`
	Media       []string         `json:"media"`
	Truncated   bool             `json:"truncated"`
}

func projectMedia(t *testing.T, m mcpresult.Media, raw string) (mediaProjection, canonical.Evidence, []byte) {
	t.Helper()
	cfg := mcpresult.DefaultConfig()
	cfg.Media = m
	p, err := mcpresult.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Project(context.Background(), projectors.Call{ToolCallID: "call_m"}, []byte(raw))
	if err != nil {
		t.Fatalf("project: %v", err)
	}
	if !projectors.Valid(out.Result) {
		t.Fatalf("not JSON: %s", out.Result)
	}
	if max := cfg.Limits.Total + m.MaxBytes + mcpresult.MaxBlocks*1024; len(out.Result) > max {
		t.Fatalf("%d bytes, over %d", len(out.Result), max)
	}
	var got mediaProjection
	if err := json.Unmarshal(out.Result, &got); err != nil {
		t.Fatal(err)
	}
	return got, out.Evidence, out.Result
}

func reasons(ws []map[string]any) map[string]string {
	out := map[string]string{}
	for _, w := range ws {
		key, _ := w["mimeType"].(string)
		if u, ok := w["uri"].(string); ok {
			key = u
		}
		if key == "" {
			key, _ = w["type"].(string)
		}
		out[key], _ = w["reason"].(string)
	}
	return out
}

// Images and audio pass within the budget and the allow-list, links as
// links, text resources redacted, blobs as links; everything else is named
// in "withheld" with its reason.
func TestMediaPassOrAreNamed(t *testing.T) {
	got, ev, raw := projectMedia(t, mcpresult.Media{MaxBytes: 22}, mediaResult)
	if ev != canonical.EvidenceFound || string(got.Content) != `"a chart"` || !got.Truncated {
		t.Fatalf("evidence %s content %s truncated %v", ev, got.Content, got.Truncated)
	}
	if strings.Contains(string(raw), "hunter2") || strings.Contains(string(raw), "db01.internal") {
		t.Fatalf("a secret passed: %s", raw)
	}
	want := []string{"image", "audio", "resource_link", "resource", "resource_link"}
	if len(got.Attachments) != len(want) {
		t.Fatalf("attachments %v", got.Attachments)
	}
	for i, a := range got.Attachments {
		if a["type"] != want[i] {
			t.Fatalf("attachment %d: %v, want %s", i, a, want[i])
		}
	}
	if got.Media[0] != "iVBORw0KGgo=" || got.Media[1] != "UklGRg==" || len(got.Media) != 2 {
		t.Fatalf("media %v", got.Media)
	}
	if got.Attachments[0]["media"] != 0.0 || got.Attachments[1]["media"] != 1.0 {
		t.Fatalf("media indexes %v", got.Attachments)
	}
	r := reasons(got.Withheld)
	if r["image/png"] != "over_budget" || r["image/svg+xml"] != "mime_not_allowed" || r["file:///blob.bin"] != "blob_sent_as_link" || r["video"] != "malformed" && r["video"] != "unknown_type" {
		t.Fatalf("withheld %v", got.Withheld)
	}

	// No media budget: every image and audio clip is named, links pass.
	got, _, _ = projectMedia(t, mcpresult.Media{}, mediaResult)
	if len(got.Media) != 0 || len(got.Attachments) != 3 {
		t.Fatalf("no budget: attachments %v media %v", got.Attachments, got.Media)
	}
	// An image alone, withheld: no evidence, and still named.
	got, ev, _ = projectMedia(t, mcpresult.Media{}, `{"content":[{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}]}`)
	if ev != canonical.NoEvidence || len(got.Withheld) != 1 || got.Withheld[0]["reason"] != "over_budget" {
		t.Fatalf("image alone: %s %v", ev, got.Withheld)
	}
	if _, err := mcpresult.New(mcpresult.Config{Limits: projectors.DefaultLimits(), Media: mcpresult.Media{MIMETypes: []string{"text/html"}}}); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
		t.Fatalf("a text type in the media list: %v", err)
	}
}
