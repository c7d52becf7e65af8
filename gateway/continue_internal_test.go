package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/canonical"
)

// FuzzContinuationOf: whatever requestState and inputResponses a call
// carries, it is no continuation (neither set), a refusal with
// INVALID_ARGUMENT, or a continuation under a valid token the gateway's
// prefix named, with the responses as JSON.
func FuzzContinuationOf(f *testing.F) {
	f.Add("toolcanon.1."+canonical.NewOwner(), `{"a":{"action":"accept","content":{"x":1}}}`)
	f.Add("", `{"a":{"role":"assistant","content":{"type":"text","text":"t"},"model":"m"}}`)
	f.Add("toolcanon.1.", `{}`)
	f.Add("toolcanon.1.a b", `null`)
	f.Add("asked", ``)
	f.Fuzz(func(t *testing.T, state, responses string) {
		var p mcp.CallToolParamsRaw
		body := `{"name":"x","requestState":` + string(mustJSON(state))
		if responses != "" {
			body += `,"inputResponses":` + responses
		}
		if json.Unmarshal([]byte(body+"}"), &p) != nil {
			return
		}
		cont, err := continuationOf(&p)
		switch {
		case err != nil:
			if canonical.CodeOf(err) != canonical.CodeInvalidArgument || cont != nil {
				t.Fatalf("%v, %+v", err, cont)
			}
		case cont == nil:
			if p.RequestState != "" || len(p.InputResponses) != 0 {
				t.Fatalf("a continuation read as none: %q", state)
			}
		default:
			if !strings.HasPrefix(p.RequestState, requestStatePrefix) || canonical.ValidateOwner(cont.Token) != nil ||
				requestStatePrefix+cont.Token != p.RequestState || !json.Valid(cont.Input) {
				t.Fatalf("continuation %+v of %q", cont, state)
			}
		}
	})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// FuzzAgentInputs: whatever input an upstream asks for, the agent is
// asked at most maxInputRequests requests of the kinds it declared, each
// text bounded with the planted password redacted, or none with a reason.
func FuzzAgentInputs(f *testing.F) {
	f.Add(`{"a":{"method":"elicitation/create","params":{"message":"password=hunter2","requestedSchema":{"type":"object"}}}}`)
	f.Add(`{"s":{"method":"sampling/createMessage","params":{"maxTokens":5,"messages":[{"role":"user","content":{"type":"text","text":"password=hunter2"}}]}}}`)
	f.Add(`{"r":{"method":"roots/list","params":{}},"u":{"method":"elicitation/create","params":{"mode":"url","url":"https://x"}}}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, in string) {
		var m mcp.InputRequestMap
		if json.Unmarshal([]byte(in), &m) != nil {
			return
		}
		r := &relay{requests: newBucket(time.Now())}
		caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}, Sampling: &mcp.SamplingCapabilities{}}
		out, why := r.agentInputs(m, caps)
		if why != "" {
			if out != nil {
				t.Fatalf("refused (%s) with %s", why, out)
			}
			return
		}
		var back mcp.InputRequestMap
		if err := json.Unmarshal(out, &back); err != nil || len(back) == 0 || len(back) > maxInputRequests || len(back) != len(m) {
			t.Fatalf("asked %s (%v)", out, err)
		}
		for _, q := range back {
			var texts []string
			switch q := q.(type) {
			case *mcp.ListRootsParams:
				t.Fatal("roots asked of an agent that declared none")
			case *mcp.ElicitParams:
				texts = append(texts, q.Message)
			case *mcp.CreateMessageWithToolsParams:
				texts = append(texts, q.SystemPrompt)
				for _, m := range q.Messages {
					for _, c := range m.Content {
						if tc, ok := c.(*mcp.TextContent); ok {
							texts = append(texts, tc.Text)
						}
					}
				}
			}
			for _, s := range texts {
				if len(s) > MaxRelayedRequestText || strings.Contains(s, "password=hunter2") {
					t.Fatalf("asked a text of %d bytes: %.300s", len(s), s)
				}
			}
		}
	})
}

// Only an agent of 2026-07-28 that declared sampling or elicitation takes
// input in results; roots alone, which the SDK's clients declare by
// default, keep an agent's calls on the shared connections.
func TestInputCaps(t *testing.T) {
	req := func(version string, caps map[string]any) *mcp.CallToolRequest {
		meta := mcp.Meta{mcp.MetaKeyClientCapabilities: caps}
		if version != "" {
			meta[mcp.MetaKeyProtocolVersion] = version
		}
		return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "x", Meta: meta}}
	}
	roots := map[string]any{"roots": map[string]any{"listChanged": true}}
	elicit := map[string]any{"roots": map[string]any{}, "elicitation": map[string]any{}}
	sample := map[string]any{"sampling": map[string]any{}}
	for name, tc := range map[string]struct {
		req  *mcp.CallToolRequest
		want bool
	}{
		"roots only":          {req(modernProtocol, roots), false},
		"elicitation":         {req(modernProtocol, elicit), true},
		"sampling":            {req(modernProtocol, sample), true},
		"an earlier revision": {req("2025-11-25", elicit), false},
		"no protocol version": {req("", elicit), false},
		"no request":          {nil, false},
		"no capabilities":     {req(modernProtocol, nil), false},
	} {
		c := inputCaps(tc.req)
		if (c != nil) != tc.want {
			t.Errorf("%s: %+v", name, c)
		}
		if c != nil && c.Elicitation == nil && c.Sampling == nil {
			t.Errorf("%s: capabilities without the requests", name)
		}
	}
}
