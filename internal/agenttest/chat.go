package agenttest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/toolcanon/toolcanon/canonical"
)

// ChatReply is one scripted Chat Completions reply: these tool calls (id,
// name, arguments), or an answer when there are none.
func ChatReply(calls ...[3]string) string {
	if len(calls) == 0 {
		return `{"id":"chatcmpl-end","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"finish_reason":"stop",` +
			`"message":{"role":"assistant","content":"done"}}]}`
	}
	var tcs []string
	for _, c := range calls {
		args, _ := json.Marshal(c[2])
		tcs = append(tcs, fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}`, c[0], c[1], args))
	}
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"finish_reason":"tool_calls",` +
		`"message":{"role":"assistant","content":null,"tool_calls":[` + strings.Join(tcs, ",") + `]}}]}`
}

// ChatScript is the scripted run in Chat Completions replies, with ids
// prefix+"a" … prefix+"e": three parallel calls (one tool fails), then the
// first id again beside a result over the limit, then a call past a budget
// of four, then an answer.
func ChatScript(prefix string) []string {
	return []string{
		ChatReply([3]string{prefix + "a", Search, `{"query":"ttl"}`}, [3]string{prefix + "b", Search, `{"query":"evict"}`},
			[3]string{prefix + "c", Broken, `{"query":"x"}`}),
		ChatReply([3]string{prefix + "a", Search, `{"query":"ttl"}`}, [3]string{prefix + "d", Big, `{"query":"x"}`}),
		ChatReply([3]string{prefix + "e", Search, `{"query":"more"}`}),
		ChatReply(),
	}
}

// ChatReceived is what a model got back in one Chat Completions request:
// (id, content) of each tool message after the last assistant message.
func ChatReceived(body []byte) [][2]string {
	var out [][2]string
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		switch m.Get("role").String() {
		case "assistant":
			out = nil
		case "tool":
			out = append(out, [2]string{m.Get("tool_call_id").String(), m.Get("content").String()})
		}
	}
	return out
}

// Hits is the projection of a search for query under id.
func Hits(id, query string) string {
	return `{"hits":["doc-` + query + `"],"text":"","tool_call_id":"` + id + `"}`
}

// CheckTurns checks what the model received in the three turns after the
// script's first (reqs[1:4], read by received as (id, content) pairs), and
// logs it: replay says whether the repeated id gets the first outcome or
// DUPLICATE_TOOL_CALL; marked says whether received prefixes each content
// with "is_error=<bool> ", as the provider's flag. It also checks that the
// three parallel calls of the first turn ran at once.
func CheckTurns(tb testing.TB, k *Kit, reqs [][]byte, received func([]byte) [][2]string, prefix string, replay, marked bool) {
	tb.Helper()
	if len(reqs) != 4 {
		tb.Fatalf("the model got %d requests, want 4", len(reqs))
	}
	repeat := ErrorJSON(prefix+"a", canonical.CodeDuplicateToolCall)
	if replay {
		repeat = Hits(prefix+"a", "ttl")
	}
	want := [][][2]string{
		{{"a", Hits(prefix+"a", "ttl")}, {"b", Hits(prefix+"b", "evict")}, {"c", ErrorJSON(prefix+"c", canonical.CodeExecutionFailed)}},
		{{"a", repeat}, {"d", ErrorJSON(prefix+"d", canonical.CodeResultTooLarge)}},
		{{"e", ErrorJSON(prefix+"e", canonical.CodeBudgetExhausted)}},
	}
	for i, w := range want {
		for j := range w {
			w[j][0] = prefix + w[j][0]
			if marked {
				w[j][1] = fmt.Sprintf("is_error=%v %s", strings.Contains(w[j][1], `"status":"ERROR"`), w[j][1])
			}
		}
		got := received(reqs[i+1])
		for _, g := range got {
			tb.Logf("turn %d: model received %s: %s", i+1, g[0], g[1])
		}
		if fmt.Sprint(got) != fmt.Sprint(w) {
			tb.Errorf("turn %d: the model received\n%v\nwant\n%v", i+1, got, w)
		}
	}
	if m := k.MostAtOnce(); m != 3 {
		tb.Errorf("at most %d of the three parallel calls ran at once", m)
	}
}
