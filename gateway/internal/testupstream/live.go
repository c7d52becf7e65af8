package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools of what an MCP client expects beyond a result:
//
//   - wait: blocks until cancelled (logging "cancelled <query>") or ms pass;
//   - progress: sends steps progress notifications when the call carries a
//     progress token (each message holds a planted secret), then answers
//     "progress <token kind>";
//   - media: an image, an audio clip, a resource link, an embedded text
//     resource (with a secret) and an embedded blob;
//   - chatty: sends 30 info log notifications (with a secret);
//   - note: sends three log notifications naming its query, the last just
//     before it answers;
//   - sample, elicit: ask the client for a model completion or for input,
//     and answer with what came back or the error;
//   - background: answers at once, and logs "finished background work for
//     query <query>" ms later, when the call is long answered;
//   - confirm: asks the client's user in its result (input_required, a
//     multi round-trip request) with its query as the message, and answers
//     with what came back and the state it echoed (the SDK asks a client
//     of an earlier revision with a request instead).
func addLiveTools(s *mcp.Server) {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	msProp := `"ms":{"type":"integer","minimum":0,"maximum":600000}`
	s.AddTool(&mcp.Tool{Name: "wait", Description: "Wait until cancelled.", InputSchema: schema(queryProp+","+msProp, "query"), Annotations: ro},
		handler("wait", func(ctx context.Context, a args) (*mcp.CallToolResult, error) {
			ms := a.MS
			if ms == 0 {
				ms = 60000
			}
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
				return text("waited"), nil
			case <-ctx.Done():
				record("cancelled", a.Query)
				return nil, ctx.Err()
			}
		}))
	s.AddTool(&mcp.Tool{Name: "progress", Description: "Report progress.", InputSchema: schema(`"steps":{"type":"integer","minimum":1,"maximum":1000}`, "steps"), Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct {
				Steps int `json:"steps"`
			}
			if err := jsonArgs(req, &a); err != nil {
				return nil, err
			}
			tok := req.Params.GetProgressToken()
			record("progress", fmt.Sprintf("%d token=%T", a.Steps, tok))
			if tok != nil {
				for i := 1; i <= a.Steps; i++ {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok,
						Progress: float64(i), Total: float64(a.Steps), Message: fmt.Sprintf("step %d of %d, password=hunter2 from 10.251.73.220", i, a.Steps)})
				}
			}
			return text("done"), nil
		})
	s.AddTool(&mcp.Tool{Name: "media", Description: "Return media.", InputSchema: schema(queryProp, "query"), Annotations: ro},
		handler("media", func(context.Context, args) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a chart and a recording"},
				&mcp.ImageContent{Data: pngPixel, MIMEType: "image/png"},
				&mcp.AudioContent{Data: []byte("RIFF....WAVEfmt "), MIMEType: "audio/wav"},
				&mcp.ImageContent{Data: make([]byte, 64<<10), MIMEType: "image/png"},
				&mcp.ImageContent{Data: []byte("<svg/>"), MIMEType: "image/svg+xml"},
				&mcp.ResourceLink{URI: "file:///reports/q3.pdf", Name: "q3.pdf", MIMEType: "application/pdf"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain",
					Text: "notes: password=hunter2 on db01.internal"}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///blob.bin", MIMEType: "application/octet-stream",
					Blob: []byte{1, 2, 3}}},
			}}, nil
		}))
	s.AddTool(&mcp.Tool{Name: "chatty", Description: "Log while working.", InputSchema: schema(queryProp, "query"), Annotations: ro},
		withSession("chatty", func(ctx context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
			for i := range 30 {
				_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "upstream",
					Data: fmt.Sprintf("working %d on %s, password=hunter2", i, a.Query)})
			}
			return text("logged"), nil
		}))
	s.AddTool(&mcp.Tool{Name: "note", Description: "Log three notes.", InputSchema: schema(queryProp, "query"), Annotations: ro},
		withSession("note", func(ctx context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
			for i := range 3 {
				_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "upstream",
					Data: fmt.Sprintf("note %d of 3 on %s", i+1, a.Query)})
			}
			return text("noted"), nil
		}))
	s.AddTool(&mcp.Tool{Name: "background", Description: "Start background work.", InputSchema: schema(queryProp+","+msProp, "query"), Annotations: ro},
		withSession("background", func(_ context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
			go func() {
				time.Sleep(time.Duration(a.MS) * time.Millisecond)
				_ = req.Session.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Logger: "upstream",
					Data: fmt.Sprintf("finished background work for query %q", a.Query)})
			}()
			return text("started"), nil
		}))
	padProp := `"size_kib":{"type":"integer","minimum":0,"maximum":64}`
	s.AddTool(&mcp.Tool{Name: "sample", Description: "Ask the client's model.", InputSchema: schema(queryProp+","+padProp, "query"), Annotations: ro},
		withSession("sample", func(ctx context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 64,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: padded(a)}}}})
			if err != nil {
				return text("sampling refused: " + err.Error()), nil
			}
			t, _ := res.Content.(*mcp.TextContent)
			if t == nil {
				return text("sampled: (not text)"), nil
			}
			return text("sampled: " + t.Text), nil
		}))
	s.AddTool(&mcp.Tool{Name: "elicit", Description: "Ask the client's user.", InputSchema: schema(queryProp+","+padProp, "query"), Annotations: ro},
		withSession("elicit", func(ctx context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: padded(a),
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}})
			if err != nil {
				return text("elicitation refused: " + err.Error()), nil
			}
			return text(fmt.Sprintf("elicited: %s %v", res.Action, res.Content["answer"])), nil
		}))
	s.AddTool(&mcp.Tool{Name: "aside", Description: "Ask the client's user, on the session's own stream.", InputSchema: schema(queryProp, "query"), Annotations: ro},
		withSession("aside", func(ctx context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
			// A context not of the call: over streamable HTTP the request
			// goes on the session's own stream, tied to no call.
			actx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := req.Session.Elicit(actx, &mcp.ElicitParams{Message: a.Query,
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}})
			if err != nil {
				return text("elicitation refused: " + err.Error()), nil
			}
			return text(fmt.Sprintf("elicited aside: %s %v", res.Action, res.Content["answer"])), nil
		}))
	s.AddTool(&mcp.Tool{Name: "confirm", Description: "Ask the client's user in the result.", InputSchema: schema(queryProp, "query"), Annotations: ro},
		withSession("confirm", func(_ context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
			p := req.Params
			if p.RequestState == "" {
				return &mcp.CallToolResult{RequestState: "asked " + a.Query, InputRequests: mcp.InputRequestMap{
					"answer": &mcp.ElicitParams{Message: a.Query,
						RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}},
				}}, nil
			}
			res, ok := p.InputResponses["answer"].(*mcp.ElicitResult)
			if !ok || p.RequestState != "asked "+a.Query {
				return text(fmt.Sprintf("confirm: no answer for the state %q", p.RequestState)), nil
			}
			return text(fmt.Sprintf("confirmed: %s %v", res.Action, res.Content["answer"])), nil
		}))
}

// padded is a's query followed by size_kib KiB of text.
func padded(a args) string {
	return a.Query + strings.Repeat(" more text", a.SizeKiB*1024/10)
}

// pngPixel is a 1x1 PNG.
var pngPixel = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// withSession is handler for tools that talk back to the client through
// the request's session.
func withSession(name string, f func(ctx context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a args
		if err := jsonArgs(req, &a); err != nil {
			return nil, err
		}
		record(name, a.Query)
		return f(ctx, req, a)
	}
}

func jsonArgs(req *mcp.CallToolRequest, v any) error {
	if len(req.Params.Arguments) == 0 {
		return nil
	}
	return json.Unmarshal(req.Params.Arguments, v)
}
