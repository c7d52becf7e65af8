package gateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/projectors/mcpresult"
)

// Bounds of one prompt or resource result besides its text and media
// budgets.
const (
	maxSurfaceItems = 64 // messages of a prompt, contents of a resource
	// MetaTruncated is the _meta key a prompt or resource result carries,
	// true, when the gateway cut or withheld part of it.
	MetaTruncated = "io.github.toolcanon/truncated"
)

// listTTL is the ttlMs of every list the gateway answers: a client may
// reuse a list that long. Lists are each principal's own, so their
// cacheScope is private.
const listTTL = 30 * time.Second

func cacheable(c *mcp.Cacheable) {
	c.TTLMs = int(listTTL / time.Millisecond)
	c.CacheScope = "private"
}

// redactedText is a third party's text as an agent may read it, outside
// any call: relay.text with no call's handles (canonical.Placeholders),
// cut to limit bytes.
func redactedText(s string, limit int) string {
	if s == "" || limit <= len("…") {
		return ""
	}
	var outside *relay
	return outside.text(s, limit)
}

// budget is what one result may still pass: text bytes (after redaction)
// and base64 media bytes.
type budget struct {
	text, media int
	types       []string // media types allowed
	cut         bool     // something was cut or withheld
}

func newBudget(l SurfaceLimits) *budget {
	types := l.Media.MIMETypes
	if types == nil {
		types = mcpresult.DefaultMIMETypes
	}
	return &budget{text: l.text(), media: l.Media.MaxBytes, types: types}
}

// takeText returns s redacted and cut to what is left of the text budget.
func (b *budget) takeText(s string) string {
	if s == "" {
		return ""
	}
	if b.text <= len("…") {
		b.cut = true
		return ""
	}
	out := redactedText(s, b.text)
	if strings.HasSuffix(out, "…") && !strings.HasSuffix(s, "…") {
		b.cut = true
	}
	b.text -= len(out)
	return out
}

// takeMedia reports whether data of the MIME type may pass, counting it;
// else why not.
func (b *budget) takeMedia(mime string, data []byte) (ok bool, why string) {
	n := (len(data) + 2) / 3 * 4
	switch {
	case !slices.Contains(b.types, strings.ToLower(mime)):
		return false, "mime_not_allowed"
	case n > b.media:
		return false, "over_budget"
	}
	b.media -= n
	return true, ""
}

// withheld is the text that stands for what did not pass.
func (b *budget) withheld(kind, mime string, size int, why string) *mcp.TextContent {
	b.cut = true
	return &mcp.TextContent{Text: fmt.Sprintf("[toolcanon withheld %s (%s, %d bytes): %s]", kind, cutText(mime, 128), size, why)}
}

// content passes one content block within the budget: text redacted and
// cut, images and audio of an allowed type within the media budget, links
// as links, an embedded resource's text redacted and a binary one as a
// link to it; anything else is withheld.
func (b *budget) content(c mcp.Content) mcp.Content {
	switch c := c.(type) {
	case *mcp.TextContent:
		return &mcp.TextContent{Text: b.takeText(c.Text)}
	case *mcp.ImageContent:
		if ok, why := b.takeMedia(c.MIMEType, c.Data); !ok {
			return b.withheld("an image", c.MIMEType, len(c.Data), why)
		}
		return &mcp.ImageContent{Data: c.Data, MIMEType: c.MIMEType}
	case *mcp.AudioContent:
		if ok, why := b.takeMedia(c.MIMEType, c.Data); !ok {
			return b.withheld("audio", c.MIMEType, len(c.Data), why)
		}
		return &mcp.AudioContent{Data: c.Data, MIMEType: c.MIMEType}
	case *mcp.ResourceLink:
		return &mcp.ResourceLink{URI: cutText(c.URI, maxURIBytes), Name: cutText(c.Name, 256), Title: redactedText(c.Title, 256),
			Description: redactedText(c.Description, 1024), MIMEType: cutText(c.MIMEType, 128)}
	case *mcp.EmbeddedResource:
		if c.Resource == nil {
			return b.withheld("a resource", "", 0, "malformed")
		}
		return &mcp.EmbeddedResource{Resource: b.contents(c.Resource)}
	}
	return b.withheld("a content block", fmt.Sprintf("%T", c), 0, "unknown_type")
}

// contents passes one resource's contents: its text redacted and cut, a
// blob of an allowed image or audio type within the media budget; another
// blob becomes a text naming what was withheld, under the same URI.
func (b *budget) contents(rc *mcp.ResourceContents) *mcp.ResourceContents {
	out := &mcp.ResourceContents{URI: cutText(rc.URI, maxURIBytes), MIMEType: cutText(rc.MIMEType, 128)}
	switch {
	case rc.Blob != nil:
		if ok, why := b.takeMedia(rc.MIMEType, rc.Blob); !ok {
			out.MIMEType = "text/plain"
			out.Text = b.withheld("a blob", rc.MIMEType, len(rc.Blob), why).Text
			return out
		}
		out.Blob = rc.Blob
	default:
		out.Text = b.takeText(rc.Text)
	}
	return out
}

// projectPrompt is an upstream's prompt as the agent gets it.
func projectPrompt(res *mcp.GetPromptResult, l SurfaceLimits) *mcp.GetPromptResult {
	b := newBudget(l)
	out := &mcp.GetPromptResult{Description: redactedText(res.Description, 1024), Messages: []*mcp.PromptMessage{}}
	for i, m := range res.Messages {
		if i == maxSurfaceItems {
			b.cut = true
			break
		}
		if m == nil || m.Content == nil {
			continue
		}
		out.Messages = append(out.Messages, &mcp.PromptMessage{Role: m.Role, Content: b.content(m.Content)})
	}
	if b.cut {
		out.Meta = mcp.Meta{MetaTruncated: true}
	}
	return out
}

// projectResource is an upstream's resource as the agent gets it.
func projectResource(res *mcp.ReadResourceResult, l SurfaceLimits) *mcp.ReadResourceResult {
	b := newBudget(l)
	// The principal's own, as every answer of the gateway; read again each
	// time (ttlMs 0): a resource may change at any time.
	out := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{}, Cacheable: mcp.Cacheable{CacheScope: "private"}}
	for i, rc := range res.Contents {
		if i == maxSurfaceItems {
			b.cut = true
			break
		}
		if rc != nil {
			out.Contents = append(out.Contents, b.contents(rc))
		}
	}
	if b.cut {
		out.Meta = mcp.Meta{MetaTruncated: true}
	}
	return out
}

// maxCompletionValueBytes bounds one completion value.
const maxCompletionValueBytes = 512

// projectCompletion is an upstream's completion as the agent gets it: at
// most 100 values, each redacted and cut.
func projectCompletion(res *mcp.CompleteResult) *mcp.CompleteResult {
	out := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}, Total: res.Completion.Total, HasMore: res.Completion.HasMore}}
	for i, v := range res.Completion.Values {
		if i == maxCompletionValues {
			out.Completion.HasMore = true
			break
		}
		out.Completion.Values = append(out.Completion.Values, redactedText(v, maxCompletionValueBytes))
	}
	return out
}

func jsonMarshal(v any) (json.RawMessage, error) { return json.Marshal(v) }
