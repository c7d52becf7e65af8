package anthropiccanon_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/tidwall/gjson"
	anthropiccanon "github.com/toolcanon/toolcanon/adapters/anthropic"
	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/agenttest"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// message is one scripted Messages reply: these tool_use blocks (id, name,
// input), or an answer when there are none.
func message(blocks ...[3]string) string {
	content, stop := []string{`{"type":"text","text":"Let me look."}`}, "tool_use"
	for _, b := range blocks {
		content = append(content, fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":%s}`, b[0], b[1], b[2]))
	}
	if len(blocks) == 0 {
		content, stop = []string{`{"type":"text","text":"done"}`}, "end_turn"
	}
	return `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[` + strings.Join(content, ",") +
		`],"stop_reason":"` + stop + `","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
}

var script = []string{
	message([3]string{"toolu_a", agenttest.Search, `{"query":"ttl"}`}, [3]string{"toolu_b", agenttest.Search, `{"query":"evict"}`},
		[3]string{"toolu_c", agenttest.Broken, `{"query":"x"}`}),
	message([3]string{"toolu_a", agenttest.Search, `{"query":"ttl"}`}, [3]string{"toolu_d", agenttest.Big, `{"query":"x"}`}),
	message([3]string{"toolu_e", agenttest.Search, `{"query":"more"}`}),
	message(),
}

// received is the tool_result blocks of a request's last user message:
// (id, "is_error=<flag> <text>").
func received(body []byte) [][2]string {
	msgs := gjson.GetBytes(body, "messages").Array()
	var out [][2]string
	for _, b := range msgs[len(msgs)-1].Get("content").Array() {
		if b.Get("type").String() == "tool_result" {
			out = append(out, [2]string{b.Get("tool_use_id").String(),
				fmt.Sprintf("is_error=%v %s", b.Get("is_error").Bool(), b.Get("content.0.text").String())})
		}
	}
	return out
}

func TestMessagesLoop(t *testing.T) {
	for _, st := range agenttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			kit := agenttest.New(t)
			store := st.Open(t)
			b := kit.Boundary(t, store, kit.Bound()...)
			run := agenttest.Run(4)
			model := &agenttest.Model{Path: "/v1/messages", Replies: script}
			client := anthropic.NewClient(option.WithBaseURL(model.Serve(t).URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
			r := anthropiccanon.New(b)
			kit.Together(3)

			params := anthropic.MessageNewParams{Model: "claude-test", MaxTokens: 1024,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("find"))}}
			for turn := 1; ; turn++ {
				if turn > 10 {
					t.Fatal("the loop did not end")
				}
				msg, err := client.Messages.New(context.Background(), params)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range msg.Content {
					if c.Type == "tool_use" {
						t.Logf("turn %d: model calls %s %s(%s)", turn, c.ID, c.Name, c.Input)
					}
				}
				blocks, _ := r.ToolResults(context.Background(), run, msg.Content)
				if len(blocks) == 0 {
					break
				}
				params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(blocks...))
			}

			agenttest.CheckTurns(t, kit, model.Requests(), received, "toolu_", false, true)
			agenttest.CheckStore(t, kit, store, run, "toolu_", true)
		})
	}
}

// Two workers on two Redis clients answer one run's messages at once: the
// budget of five holds exactly, and each tool_result says which way it went.
func TestTwoWorkersShareOneBudget(t *testing.T) {
	kit := agenttest.New(t)
	run := agenttest.Run(5)
	var wg sync.WaitGroup
	blocks := make([][]anthropic.ContentBlockParamUnion, 2)
	results := make([][]boundary.Result, 2)
	for w := range 2 {
		b := kit.Boundary(t, agenttest.Redis(t), kit.Bound()...)
		var uses [][3]string
		for i := range 4 {
			uses = append(uses, [3]string{fmt.Sprintf("toolu_w%d_%d", w, i), agenttest.Search, fmt.Sprintf(`{"query":"q%d"}`, i)})
		}
		var msg anthropic.Message
		if err := msg.UnmarshalJSON([]byte(message(uses...))); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			blocks[w], results[w] = anthropiccanon.New(b, anthropiccanon.WithParallel(4)).ToolResults(context.Background(), run, msg.Content)
		}()
	}
	wg.Wait()
	agenttest.CheckShared(t, kit, run, results...)
	for w, bs := range blocks {
		for i, bl := range bs {
			if tr := bl.OfToolResult; tr.ToolUseID != results[w][i].ToolCallID() || tr.IsError.Value != (results[w][i].Status() == canonical.StatusError) {
				t.Errorf("block %d of worker %d: %s is_error=%v for %s", i, w, tr.ToolUseID, tr.IsError.Value, results[w][i].AgentJSON())
			}
		}
	}
}

// Under WithReplay the repeated id with the same input gets the first
// outcome again, and the tool does not run twice.
func TestRepeatedIDReplays(t *testing.T) {
	kit := agenttest.New(t)
	store := agenttest.Stores[0].Open(t)
	r := anthropiccanon.New(kit.Boundary(t, store, append(kit.Bound(), boundary.WithReplay())...))
	run := agenttest.Run(4)
	var first, again anthropic.Message
	_ = first.UnmarshalJSON([]byte(message([3]string{"toolu_r", agenttest.Search, `{"query":"ttl"}`})))
	_ = again.UnmarshalJSON([]byte(message([3]string{"toolu_r", agenttest.Search, `{ "query" : "ttl" }`},
		[3]string{"toolu_r", agenttest.Search, `{"query":"other"}`})))
	a, _ := r.ToolResults(context.Background(), run, first.Content)
	b, res := r.ToolResults(context.Background(), run, again.Content)
	if a[0].OfToolResult.Content[0].OfText.Text != b[0].OfToolResult.Content[0].OfText.Text || !res[0].Replayed() {
		t.Errorf("replay: %s", res[0].AgentJSON())
	}
	if res[1].Code() != canonical.CodeDuplicateToolCall || !b[1].OfToolResult.IsError.Value {
		t.Errorf("same id, other input: %s", res[1].AgentJSON())
	}
	if kit.Calls(agenttest.Search) != 1 {
		t.Errorf("search ran %d times", kit.Calls(agenttest.Search))
	}
}
