package mcpresult_test

import (
	"context"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/mcpresult"
)

// FuzzProject: whatever an upstream answers, the projection is valid UTF-8
// JSON within the total budget, or an error with a stable code.
func FuzzProject(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"hello 10.0.0.1"}]}`), uint16(300))
	f.Add([]byte(`{"content":[],"structuredContent":{"a":[1,{"b":"\ud800"}],"password":"x"}}`), uint16(256))
	f.Add([]byte(`{"content":[{"type":"text","text":"[{\"k\":\"v\\u00e9\"}]"}]}`), uint16(1000))
	f.Add([]byte(`{"content":[{"type":"image","data":"AA=="},{"type":"text","text":"\u65e5\u672c"}],"isError":false}`), uint16(400))
	f.Add([]byte(mediaResult), uint16(600))
	f.Add([]byte(`{"content":[{"type":"resource","resource":{"uri":"u","text":"\\u00"}},{"type":"image","mimeType":"image/png","data":"@@"}]}`), uint16(256))
	f.Fuzz(func(t *testing.T, raw []byte, total uint16) {
		tot := int(total)%4096 + projectors.MinTotal
		lim := projectors.Limits{Total: tot, Collection: tot/2 + 32, Item: tot/4 + 16, Items: 5, Text: tot/8 + 1}
		media := mcpresult.Media{MaxBytes: tot}
		p, err := mcpresult.New(mcpresult.Config{Limits: lim, MaxDepth: 4, MaxMembers: 8, Media: media})
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Project(context.Background(), projectors.Call{ToolCallID: "call_1"}, raw)
		if err != nil {
			if !canonical.CodeOf(err).Valid() {
				t.Fatalf("error without a stable code: %v", err)
			}
			return
		}
		// Blocks other than text have their own room (Media).
		if bound := tot + media.MaxBytes + mcpresult.MaxBlocks*768 + 64; len(out.Result) > bound || !json.Valid(out.Result) || !utf8.Valid(out.Result) || !out.Evidence.Ready() {
			t.Fatalf("%s %d bytes (budget %d): %q", out.Evidence, len(out.Result), bound, out.Result)
		}
	})
}
