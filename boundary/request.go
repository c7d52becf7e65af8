package boundary

import (
	"encoding/hex"
	"slices"
	"strings"

	"github.com/toolcanon/toolcanon/internal/strictjson"
	"github.com/toolcanon/toolcanon/registry"
)

// buildRequest renders the complete canonical request stored with the
// record:
//
//	{"action_sha256":"<hex>","agent_tool":"<bound name>","handles":{"<id>":"<tool_call_id>",…},
//	 "input":<canonical input>,"input_sha256":"<hex>","project":"…","run_id":"…","subject":"…",
//	 "tool":"<registry name>","tool_call_id":"…","tool_call_id_source":"…","version":"…"}
//
// input is the input as the model sent it, handles included; handles is
// there only when the input holds handles, and names, for each, the call
// whose raw response holds its value (the value itself is never stored
// twice).
// tool_call_id_source is there only when the envelope says who chose the id
// (Envelope.ToolCallIDSource), so a request of a caller that does not say is
// what it always was.
// Keys are in RFC 8785 order and the input is already canonical, so the
// request is itself RFC 8785 canonical JSON: equal calls give equal bytes and
// equal digests, which is what duplicate replay compares. The policy fence is
// left out, as it is from the action digest: a replay must not turn into a
// mismatch because the policy's version moved on.
func buildRequest(env *Envelope, run *RunContext, b *binding, plan *registry.Plan, input []byte, handles *resolved) []byte {
	in, act := plan.InputDigest(), plan.ActionDigest()
	n := 256 + len(input) + len(env.ToolCallID) + len(run.ID) + len(run.Project) + 2*len(plan.Subject()) +
		len(env.Tool) + len(b.name) + len(b.version) + len(env.ToolCallIDSource)
	out := make([]byte, 0, n)
	out = append(out, `{"action_sha256":"`...)
	out = hex.AppendEncode(out, act[:])
	out = append(out, `","agent_tool":`...)
	out = strictjson.AppendQuoted(out, env.Tool)
	if handles != nil && len(handles.ids) > 0 {
		order := make([]int, len(handles.ids))
		for i := range order {
			order[i] = i
		}
		// RFC 8785 orders members by their names' UTF-16 code units; ids are
		// ASCII, so byte order is that order.
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(handles.ids[a], handles.ids[b]) })
		out = append(out, `,"handles":{`...)
		for n, i := range order {
			if n > 0 {
				out = append(out, ',')
			}
			out = strictjson.AppendQuoted(out, handles.ids[i])
			out = append(out, ':')
			out = strictjson.AppendQuoted(out, handles.calls[i])
		}
		out = append(out, '}')
	}
	out = append(out, `,"input":`...)
	out = append(out, input...)
	out = append(out, `,"input_sha256":"`...)
	out = hex.AppendEncode(out, in[:])
	out = append(out, `","project":`...)
	out = strictjson.AppendQuoted(out, plan.Project())
	out = append(out, `,"run_id":`...)
	out = strictjson.AppendQuoted(out, run.ID)
	out = append(out, `,"subject":`...)
	out = strictjson.AppendQuoted(out, plan.Subject())
	out = append(out, `,"tool":`...)
	out = strictjson.AppendQuoted(out, b.name)
	out = append(out, `,"tool_call_id":`...)
	out = strictjson.AppendQuoted(out, env.ToolCallID)
	if env.ToolCallIDSource != "" {
		out = append(out, `,"tool_call_id_source":`...)
		out = strictjson.AppendQuoted(out, string(env.ToolCallIDSource))
	}
	out = append(out, `,"version":`...)
	out = strictjson.AppendQuoted(out, b.version)
	return append(out, '}')
}
