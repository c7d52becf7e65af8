package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
)

// Multi round-trip calls (MCP 2026-07-28). An upstream tool that needs the
// agent's input answers input_required, with what it asks and a state to
// be echoed. The gateway does not complete the call then: its record stays
// open (boundary.InputRequired), the upstream's state is kept in the record,
// and the agent is asked the same requests, redacted and bounded as relayed
// ones are, with a requestState that names only the record's token. The
// agent's retry — the same call (tool call id, tool, arguments) under a new
// JSON-RPC id, with inputResponses and that requestState — continues the
// call on any replica on the store: the record is handed to it (checked:
// the run's principal, the same request, the token), and the upstream gets
// its own state back with the agent's answers. Any other use of the id is
// refused as while a call runs.
//
// Only an agent of 2026-07-28 or later that declared sampling or
// elicitation is asked this way: its calls go to an upstream session of
// that revision (a roots request among the inputs passes too, when the
// agent declared roots). Every other agent's calls run as before, on sessions of
// 2025-11-25, where an upstream asks its input as requests (relayed to the
// agent that can take them, else refused).

// requestStatePrefix starts the requestState the gateway gives an agent:
// its version, then the record's token.
const requestStatePrefix = "toolcanon.1."

// maxInputRequests bounds the input requests of one round; an upstream
// that asks more fails the call.
const maxInputRequests = 8

// modernProtocol is the first MCP revision with multi round-trip results.
const modernProtocol = "2026-07-28"

// inputCaps returns the capabilities of the agent of req when it takes an
// upstream's requests as multi round-trip results — its request is of
// 2026-07-28 or later, and it declared sampling or elicitation, the
// requests the relays pass on — else nil. They are decoded once, and not
// at all when the request's _meta shows neither. (Roots alone, which the
// SDK's clients declare by default, do not count: such an agent's calls
// stay on the upstreams' shared connections.)
func inputCaps(req *mcp.CallToolRequest) *mcp.ClientCapabilities {
	if req == nil || req.Params == nil || req.ProtocolVersion() < modernProtocol {
		return nil
	}
	if m, ok := req.Params.Meta[mcp.MetaKeyClientCapabilities].(map[string]any); ok &&
		m["sampling"] == nil && m["elicitation"] == nil {
		return nil
	}
	c := req.ClientCapabilities()
	if c == nil || c.Sampling == nil && c.Elicitation == nil {
		return nil
	}
	return c
}

// continuationOf reads the continuation a call carries: nil when it
// carries none; an INVALID_ARGUMENT error for a requestState the gateway
// did not give, or input responses without one.
func continuationOf(p *mcp.CallToolParamsRaw) (*boundary.Continuation, error) {
	if p == nil || p.RequestState == "" && len(p.InputResponses) == 0 {
		return nil, nil
	}
	token, ok := strings.CutPrefix(p.RequestState, requestStatePrefix)
	if !ok || canonical.ValidateOwner(token) != nil {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: the call's requestState is not one the gateway gave")
	}
	input, err := json.Marshal(p.InputResponses)
	if err != nil {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: the call's inputResponses cannot be read: %v", err)
	}
	return &boundary.Continuation{Token: token, Input: input}, nil
}

// inputResult is the answer to a call that waits for the agent's input.
func inputResult(requests json.RawMessage, token string) (*mcp.CallToolResult, error) {
	var m mcp.InputRequestMap
	if err := json.Unmarshal(requests, &m); err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{InputRequests: m, RequestState: requestStatePrefix + token}, nil
}

// agentInputs is what an upstream's input requests ask the agent, as it
// gets them: each passed through the relays' bounds and redaction
// (agentElicit, agentSampling), a roots request as it is, and only kinds
// the agent declared; else why they are refused.
func (r *relay) agentInputs(in mcp.InputRequestMap, caps *mcp.ClientCapabilities) (json.RawMessage, string) {
	switch {
	case len(in) == 0:
		return nil, "the upstream asked for no input"
	case len(in) > maxInputRequests:
		return nil, "the upstream asked for more input at once than the gateway passes on"
	case caps == nil:
		return nil, "the agent did not declare this capability"
	case !r.requests.take(time.Now()):
		return nil, "too many requests for this call; try again in a moment"
	}
	out := make(mcp.InputRequestMap, len(in))
	for id, q := range in {
		if len(id) > maxRelayedHintBytes {
			return nil, "an input request's id is too long"
		}
		var why string
		switch q := q.(type) {
		case *mcp.ElicitParams:
			if caps.Elicitation == nil {
				return nil, "the agent did not declare this capability"
			}
			out[id], why = r.agentElicit(q)
		case *mcp.CreateMessageParams:
			if caps.Sampling == nil {
				return nil, "the agent did not declare this capability"
			}
			out[id], why = r.agentSampling(q)
		case *mcp.CreateMessageWithToolsParams:
			if caps.Sampling == nil {
				return nil, "the agent did not declare this capability"
			}
			var p *mcp.CreateMessageParams
			if p, why = singleContent(q); why == "" {
				out[id], why = r.agentSampling(p)
			}
		case *mcp.ListRootsParams:
			if caps.RootsV2 == nil {
				return nil, "the agent did not declare this capability"
			}
			out[id] = &mcp.ListRootsParams{}
		default:
			why = "the upstream asked for input of a kind the gateway does not pass on"
		}
		if why != "" {
			return nil, why
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, "the upstream's input requests cannot be passed on"
	}
	return b, ""
}

// singleContent is a sampling request of the current revision as the
// relays read one: each message a single content block, no tools.
func singleContent(p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageParams, string) {
	if p == nil {
		return nil, "the request has no parameters"
	}
	if len(p.Tools) > 0 || p.ToolChoice != nil {
		return nil, "the gateway does not pass on sampling with tools"
	}
	if len(p.Messages) > MaxRelayedMessages {
		return nil, "the request holds more messages than the gateway passes on"
	}
	q := &mcp.CreateMessageParams{MaxTokens: p.MaxTokens, Temperature: p.Temperature, SystemPrompt: p.SystemPrompt,
		StopSequences: p.StopSequences, ModelPreferences: p.ModelPreferences}
	for _, m := range p.Messages {
		if m == nil {
			continue
		}
		if len(m.Content) != 1 {
			return nil, "the gateway passes on sampling messages of one content block each"
		}
		q.Messages = append(q.Messages, &mcp.SamplingMessage{Role: m.Role, Content: m.Content[0]})
	}
	return q, ""
}

// continueParams completes the parameters of a call on an upstream session
// of modernProtocol: the log level the agent's messages are filtered at
// (it comes with each request), and, for a call that continues, the
// agent's answers with the upstream's own state, as the record kept it.
func continueParams(ctx context.Context, r *relay, s *mcp.ClientSession, params *mcp.CallToolParams) error {
	if r != nil && r.wantsLogs && logs(s) {
		if params.Meta == nil {
			params.Meta = mcp.Meta{}
		}
		params.Meta[mcp.MetaKeyLogLevel] = "debug" // the agent's session filters
	}
	rs, ok := boundary.ContinuationFrom(ctx)
	if !ok {
		return nil
	}
	var in mcp.InputResponseMap
	if err := json.Unmarshal(rs.Input, &in); err != nil {
		return boundary.NotRun(canonical.CodeInvalidArgument, fmt.Errorf("gateway: the agent's input responses: %w", err))
	}
	params.InputResponses, params.RequestState = in, string(rs.State)
	return nil
}

// askAgent is the error of an upstream's input_required result: the
// requests, as the agent gets them, for the boundary to ask the agent
// (boundary.InputRequired), with the upstream's state for the record; a
// failure when the agent cannot be asked them.
func askAgent(r *relay, res *mcp.CallToolResult) error {
	switch {
	case r == nil || r.inputs == nil:
		return errors.New("gateway: the upstream asked for input the call's agent cannot give")
	case len(res.InputRequests) == 0:
		// Load shedding: the upstream declined the call for now.
		return boundary.NotRun(canonical.CodeUpstreamUnavailable, errors.New("gateway: the upstream is busy (input_required without requests)"))
	}
	q, why := r.agentInputs(res.InputRequests, r.inputs)
	if why != "" {
		return errors.New("gateway: " + why)
	}
	return &boundary.InputRequired{Requests: q, State: []byte(res.RequestState)}
}
