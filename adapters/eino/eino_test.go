package einocanon_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	einocanon "github.com/toolcanon/toolcanon/adapters/eino"
	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/agenttest"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// chatModel is an eino ToolCallingChatModel that asks the scripted model
// through the real openai-go client.
type chatModel struct {
	client openai.Client
	tb     testing.TB
}

func (m chatModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

func (m chatModel) Stream(context.Context, []*schema.Message, ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	return nil, errors.New("not scripted")
}

func (m chatModel) Generate(ctx context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	var msgs []openai.ChatCompletionMessageParamUnion
	for _, msg := range in {
		switch msg.Role {
		case schema.User:
			msgs = append(msgs, openai.UserMessage(msg.Content))
		case schema.Tool:
			msgs = append(msgs, openai.ToolMessage(msg.Content, msg.ToolCallID))
		case schema.Assistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			for _, tc := range msg.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Function.Name, Arguments: tc.Function.Arguments},
				}})
			}
			msgs = append(msgs, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	comp, err := m.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-test", Messages: msgs})
	if err != nil {
		return nil, err
	}
	out := &schema.Message{Role: schema.Assistant, Content: comp.Choices[0].Message.Content}
	for _, tc := range comp.Choices[0].Message.ToolCalls {
		m.tb.Logf("model calls %s %s(%s)", tc.ID, tc.Function.Name, tc.Function.Arguments)
		out.ToolCalls = append(out.ToolCalls, schema.ToolCall{ID: tc.ID, Type: "function",
			Function: schema.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
	}
	return out, nil
}

// kitTool is an eino tool whose execution is the kit's: the framework's own
// tool, which the middleware reaches as `next`.
type kitTool struct {
	kit  *agenttest.Kit
	name string
}

func (k kitTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: k.name, Desc: "test tool " + k.name}, nil
}

func (k kitTool) InvokableRun(ctx context.Context, args string, _ ...tool.Option) (string, error) {
	raw, err := k.kit.Execute(k.name)(ctx, []byte(args))
	return string(raw), err
}

func tools(kit *agenttest.Kit) []tool.BaseTool {
	return []tool.BaseTool{kitTool{kit, agenttest.Search}, kitTool{kit, agenttest.Broken}, kitTool{kit, agenttest.Big}}
}

func TestReactAgentThroughTheBoundary(t *testing.T) {
	for _, st := range agenttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			kit := agenttest.New(t)
			store := st.Open(t)
			b := kit.Boundary(t, store, kit.Next()...)
			run := agenttest.Run(4)
			m := &agenttest.Model{Path: "/chat/completions", Replies: agenttest.ChatScript("call_")}
			client := openai.NewClient(option.WithBaseURL(m.Serve(t).URL), option.WithAPIKey("test"), option.WithMaxRetries(0))

			ctx := context.Background()
			agent, err := react.NewAgent(ctx, &react.AgentConfig{
				ToolCallingModel: chatModel{client, t},
				ToolsConfig: compose.ToolsNodeConfig{
					Tools:               tools(kit),
					ToolCallMiddlewares: []compose.ToolMiddleware{einocanon.Middleware(b)},
				},
				MaxStep: 12,
			})
			if err != nil {
				t.Fatal(err)
			}
			kit.Together(3)
			answer, err := agent.Generate(einocanon.WithRun(ctx, run), []*schema.Message{schema.UserMessage("find")})
			if err != nil {
				t.Fatalf("the graph failed: %v", err)
			}
			if answer.Content != "done" {
				t.Errorf("answer %q", answer.Content)
			}

			agenttest.CheckTurns(t, kit, m.Requests(), agenttest.ChatReceived, "call_", false, false)
			agenttest.CheckStore(t, kit, store, run, "call_", false)
		})
	}
}

// The middleware alone, on eino's ToolsNode: a call without a CallID gets a
// minted one, recorded as the framework's; a context without a run is
// refused as the tool's result, not as an error of the node; a streamable
// tool is read whole and answered in one chunk.
func TestToolsNodeEdges(t *testing.T) {
	kit := agenttest.New(t)
	store := agenttest.Stores[0].Open(t)
	b := kit.Boundary(t, store, append(kit.Next(), kit.NextAs("stream"))...)
	run := agenttest.Run(4)
	ctx := context.Background()
	node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
		Tools:               append(tools(kit)[:1], streamTool{}),
		ToolCallMiddlewares: []compose.ToolMiddleware{einocanon.Middleware(b)},
	})
	if err != nil {
		t.Fatal(err)
	}
	call := func(id, name string) *schema.Message {
		return schema.AssistantMessage("", []schema.ToolCall{{ID: id, Type: "function", Function: schema.FunctionCall{Name: name, Arguments: `{"query":"q"}`}}})
	}

	out, err := node.Invoke(einocanon.WithRun(ctx, run), call("", agenttest.Search))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out[0].Content, `{"hits":["doc-q"],"text":"","tool_call_id":"tc_`) {
		t.Errorf("a call without an id got %s", out[0].Content)
	}
	recs, _, _ := store.Completed(ctx, run.ID, 10)
	if len(recs) != 1 || !strings.Contains(string(agenttest.Record(t, store, run, recs[0]).Request), `"tool_call_id_source":"framework"`) {
		t.Errorf("records %v: the minted id is not recorded as the framework's", recs)
	}

	out, err = node.Invoke(ctx, call("call_norun", agenttest.Search))
	if err != nil || out[0].Content != agenttest.ErrorJSON("call_norun", canonical.CodeInvalidRunID) {
		t.Errorf("no run: %v, %+v", err, out)
	}

	out, err = node.Invoke(einocanon.WithRun(ctx, run), call("call_s", "stream"))
	if err != nil || out[0].Content != `{"hits":[],"text":"abc","tool_call_id":"call_s"}` {
		t.Errorf("stream: %v, %+v", err, out)
	}
	if rec := agenttest.Record(t, store, run, "call_s"); string(rec.Raw) != `{"text":"abc"}` {
		t.Errorf("stream recorded as %s", rec.Raw)
	}

	// A stream longer than its bound is the tool's failure, not read on.
	short, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
		Tools:               []tool.BaseTool{streamTool{}},
		ToolCallMiddlewares: []compose.ToolMiddleware{einocanon.Middleware(b, einocanon.WithMaxStreamBytes(8), einocanon.WithIDSource(boundary.IDFromFramework))},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err = short.Invoke(einocanon.WithRun(ctx, run), call("call_long", "stream"))
	if err != nil || out[0].Content != agenttest.ErrorJSON("call_long", canonical.CodeExecutionFailed) {
		t.Errorf("long stream: %v, %+v", err, out)
	}
	// The host said its CallIDs are minted by the framework: the record says so.
	if rec := agenttest.Record(t, store, run, "call_long"); !strings.Contains(string(rec.Request), `"tool_call_id_source":"framework"`) {
		t.Errorf("request %s", rec.Request)
	}
}

// One message that names an id twice: the repeat waits for the first call
// and is refused, whatever the timing; the tool runs once.
func TestRepeatedIDInOneMessage(t *testing.T) {
	kit := agenttest.New(t)
	store := agenttest.Stores[0].Open(t)
	b := kit.Boundary(t, store, kit.Next()...)
	node, err := compose.NewToolNode(context.Background(), &compose.ToolsNodeConfig{
		Tools: tools(kit), ToolCallMiddlewares: []compose.ToolMiddleware{einocanon.Middleware(b)},
	})
	if err != nil {
		t.Fatal(err)
	}
	kit.Together(2) // the first call holds on a while: without the wait the repeat finds it running
	same := schema.ToolCall{ID: "call_r", Type: "function", Function: schema.FunctionCall{Name: agenttest.Search, Arguments: `{"query":"q"}`}}
	out, err := node.Invoke(einocanon.WithRun(context.Background(), agenttest.Run(4)), schema.AssistantMessage("", []schema.ToolCall{same, same}))
	if err != nil {
		t.Fatal(err)
	}
	refused := agenttest.ErrorJSON("call_r", canonical.CodeDuplicateToolCall)
	if a, b := out[0].Content, out[1].Content; !(a == agenttest.Hits("call_r", "q") && b == refused || b == agenttest.Hits("call_r", "q") && a == refused) {
		t.Errorf("the model received %s and %s", a, b)
	}
	if kit.Calls(agenttest.Search) != 1 {
		t.Errorf("search ran %d times", kit.Calls(agenttest.Search))
	}
}

// streamTool streams its answer in pieces.
type streamTool struct{}

func (streamTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: "stream", Desc: "streams"}, nil
}

func (streamTool) StreamableRun(context.Context, string, ...tool.Option) (*schema.StreamReader[string], error) {
	return schema.StreamReaderFromArray([]string{`{"text":`, `"abc"`, `}`}), nil
}
