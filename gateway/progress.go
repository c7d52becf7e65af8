package gateway

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/progress"
)

// ProgressTools are two built-in tools that let any MCP agent check its
// end-of-run claims against the canonical records of its run (package
// progress): FactsTool returns the run's observed facts, ReportTool takes a
// progress report, counts it in the run's protocol state and returns the
// observation and the release decision. The run is resolved as for any
// call, the policy is asked for tool.call:<name> as for any tool, and only
// the run's principal may read or report on it (RUN_FORBIDDEN); neither
// tool is recorded, and neither needs a tool_call_id.
type ProgressTools struct {
	// Store must also be a canonical.ProgressObserver (memstore and
	// redisstore are, and so is observe.Store over either).
	Store      canonical.Store
	FactsTool  string // default "progress_facts"
	ReportTool string // default "progress_report"
	// Facts bounds the facts read; zero fields take 512 calls and
	// 256-byte summaries, so that a facts result stays small.
	Facts    progress.Options
	Protocol progress.ProtocolOptions
}

func (p *ProgressTools) validate() error {
	if p.Store == nil {
		return canonical.Errorf(canonical.CodeInvalidArgument, "gateway: progress tools need a store")
	}
	if _, ok := p.Store.(canonical.ProgressObserver); !ok {
		return canonical.Errorf(canonical.CodeInvalidArgument, "gateway: progress tools need a store that counts progress reports (canonical.ProgressObserver); %T does not", p.Store)
	}
	if p.FactsTool == "" {
		p.FactsTool = "progress_facts"
	}
	if p.ReportTool == "" {
		p.ReportTool = "progress_report"
	}
	if p.Facts.MaxCalls == 0 {
		p.Facts.MaxCalls = 512
	}
	if p.Facts.MaxSummaryBytes == 0 {
		p.Facts.MaxSummaryBytes = 256
	}
	for _, n := range []string{p.FactsTool, p.ReportTool} {
		if err := canonical.ValidateToolName(n); err != nil {
			return canonical.Errorf(canonical.CodeInvalidArgument, "gateway: progress tool name %q is malformed", n)
		}
	}
	if p.FactsTool == p.ReportTool {
		return canonical.Errorf(canonical.CodeInvalidArgument, "gateway: the progress tools need two names")
	}
	return nil
}

const reportSchema = `{"type":"object","additionalProperties":false,"required":["claims"],"properties":{
"claims":{"type":"array","minItems":1,"maxItems":64,"items":{"type":"object","additionalProperties":false,
"required":["text","kind","cites"],"properties":{
"text":{"type":"string","minLength":1,"maxLength":2048,"description":"what you claim, in one sentence"},
"kind":{"type":"string","enum":["positive","negative"],"description":"positive: something was found; negative: nothing was found within the scope of the cited calls"},
"cites":{"type":"array","minItems":1,"maxItems":16,"uniqueItems":true,"items":{"type":"string","minLength":1,"maxLength":128},
"description":"tool_call_ids of this run's calls that support the claim"}}}}}}`

func (p *ProgressTools) listings() []*mcp.Tool {
	return []*mcp.Tool{
		{
			Name:        p.FactsTool,
			Description: "List what this run's tool calls observed: each call that returned a result, with its evidence status and a summary. Cite these tool_call_ids in your progress report.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{}}`),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		},
		{
			Name:        p.ReportTool,
			Description: "Submit your progress report before answering: claims that each cite the tool calls supporting them. Returns whether the report is accepted, what to fix, and how your answer may be released.",
			InputSchema: json.RawMessage(reportSchema),
		},
	}
}

// progressAnswer is what the report tool returns.
type progressAnswer struct {
	Valid     bool               `json:"valid"`
	Code      canonical.Code     `json:"code,omitempty"`
	Violation canonical.Code     `json:"violation,omitempty"`
	Hint      string             `json:"hint,omitempty"`
	Findings  []progress.Finding `json:"findings"`
	Omitted   int                `json:"omitted,omitempty"`
	Protocol  protocolView       `json:"protocol"`
	Decision  progress.Decision  `json:"decision"`
}

// protocolView is the run's protocol state as the agent reads it.
type protocolView struct {
	Reports    int64 `json:"reports"`
	Pending    int64 `json:"pending"`
	Violations int64 `json:"violations"`
	Violated   bool  `json:"violated"`
}

func (h *handler) progress(ctx context.Context, c *Call, args json.RawMessage) (*mcp.CallToolResult, error) {
	p := h.opts.Progress
	run, err := h.opts.Runs.ResolveRun(ctx, c)
	if err != nil {
		return nil, h.rpcError(c, err)
	}
	if err := canonical.ValidateRunID(run.ID); err != nil {
		return toolResult(boundary.Refuse(c.ToolCallID, canonical.CodeInvalidRunID, err)), nil
	}
	if c.RunID != "" && !sameRun(c.RunID, run) {
		return toolResult(boundary.Refuse(c.ToolCallID, canonical.CodeRunMismatch, canonical.Errorf(canonical.CodeRunMismatch, "the call names another run"))), nil
	}
	// Like every tool: counted in the principal's caps (a facts projection
	// reads a run's whole index), the policy first, then only the run's own
	// principal reads or reports on it (RUN_FORBIDDEN before any record is
	// read).
	release, err := h.caps.acquire(run.Principal.Subject, run.ID, 0, time.Now())
	if err != nil {
		return toolResult(boundary.Refuse(c.ToolCallID, canonical.CodeOf(err), err)), nil
	}
	defer release()
	if err := h.b.Authorize(ctx, run, c.Tool); err != nil {
		h.log.WarnContext(ctx, "progress tool refused", "tool", c.Tool, "code", string(canonical.CodeOf(err)), "cause", causeText(err))
		return toolResult(boundary.Refuse(c.ToolCallID, canonical.CodeOf(err), err)), nil
	}
	opts := p.Facts
	opts.Principal = run.Principal.Subject
	facts, err := progress.Project(ctx, p.Store, run.ID, opts)
	if err != nil {
		return h.progressFailure(ctx, c, err), nil
	}
	var out any = facts
	if c.Tool == p.ReportTool {
		obs, err := progress.Observe(ctx, p.Store.(canonical.ProgressObserver), facts, args, p.Protocol)
		if err != nil {
			return h.progressFailure(ctx, c, err), nil
		}
		ans := progressAnswer{
			Valid: obs.Valid, Code: obs.Code, Violation: obs.Violation, Hint: obs.Hint, Findings: obs.Findings,
			Omitted: obs.Omitted, Decision: progress.Release(facts, obs.Report, obs.State),
		}
		st := obs.State
		ans.Protocol = protocolView{Reports: st.Reports, Pending: st.Pending, Violations: st.Violations, Violated: st.Violated}
		if ans.Findings == nil {
			ans.Findings = []progress.Finding{}
		}
		out = ans
	}
	b, err := json.Marshal(out)
	if err != nil {
		return h.progressFailure(ctx, c, err), nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
}

func (h *handler) progressFailure(ctx context.Context, c *Call, err error) *mcp.CallToolResult {
	code := canonical.CodeOf(err)
	if !code.Valid() {
		code = canonical.CodeStoreUnavailable
	}
	h.log.WarnContext(ctx, "progress tool failed", "tool", c.Tool, "code", string(code), "cause", causeText(err))
	return toolResult(boundary.Refuse(c.ToolCallID, code, err))
}
