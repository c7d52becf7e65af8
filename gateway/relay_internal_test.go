package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzAgentText: whatever text an upstream puts in a progress or log
// message, the agent gets valid UTF-8 of at most MaxRelayedText bytes with
// the planted password redacted.
func FuzzAgentText(f *testing.F) {
	for _, s := range []string{"step 1, password=hunter2", strings.Repeat("é", 4000), strings.Repeat("a ", 3000) + "password=hunter2",
		"\xff\xfe password=hunter2", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := (*relay)(nil).text(s+" password=hunter2", MaxRelayedText)
		if len(out) > MaxRelayedText || (utf8.ValidString(s) && !utf8.ValidString(out)) {
			t.Fatalf("%d bytes, valid %v: %q", len(out), utf8.ValidString(out), out)
		}
		if len(s) < 1024 && !strings.Contains(s, "hunter2") && strings.Contains(out, "hunter2") {
			t.Fatalf("the password passed: %q", out)
		}
	})
}

// FuzzAgentRequests: whatever sampling or elicitation request an upstream
// sends, the agent gets each text as valid UTF-8 within its bound, the
// planted password redacted, and no _meta; an elicitation's schema stays
// within its bound or the request is refused.
func FuzzAgentRequests(f *testing.F) {
	f.Add("step 1, password=hunter2", `{"type":"object","properties":{"a":{"type":"string","description":"password=hunter2"}}}`, 3)
	f.Add(strings.Repeat("é", 9000), `[1,2,{"title":"x"}]`, 20)
	f.Add("\xff\xfe", `"just a string"`, 0)
	f.Fuzz(func(t *testing.T, text, schema string, n int) {
		n = n % 32
		if n < 0 {
			n = -n
		}
		msgs := make([]*mcp.SamplingMessage, n)
		for i := range msgs {
			msgs[i] = &mcp.SamplingMessage{Role: "user", Content: &mcp.TextContent{Text: text + " password=hunter2"}}
		}
		if n > 0 {
			msgs[0].Content = &mcp.ImageContent{Data: []byte(text), MIMEType: "image/png"}
		}
		q, why := (*relay)(nil).agentSampling(&mcp.CreateMessageParams{Messages: msgs, SystemPrompt: text, Metadata: text,
			StopSequences: []string{text, text}, Meta: mcp.Meta{"k": text}})
		switch {
		case n > MaxRelayedMessages:
			if why == "" {
				t.Fatalf("%d messages passed", n)
			}
		case why != "":
			t.Fatalf("refused: %s", why)
		default:
			if q.Meta != nil || q.Metadata != nil || len(q.SystemPrompt) > MaxRelayedRequestText || len(q.Messages) != n {
				t.Fatalf("sampling request: %+v", q)
			}
			for _, m := range q.Messages {
				tc, ok := m.Content.(*mcp.TextContent)
				if !ok || len(tc.Text) > MaxRelayedRequestText || (utf8.ValidString(text) && !utf8.ValidString(tc.Text)) ||
					len(text) < 1024 && !strings.Contains(text, "hunter2") && strings.Contains(tc.Text, "hunter2") {
					t.Fatalf("message %T %+v", m.Content, m.Content)
				}
			}
		}
		var raw any
		if json.Unmarshal([]byte(schema), &raw) != nil {
			raw = schema
		}
		e, why := (*relay)(nil).agentElicit(&mcp.ElicitParams{Message: text, RequestedSchema: raw, Meta: mcp.Meta{"k": text}})
		if why != "" {
			if b, _ := json.Marshal(raw); len(b) <= maxRelayedSchemaBytes/4 {
				t.Fatalf("a schema of %d bytes refused: %s", len(b), why)
			}
			return
		}
		b, _ := json.Marshal(e.RequestedSchema)
		if e.Meta != nil || len(e.Message) > MaxRelayedRequestText || len(b) > 2*maxRelayedSchemaBytes {
			t.Fatalf("elicitation: %+v", e)
		}
	})
}
