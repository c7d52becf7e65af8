package progress

import "github.com/toolcanon/toolcanon/canonical"

// Outcome is how a run's final answer is released.
type Outcome string

// Release outcomes.
const (
	// OutcomeVerified: every claim is supported; at least one positive claim
	// cites only EVIDENCE_FOUND facts.
	OutcomeVerified Outcome = "VERIFIED"
	// OutcomePartial: some claims are unsupported; they are marked, and only
	// the facts cited by supported claims are released.
	OutcomePartial Outcome = "PARTIAL"
	// OutcomeNoEvidence: every claim is a supported negative observation;
	// the cited facts are released as their scope.
	OutcomeNoEvidence Outcome = "NO_EVIDENCE"
	// OutcomeWithheld: the protocol was violated (or the report has no
	// claim); no claim is released, only the EVIDENCE_FOUND facts.
	OutcomeWithheld Outcome = "WITHHELD"
)

// Verdict is the judgement of one claim.
type Verdict string

// Claim verdicts.
const (
	VerdictVerified    Verdict = "VERIFIED"    // positive claim citing only EVIDENCE_FOUND facts
	VerdictNegative    Verdict = "NEGATIVE"    // negative claim citing only facts: a scoped "nothing found"
	VerdictUnsupported Verdict = "UNSUPPORTED" // anything else; Findings say why
)

// ClaimVerdict is one claim of the final report and its verdict.
type ClaimVerdict struct {
	Index int `json:"index"` // position of the claim in the report
	Claim
	Verdict  Verdict   `json:"verdict"`
	Findings []Finding `json:"findings,omitempty"`
}

// Decision is the release of a run's final answer.
type Decision struct {
	Outcome Outcome        `json:"outcome"`
	Claims  []ClaimVerdict `json:"claims"`  // every claim in report order; empty when WITHHELD
	Facts   []Fact         `json:"facts"`   // the facts released, in completion order
	Reasons []Finding      `json:"reasons"` // the outcome's reason first, then each finding of each unsupported claim
}

// Release decides how the final report of a run is released, from the run's
// observed facts, the report and the run's protocol state. It is pure: it
// reads nothing else, changes none of its inputs, and the same inputs give
// the same decision.
//
//   - state.Violated: WITHHELD, with the EVIDENCE_FOUND facts only.
//   - no claims: WITHHELD, likewise.
//   - any claim unsupported: PARTIAL.
//   - every claim a supported negative: NO_EVIDENCE.
//   - otherwise: VERIFIED.
func Release(facts *Projection, report Report, state canonical.ProtocolState) Decision {
	withheld := func(code FindingCode, fix string) Decision {
		d := Decision{Outcome: OutcomeWithheld, Claims: []ClaimVerdict{}, Facts: []Fact{}}
		if facts != nil {
			for _, f := range facts.Facts {
				if f.Evidence == canonical.EvidenceFound {
					d.Facts = append(d.Facts, f)
				}
			}
		}
		d.Reasons = []Finding{{Claim: -1, Cite: -1, Code: code, Fix: fix}}
		return d
	}
	if state.Violated {
		return withheld(FindingProtocolViolated, "the run's invalid progress reports reached the threshold; claims are withheld")
	}
	if len(report.Claims) == 0 {
		return withheld(FindingNoClaims, "the final report states no claim")
	}
	d := Decision{Claims: assess(facts, report), Facts: []Fact{}}
	cited := map[string]bool{}
	unsupported, positive := 0, 0
	for _, v := range d.Claims {
		switch v.Verdict {
		case VerdictUnsupported:
			unsupported++
			continue
		case VerdictVerified:
			positive++
		}
		for _, id := range v.Cites {
			cited[id] = true
		}
	}
	switch {
	case unsupported > 0:
		d.Outcome = OutcomePartial
		d.Reasons = []Finding{{Claim: -1, Cite: -1, Code: FindingUnsupportedClaims, Fix: "unsupported claims are marked and not verified"}}
		for _, v := range d.Claims {
			d.Reasons = append(d.Reasons, v.Findings...)
		}
	case positive == 0:
		d.Outcome = OutcomeNoEvidence
		d.Reasons = []Finding{{Claim: -1, Cite: -1, Code: FindingOnlyNegative, Fix: "only negative observations, within the scope of the cited calls"}}
	default:
		d.Outcome = OutcomeVerified
		d.Reasons = []Finding{{Claim: -1, Cite: -1, Code: FindingAllSupported, Fix: "every claim cites facts that support it"}}
	}
	// Facts in completion order, not claim order, so the release does not
	// depend on how the agent ordered its claims.
	var all []Fact
	if facts != nil {
		all = facts.Facts
	}
	for _, f := range all {
		if cited[f.ToolCallID] {
			d.Facts = append(d.Facts, f)
			delete(cited, f.ToolCallID) // a hand-built projection may repeat an id
		}
	}
	return d
}
