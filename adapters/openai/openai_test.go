package openaicanon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
	openaicanon "github.com/toolcanon/toolcanon/adapters/openai"
	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/agenttest"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// chatLoop is the host's agent loop: the real client against the model,
// every tool call through the runner, until the model answers.
func chatLoop(t *testing.T, url string, r *openaicanon.Runner, run boundary.RunContext) {
	t.Helper()
	client := openai.NewClient(option.WithBaseURL(url), option.WithAPIKey("test"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "gpt-test", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("find")}}
	for turn := 1; turn <= 10; turn++ {
		comp, err := client.Chat.Completions.New(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		msg := comp.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return
		}
		for _, tc := range msg.ToolCalls {
			t.Logf("turn %d: model calls %s %s(%s)", turn, tc.ID, tc.Function.Name, tc.Function.Arguments)
		}
		msgs, _ := r.ChatToolMessages(context.Background(), run, msg.ToolCalls)
		params.Messages = append(append(params.Messages, msg.ToParam()), msgs...)
	}
	t.Fatal("the loop did not end")
}

func TestChatCompletionsLoop(t *testing.T) {
	for _, st := range agenttest.Stores {
		for _, replay := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/replay=%v", st.Name, replay), func(t *testing.T) {
				kit := agenttest.New(t)
				store := st.Open(t)
				opts := kit.Bound()
				if replay {
					opts = append(opts, boundary.WithReplay())
				}
				b := kit.Boundary(t, store, opts...)
				run := agenttest.Run(4)
				model := &agenttest.Model{Path: "/chat/completions", Replies: agenttest.ChatScript("call_")}
				kit.Together(3)
				chatLoop(t, model.Serve(t).URL, openaicanon.New(b), run)

				agenttest.CheckTurns(t, kit, model.Requests(), agenttest.ChatReceived, "call_", replay, false)
				agenttest.CheckStore(t, kit, store, run, "call_", true)
			})
		}
	}
}

// responsesTurn is one scripted Responses reply.
func responsesTurn(n int, calls ...[3]string) string {
	items := []string{}
	for _, c := range calls {
		args, _ := json.Marshal(c[2])
		items = append(items, fmt.Sprintf(`{"type":"function_call","id":"fc_%s","call_id":%q,"name":%q,"arguments":%s,"status":"completed"}`, c[0], c[0], c[1], args))
	}
	if len(calls) == 0 {
		items = append(items, `{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"done","annotations":[]}]}`)
	}
	return fmt.Sprintf(`{"id":"resp_%d","object":"response","created_at":1,"status":"completed","model":"gpt-test","output":[%s],`+
		`"parallel_tool_calls":true,"tool_choice":"auto","tools":[]}`, n, strings.Join(items, ","))
}

func TestResponsesLoop(t *testing.T) {
	for _, st := range agenttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			kit := agenttest.New(t)
			store := st.Open(t)
			b := kit.Boundary(t, store, kit.Bound()...)
			run := agenttest.Run(4)
			model := &agenttest.Model{Path: "/responses", Replies: []string{
				responsesTurn(1, [3]string{"call_a", agenttest.Search, `{"query":"ttl"}`}, [3]string{"call_b", agenttest.Search, `{"query":"evict"}`},
					[3]string{"call_c", agenttest.Broken, `{"query":"x"}`}),
				responsesTurn(2, [3]string{"call_a", agenttest.Search, `{"query":"ttl"}`}, [3]string{"call_d", agenttest.Big, `{"query":"x"}`}),
				responsesTurn(3, [3]string{"call_e", agenttest.Search, `{"query":"more"}`}),
				responsesTurn(4),
			}}
			client := openai.NewClient(option.WithBaseURL(model.Serve(t).URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
			r := openaicanon.New(b)
			kit.Together(3)
			params := responses.ResponseNewParams{Model: "gpt-test", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("find")}}
			for turn := 0; ; turn++ {
				if turn == 10 {
					t.Fatal("the loop did not end")
				}
				resp, err := client.Responses.New(context.Background(), params)
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range resp.Output {
					if it.Type == "function_call" {
						fc := it.AsFunctionCall()
						t.Logf("turn %d: model calls %s %s(%s)", turn+1, fc.CallID, fc.Name, fc.Arguments)
					}
				}
				outs, _ := r.ResponseOutputs(context.Background(), run, resp.Output)
				if len(outs) == 0 {
					break
				}
				params.PreviousResponseID = openai.String(resp.ID)
				params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: outs}
			}
			reqs := model.Requests()
			want := []string{
				`[call_a ` + agenttest.Hits("call_a", "ttl") + ` call_b ` + agenttest.Hits("call_b", "evict") + ` call_c ` + agenttest.ErrorJSON("call_c", canonical.CodeExecutionFailed) + `]`,
				`[call_a ` + agenttest.ErrorJSON("call_a", canonical.CodeDuplicateToolCall) + ` call_d ` + agenttest.ErrorJSON("call_d", canonical.CodeResultTooLarge) + `]`,
				`[call_e ` + agenttest.ErrorJSON("call_e", canonical.CodeBudgetExhausted) + `]`,
			}
			if len(reqs) != 4 {
				t.Fatalf("the model got %d requests, want 4", len(reqs))
			}
			for i, w := range want {
				var got []string
				for _, it := range gjson.GetBytes(reqs[i+1], "input").Array() {
					if it.Get("type").String() == "function_call_output" {
						got = append(got, it.Get("call_id").String(), it.Get("output").String())
						t.Logf("turn %d: model received %s: %s", i+1, it.Get("call_id"), it.Get("output"))
					}
				}
				if fmt.Sprint(got) != w {
					t.Errorf("turn %d: the model received\n%v\nwant\n%v", i+1, got, w)
				}
				if prev := gjson.GetBytes(reqs[i+1], "previous_response_id").String(); prev != fmt.Sprintf("resp_%d", i+1) {
					t.Errorf("turn %d: previous_response_id %q", i+1, prev)
				}
			}
			agenttest.CheckStore(t, kit, store, run, "call_", true)
		})
	}
}

// Two workers, each with its own Redis client and boundary, run one run's
// turns at once: the budget of five holds across them exactly.
func TestTwoWorkersShareOneBudget(t *testing.T) {
	kit := agenttest.New(t)
	run := agenttest.Run(5)
	var wg sync.WaitGroup
	results := make([][]boundary.Result, 2)
	for w := range 2 {
		b := kit.Boundary(t, agenttest.Redis(t), kit.Bound()...)
		var calls []openai.ChatCompletionMessageToolCallUnion
		for i := range 4 {
			var tc openai.ChatCompletionMessageToolCallUnion
			raw := fmt.Sprintf(`{"id":"call_w%d_%d","type":"function","function":{"name":"search","arguments":"{\"query\":\"q%d\"}"}}`, w, i, i)
			if err := json.Unmarshal([]byte(raw), &tc); err != nil {
				t.Fatal(err)
			}
			calls = append(calls, tc)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, results[w] = openaicanon.New(b, openaicanon.WithParallel(4)).ChatToolMessages(context.Background(), run, calls)
		}()
	}
	wg.Wait()
	agenttest.CheckShared(t, kit, run, results...)
}

func TestMintedIDsAndCustomCalls(t *testing.T) {
	kit := agenttest.New(t)
	store := agenttest.Stores[0].Open(t)
	b := kit.Boundary(t, store, kit.Bound()...)
	run := agenttest.Run(4)
	var calls []openai.ChatCompletionMessageToolCallUnion
	for _, raw := range []string{
		`{"id":"","type":"function","function":{"name":"search","arguments":"{\"query\":\"q\"}"}}`,
		`{"id":"call_x","type":"custom","custom":{"name":"grep","input":"x"}}`,
	} {
		var tc openai.ChatCompletionMessageToolCallUnion
		if err := json.Unmarshal([]byte(raw), &tc); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, tc)
	}
	msgs, res := openaicanon.New(b).ChatToolMessages(context.Background(), run, calls)
	minted := res[0].ToolCallID()
	if !strings.HasPrefix(minted, "tc_") || msgs[0].OfTool.ToolCallID != minted || res[0].Status() != canonical.StatusReady {
		t.Errorf("a call without an id: %q, %s", minted, res[0].Code())
	}
	if src := gjson.GetBytes(agenttest.Record(t, store, run, minted).Request, "tool_call_id_source").String(); src != "framework" {
		t.Errorf("a minted id's source is %q", src)
	}
	var given openai.ChatCompletionMessageToolCallUnion
	_ = json.Unmarshal([]byte(`{"id":"call_given","type":"function","function":{"name":"search","arguments":"{\"query\":\"q\"}"}}`), &given)
	openaicanon.New(b, openaicanon.WithIDSource(boundary.IDFromFramework)).ChatToolMessages(context.Background(), run, []openai.ChatCompletionMessageToolCallUnion{given})
	if src := gjson.GetBytes(agenttest.Record(t, store, run, "call_given").Request, "tool_call_id_source").String(); src != "framework" {
		t.Errorf("WithIDSource: the source is %q", src)
	}
	if msgs[1].OfTool.ToolCallID != "call_x" || msgs[1].OfTool.Content.OfString.Value != agenttest.ErrorJSON("call_x", canonical.CodeUnknownTool) {
		t.Errorf("a custom call got %+v", msgs[1].OfTool)
	}
}
