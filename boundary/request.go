package boundary

import (
	"encoding/hex"

	"github.com/toolcanon/toolcanon/registry"
)

// buildRequest renders the complete canonical request stored with the
// record:
//
//	{"action_sha256":"<hex>","agent_tool":"<bound name>","input":<canonical input>,
//	 "input_sha256":"<hex>","project":"…","run_id":"…","subject":"…",
//	 "tool":"<registry name>","tool_call_id":"…","version":"…"}
//
// Keys are in RFC 8785 order and the input is already canonical, so the
// request is itself RFC 8785 canonical JSON: equal calls give equal bytes and
// equal digests, which is what duplicate replay compares. The policy fence is
// left out, as it is from the action digest: a replay must not turn into a
// mismatch because the policy's version moved on.
func buildRequest(env *Envelope, run *RunContext, b *binding, plan *registry.Plan, input []byte) []byte {
	in, act := plan.InputDigest(), plan.ActionDigest()
	n := 256 + len(input) + len(env.ToolCallID) + len(run.ID) + len(run.Project) + 2*len(plan.Subject()) +
		len(env.Tool) + len(b.name) + len(b.version)
	out := make([]byte, 0, n)
	out = append(out, `{"action_sha256":"`...)
	out = hex.AppendEncode(out, act[:])
	out = append(out, `","agent_tool":`...)
	out = appendString(out, env.Tool)
	out = append(out, `,"input":`...)
	out = append(out, input...)
	out = append(out, `,"input_sha256":"`...)
	out = hex.AppendEncode(out, in[:])
	out = append(out, `","project":`...)
	out = appendString(out, plan.Project())
	out = append(out, `,"run_id":`...)
	out = appendString(out, run.ID)
	out = append(out, `,"subject":`...)
	out = appendString(out, plan.Subject())
	out = append(out, `,"tool":`...)
	out = appendString(out, b.name)
	out = append(out, `,"tool_call_id":`...)
	out = appendString(out, env.ToolCallID)
	out = append(out, `,"version":`...)
	out = appendString(out, b.version)
	return append(out, '}')
}

// appendString appends s as an RFC 8785 JSON string. Every string given here
// has been validated as printable ASCII (ids, names, versions, the subject);
// control bytes are still escaped so that the output is valid JSON whatever
// a validator lets through.
func appendString(out []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\b':
			out = append(out, '\\', 'b')
		case c == '\t':
			out = append(out, '\\', 't')
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\f':
			out = append(out, '\\', 'f')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c < 0x20:
			out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}
