package progress

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/toolcanon/toolcanon/canonical"
)

// The progress-protocol codes, as listed with every other stable code in
// package canonical.
const (
	// CodeInvalidProgressProtocol: one report was malformed or cited what it
	// may not. Repairable: the agent fixes the report and submits it again.
	CodeInvalidProgressProtocol = canonical.CodeInvalidProgressProtocol
	// CodeProgressProtocolViolated: the run's invalid reports reached the
	// threshold. Permanent for the run; repairs do not undo it.
	CodeProgressProtocolViolated = canonical.CodeProgressProtocolViolated
)

// ErrInvalidProgressProtocol matches every report ParseReport refuses, with
// errors.Is.
var ErrInvalidProgressProtocol = &canonical.Error{Code: CodeInvalidProgressProtocol}

// DefaultThreshold is the number of invalid reports that violates the
// protocol when ProtocolOptions.Threshold is zero.
const DefaultThreshold = 3

// MaxFindings bounds the findings an Observation carries; MaxHintBytes bounds
// its hint.
const (
	MaxFindings  = 8
	MaxHintBytes = 1024
)

// FindingCode names what is wrong with a claim, or why a decision was made.
type FindingCode string

// Finding codes about claims.
const (
	FindingMalformed             FindingCode = "MALFORMED"                // the report or claim does not have the documented shape
	FindingUnknownID             FindingCode = "UNKNOWN_ID"               // the cited id is not in the run's completion index
	FindingExcludedID            FindingCode = "EXCLUDED_ID"              // the cited id is indexed but excluded (see Excluded)
	FindingNoEvidenceForPositive FindingCode = "NO_EVIDENCE_FOR_POSITIVE" // a positive claim cites a NO_EVIDENCE fact
	FindingNoCitation            FindingCode = "NO_CITATION"              // the claim cites nothing
	FindingInvalidID             FindingCode = "INVALID_ID"               // the citation is not a valid tool_call_id
)

// Finding codes about a release decision as a whole.
const (
	FindingProtocolViolated  FindingCode = "PROTOCOL_VIOLATED"
	FindingNoClaims          FindingCode = "NO_CLAIMS"
	FindingUnsupportedClaims FindingCode = "UNSUPPORTED_CLAIMS"
	FindingOnlyNegative      FindingCode = "ONLY_NEGATIVE"
	FindingAllSupported      FindingCode = "ALL_CLAIMS_SUPPORTED"
)

// Finding is one bounded, agent-safe statement about a report: which claim,
// which citation and id, what is wrong and what to fix. It never quotes the
// claim's text, and names an id only when it is a valid tool_call_id.
type Finding struct {
	Claim      int         `json:"claim"`                  // index of the claim, -1 for the report as a whole
	Cite       int         `json:"cite"`                   // index of the citation in the claim, -1 for none
	ToolCallID string      `json:"tool_call_id,omitempty"` // the cited id at fault
	Code       FindingCode `json:"code"`
	Excluded   Reason      `json:"excluded,omitempty"` // why the id was excluded (EXCLUDED_ID)
	Fix        string      `json:"fix"`                // what to change, fixed text
}

// String renders the finding on one line, as the hint shows it.
func (f Finding) String() string {
	var b strings.Builder
	switch {
	case f.Claim < 0:
		b.WriteString("report")
	case f.Cite < 0:
		fmt.Fprintf(&b, "claims[%d]", f.Claim)
	default:
		fmt.Fprintf(&b, "claims[%d].cites[%d]", f.Claim, f.Cite)
	}
	if f.ToolCallID != "" {
		b.WriteString(" (" + f.ToolCallID + ")")
	}
	b.WriteString(": " + string(f.Code))
	if f.Excluded != "" {
		b.WriteString(" " + string(f.Excluded))
	}
	b.WriteString(": " + f.Fix)
	return b.String()
}

// ProtocolOptions configure Observe. A zero field takes its default.
type ProtocolOptions struct {
	// Threshold is the number of invalid reports after which the run's
	// protocol is violated for good (default DefaultThreshold).
	Threshold int64
	// Limits bound the reports parsed.
	Limits ReportLimits
}

// Observation is the outcome of checking one progress report.
type Observation struct {
	// Valid is true when the report parsed and every claim is supported.
	Valid bool
	// Code is INVALID_PROGRESS_PROTOCOL for an invalid report, "" otherwise:
	// a repairable observation about this report only.
	Code canonical.Code
	// Violation is PROGRESS_PROTOCOL_VIOLATED once the run's invalid reports
	// reached the threshold, whatever this report was; "" before.
	Violation canonical.Code
	// Findings say what to fix, in claim and citation order; at most
	// MaxFindings, with Omitted counting the rest.
	Findings []Finding
	Omitted  int
	// Hint is the findings as one text for the agent, at most MaxHintBytes.
	Hint string
	// Report is the parsed report (empty when it did not parse).
	Report Report
	// State is the run's protocol counters after this report.
	State canonical.ProtocolState
}

// Observe checks one progress report against the run's observed facts and
// counts it, once, in the run's protocol state (canonical.ProgressObserver), so
// that every worker of the run shares the counters. An invalid report is a
// repairable INVALID_PROGRESS_PROTOCOL observation with findings that say
// what to fix; the run's violation counter rises with it and is never
// lowered by a later valid report. Once it reaches the threshold the
// observation carries PROGRESS_PROTOCOL_VIOLATED for the rest of the run.
//
// A report is valid when it parses (ParseReport) and every claim cites only
// facts of facts — positive claims only EVIDENCE_FOUND facts. facts should be
// a fresh projection: a call completed after it was taken is UNKNOWN_ID.
//
// The report is counted for the principal facts were projected for
// (Options.Principal): a run of another principal is RUN_FORBIDDEN and
// counts nothing. A run nobody began has no protocol state, and a report
// claims no run: it is assessed (every cite is unknown) and counted
// nowhere, with a zero State. Observing is not idempotent: when the store fails (STORE_UNAVAILABLE) the
// report may or may not have been counted.
func Observe(ctx context.Context, store canonical.ProgressObserver, facts *Projection, report []byte, opts ProtocolOptions) (Observation, error) {
	if store == nil || facts == nil {
		return Observation{}, canonical.Errorf(canonical.CodeInvalidArgument, "store and facts are required")
	}
	if err := canonical.ValidateRunID(facts.RunID); err != nil {
		return Observation{}, err
	}
	threshold := opts.Threshold
	if threshold == 0 {
		threshold = DefaultThreshold
	}
	if threshold < 0 {
		return Observation{}, canonical.Errorf(canonical.CodeInvalidArgument, "Threshold must be positive")
	}
	if _, err := opts.Limits.withDefaults(); err != nil {
		return Observation{}, err
	}
	var obs Observation
	var findings []Finding
	r, err := ParseReport(report, opts.Limits)
	if err != nil {
		pe, ok := err.(*ParseError)
		if !ok { // limits were checked above, so this does not happen
			return Observation{}, err
		}
		findings = []Finding{{Claim: pe.Claim, Cite: pe.Cite, Code: FindingMalformed, Fix: pe.Fix}}
	} else {
		obs.Report = r
		for _, v := range assess(facts, r) {
			findings = append(findings, v.Findings...)
		}
	}
	obs.Valid = len(findings) == 0
	state, err := store.ObserveProgress(ctx, facts.RunID, facts.principal, obs.Valid, threshold)
	switch {
	case canonical.CodeOf(err) == canonical.CodeNotFound:
		// A run nobody began keeps no protocol state, and a report does not
		// make one: it is answered as for an unknown run, counted nowhere.
		state = canonical.ProtocolState{}
	case err != nil:
		return Observation{}, err
	}
	obs.State = state
	if !obs.Valid {
		obs.Code = CodeInvalidProgressProtocol
	}
	if state.Violated {
		obs.Violation = CodeProgressProtocolViolated
	}
	if len(findings) > MaxFindings {
		obs.Omitted = len(findings) - MaxFindings
		findings = findings[:MaxFindings]
	}
	obs.Findings = findings
	obs.Hint = hint(obs, threshold)
	return obs, nil
}

// hint writes the observation for the agent within MaxHintBytes. Every part
// is fixed text, positions or valid ids, so it is ASCII and any cut is safe.
func hint(o Observation, threshold int64) string {
	if o.Valid && o.Violation == "" {
		return ""
	}
	var b strings.Builder
	if !o.Valid {
		b.WriteString("Progress report not accepted (" + string(CodeInvalidProgressProtocol) + "); fix and resubmit it.")
	}
	if o.Violation != "" {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s: %d invalid reports reached the limit of %d; only verified facts will be released.",
			CodeProgressProtocolViolated, o.State.Violations, threshold)
	} else if !o.Valid {
		fmt.Fprintf(&b, " Invalid reports so far: %d of %d allowed.", o.State.Violations, threshold)
	}
	omitted := o.Omitted
	for i, f := range o.Findings {
		line := "\n- " + f.String()
		if b.Len()+len(line) > MaxHintBytes-32 {
			omitted += len(o.Findings) - i
			break
		}
		b.WriteString(line)
	}
	if omitted > 0 {
		fmt.Fprintf(&b, "\n(%d more)", omitted)
	}
	s := b.String()
	if len(s) > MaxHintBytes {
		s = s[:MaxHintBytes]
	}
	return s
}

// assess judges every claim of r against facts. It is the one rule shared by
// Observe and Release, so a report Observe accepts is one Release verifies.
func assess(facts *Projection, r Report) []ClaimVerdict {
	fact := map[string]Fact{}
	excluded := map[string]Reason{}
	if facts != nil {
		for _, f := range facts.Facts {
			if _, dup := fact[f.ToolCallID]; !dup {
				fact[f.ToolCallID] = f
			}
		}
		for _, e := range facts.Excluded {
			if _, dup := excluded[e.ToolCallID]; !dup {
				excluded[e.ToolCallID] = e.Reason
			}
		}
	}
	out := make([]ClaimVerdict, len(r.Claims))
	for i, c := range r.Claims {
		v := ClaimVerdict{Index: i, Claim: Claim{Text: c.Text, Kind: c.Kind, Cites: slices.Clone(c.Cites)}}
		add := func(j int, id string, code FindingCode, why Reason, fix string) {
			v.Findings = append(v.Findings, Finding{Claim: i, Cite: j, ToolCallID: id, Code: code, Excluded: why, Fix: fix})
		}
		if c.Kind != Positive && c.Kind != Negative {
			add(-1, "", FindingMalformed, "", "\"kind\" must be \"positive\" or \"negative\"")
		}
		if len(c.Cites) == 0 {
			add(-1, "", FindingNoCitation, "", "cite at least one tool_call_id of the observed facts")
		}
		for j, id := range c.Cites {
			if canonical.ValidateToolCallID(id) != nil {
				add(j, "", FindingInvalidID, "", "cite a tool_call_id exactly as it was given")
				continue
			}
			if why, ok := excluded[id]; ok {
				add(j, id, FindingExcludedID, why, "this call cannot be evidence; cite another call or drop the claim")
				continue
			}
			f, ok := fact[id]
			switch {
			case !ok:
				add(j, id, FindingUnknownID, "", "not a completed call of this run; cite only tool_call_ids of the observed facts")
			case !f.Evidence.Ready():
				// Not produced by Project; a hand-built projection is not trusted.
				add(j, id, FindingExcludedID, ReasonError, "this call cannot be evidence; cite another call or drop the claim")
			case c.Kind == Positive && f.Evidence != canonical.EvidenceFound:
				add(j, id, FindingNoEvidenceForPositive, "", "this call found nothing; cite it only in a \"negative\" claim, or cite a call that found evidence")
			}
		}
		switch {
		case len(v.Findings) > 0:
			v.Verdict = VerdictUnsupported
		case c.Kind == Positive:
			v.Verdict = VerdictVerified
		default:
			v.Verdict = VerdictNegative
		}
		out[i] = v
	}
	return out
}
