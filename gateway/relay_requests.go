package gateway

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of an upstream's sampling or elicitation request as an agent gets
// it. Its text is a third party's, so it passes the projections' redactor,
// as log and progress messages do.
const (
	// MaxRelayedRequestText bounds one text of a relayed sampling or
	// elicitation request (a message, the system prompt), after redaction.
	MaxRelayedRequestText = 4096
	// MaxRelayedMessages bounds the messages of a relayed sampling request;
	// a request with more is refused.
	MaxRelayedMessages = 16
	// maxRelayedSchemaBytes bounds an elicitation's requested schema; a
	// larger one is refused.
	maxRelayedSchemaBytes = 8 << 10
	// maxRelayedHints bounds stop sequences and model hints, each cut to
	// maxRelayedHintBytes.
	maxRelayedHints     = 8
	maxRelayedHintBytes = 64
)

// agentSampling is an upstream's sampling request as the agent gets it:
// at most MaxRelayedMessages messages (else refused, with the reason),
// each text redacted and cut to MaxRelayedRequestText, any other content
// withheld (named in its place), the system prompt likewise, at most 8
// stop sequences and model hints of 64 bytes; no context of other servers
// asked for, no provider metadata and no _meta.
func (r *relay) agentSampling(p *mcp.CreateMessageParams) (*mcp.CreateMessageParams, string) {
	if p == nil {
		return nil, "the request has no parameters"
	}
	if len(p.Messages) > MaxRelayedMessages {
		return nil, "the request holds more messages than the gateway passes on"
	}
	q := &mcp.CreateMessageParams{MaxTokens: p.MaxTokens, Temperature: p.Temperature,
		SystemPrompt: r.text(p.SystemPrompt, MaxRelayedRequestText)}
	for _, m := range p.Messages {
		if m == nil {
			continue
		}
		q.Messages = append(q.Messages, &mcp.SamplingMessage{Role: m.Role, Content: r.agentContent(m.Content)})
	}
	for _, s := range p.StopSequences[:min(len(p.StopSequences), maxRelayedHints)] {
		q.StopSequences = append(q.StopSequences, r.text(s, maxRelayedHintBytes))
	}
	if mp := p.ModelPreferences; mp != nil {
		q.ModelPreferences = &mcp.ModelPreferences{CostPriority: mp.CostPriority, SpeedPriority: mp.SpeedPriority,
			IntelligencePriority: mp.IntelligencePriority}
		for _, h := range mp.Hints[:min(len(mp.Hints), maxRelayedHints)] {
			if h != nil {
				q.ModelPreferences.Hints = append(q.ModelPreferences.Hints, &mcp.ModelHint{Name: r.text(h.Name, maxRelayedHintBytes)})
			}
		}
	}
	return q, ""
}

// agentContent is one content block of a relayed sampling message: text
// redacted and bounded; anything else (an image, audio) withheld, since
// the redactor cannot read it, and named in its place.
func (r *relay) agentContent(c mcp.Content) mcp.Content {
	switch c := c.(type) {
	case *mcp.TextContent:
		return &mcp.TextContent{Text: r.text(c.Text, MaxRelayedRequestText)}
	case nil:
		return &mcp.TextContent{}
	}
	return &mcp.TextContent{Text: "[content withheld by the gateway: only text is passed on]"}
}

// agentElicit is an upstream's elicitation request as the agent gets it:
// its message redacted and cut to MaxRelayedRequestText, its requested
// schema at most 8 KiB (else refused) with every title and description
// redacted and cut to MaxRelayedText (at most 16 KiB then); no _meta. A URL elicitation is
// refused: its URL is a third party's, which the gateway can neither
// redact nor pass on unread.
func (r *relay) agentElicit(p *mcp.ElicitParams) (*mcp.ElicitParams, string) {
	if p == nil {
		return nil, "the request has no parameters"
	}
	if p.Mode == "url" || p.URL != "" || p.ElicitationID != "" {
		return nil, "the gateway does not pass on URL elicitations"
	}
	q := &mcp.ElicitParams{Mode: p.Mode, Message: r.text(p.Message, MaxRelayedRequestText)}
	if p.RequestedSchema != nil {
		b, err := json.Marshal(p.RequestedSchema)
		if err != nil || len(b) > maxRelayedSchemaBytes {
			return nil, "the requested schema is not JSON of at most 8 KiB"
		}
		var schema any
		if json.Unmarshal(b, &schema) != nil {
			return nil, "the requested schema is not JSON of at most 8 KiB"
		}
		q.RequestedSchema = r.redactSchema(schema)
		// Redaction may lengthen a text ("<SECRET>"): bounded again.
		if b, err := json.Marshal(q.RequestedSchema); err != nil || len(b) > 2*maxRelayedSchemaBytes {
			return nil, "the requested schema is not JSON of at most 8 KiB"
		}
	}
	return q, ""
}

// redactSchema redacts and bounds every title and description of a
// decoded JSON schema, in place, and returns it.
func (r *relay) redactSchema(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "title" || k == "description") {
				v[k] = r.text(s, MaxRelayedText)
			} else {
				v[k] = r.redactSchema(x)
			}
		}
	case []any:
		for i, x := range v {
			v[i] = r.redactSchema(x)
		}
	}
	return v
}
