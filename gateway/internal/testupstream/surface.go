package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The prompts, resources and completions of the test upstream:
//
//   - prompts: greet (argument name, required; a text with a secret and an
//     image), plain (no arguments), huge (size_kib KiB of text with
//     secrets);
//   - resources: kb://docs/readme (text with a secret), kb://docs/logo
//     (a PNG blob), kb://watched (subscribable; the touch tool announces
//     it updated);
//   - the template kb://items/{id} (a text naming id, with a secret);
//   - completions of greet's name and of the template's id, one of them
//     holding a secret;
//   - resources/subscribe and resources/unsubscribe, logged as
//     "subscribe <uri>" and "unsubscribe <uri>".
//
// SIGUSR1 also rewrites greet's description (see main).
func addSurface(s *mcp.Server) {
	s.AddPrompt(greetPrompt("Greet someone by name."), greet)
	s.AddPrompt(&mcp.Prompt{Name: "plain", Description: "A prompt without arguments."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			record("prompt", "plain")
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say hello."}}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "huge", Description: "A large prompt.", Arguments: []*mcp.PromptArgument{{Name: "size_kib", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			var n int
			fmt.Sscan(req.Params.Arguments["size_kib"], &n)
			record("prompt", "huge")
			text := strings.Repeat(strings.ReplaceAll(secretText, "\n", " ")+"\n", n*1024/len(secretText)+1)
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
		})

	s.AddResource(&mcp.Resource{URI: "kb://docs/readme", Name: "readme", Description: "The read-me.", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			record("read", "kb://docs/readme")
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "kb://docs/readme", MIMEType: "text/plain", Text: "Read me. " + secretText}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "kb://docs/logo", Name: "logo", MIMEType: "image/png"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			record("read", "kb://docs/logo")
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "kb://docs/logo", MIMEType: "image/png", Blob: pngPixel}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "kb://watched", Name: "watched", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "kb://watched", Text: "watched"}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "kb://items/{id}", Name: "item", Description: "One item.", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			uri := req.Params.URI
			record("read", uri)
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain",
				Text: "item " + strings.TrimPrefix(uri, "kb://items/") + " password=hunter2"}}}, nil
		})
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	s.AddTool(&mcp.Tool{Name: "touch", Description: "Announce that a resource was updated.", InputSchema: schema(queryProp, "query"), Annotations: ro},
		handler("touch", func(ctx context.Context, a args) (*mcp.CallToolResult, error) {
			_ = s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: a.Query})
			return text("touched"), nil
		}))
}

func greetPrompt(description string) *mcp.Prompt {
	return &mcp.Prompt{Name: "greet", Title: "Greeting", Description: description,
		Arguments: []*mcp.PromptArgument{{Name: "name", Description: "Who to greet.", Required: true}}}
}

func greet(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	name := req.Params.Arguments["name"]
	record("prompt", "greet "+name)
	return &mcp.GetPromptResult{Description: "A greeting for " + name, Messages: []*mcp.PromptMessage{
		{Role: "user", Content: &mcp.TextContent{Text: "Greet " + name + ". Use token=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB password=hunter2"}},
		{Role: "user", Content: &mcp.ImageContent{Data: pngPixel, MIMEType: "image/png"}},
	}}, nil
}

// surfaceOptions are the server options the surface needs: completions
// and subscriptions.
func surfaceOptions() *mcp.ServerOptions {
	return &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			record("complete", req.Params.Ref.Type+" "+req.Params.Ref.Name+req.Params.Ref.URI+" "+req.Params.Argument.Name+"="+req.Params.Argument.Value)
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{
				Values: []string{req.Params.Argument.Value + "ice", req.Params.Argument.Value + " password=hunter2"}, Total: 2}}, nil
		},
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			record("subscribe", req.Params.URI)
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			record("unsubscribe", req.Params.URI)
			return nil
		},
	}
}
