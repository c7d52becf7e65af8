package progress_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/progress"
)

func releaseFacts() *progress.Projection {
	return &progress.Projection{
		RunID: "run1",
		Facts: []progress.Fact{
			{Position: 0, ToolCallID: "ef1", Tool: "kb.search", Evidence: canonical.EvidenceFound, Summary: `{"e":1}`},
			{Position: 1, ToolCallID: "ne1", Tool: "logs.query", Evidence: canonical.NoEvidence, Summary: `{"scope":"payments"}`},
			{Position: 3, ToolCallID: "ef2", Tool: "kb.search", Evidence: canonical.EvidenceFound, Summary: `{"e":2}`},
			{Position: 4, ToolCallID: "ne2", Tool: "logs.query", Evidence: canonical.NoEvidence, Summary: `{"scope":"auth"}`},
		},
		Excluded: []progress.Exclusion{
			{Position: 2, ToolCallID: "err1", Reason: progress.ReasonError},
			{Position: 5, ToolCallID: "xrun", Reason: progress.ReasonCrossRun},
			{Position: 6, ToolCallID: "exp", Reason: progress.ReasonExpired},
			{Position: 7, ToolCallID: "proj", Reason: progress.ReasonProjecting},
		},
	}
}

func claim(kind progress.Kind, cites ...string) progress.Claim {
	return progress.Claim{Text: "claim", Kind: kind, Cites: cites}
}

func report(claims ...progress.Claim) progress.Report { return progress.Report{Claims: claims} }

func TestReleaseTable(t *testing.T) {
	pos, neg := progress.Positive, progress.Negative
	violated := canonical.ProtocolState{Reports: 5, Violations: 3, Violated: true}
	repaired := canonical.ProtocolState{Reports: 3, Violations: 2} // invalid reports before, repaired since
	cases := []struct {
		name     string
		facts    *progress.Projection
		report   progress.Report
		state    canonical.ProtocolState
		outcome  progress.Outcome
		verdicts string   // one letter per claim: V verified, N negative, U unsupported
		facts2   string   // released fact ids
		reasons  []string // reason codes, in order
	}{
		{"verified", releaseFacts(), report(claim(pos, "ef2", "ef1")), repaired,
			progress.OutcomeVerified, "V", "ef1,ef2", []string{"ALL_CLAIMS_SUPPORTED"}},
		{"verified with negative scope", releaseFacts(), report(claim(pos, "ef1"), claim(neg, "ne1", "ef2")), canonical.ProtocolState{},
			progress.OutcomeVerified, "VN", "ef1,ne1,ef2", []string{"ALL_CLAIMS_SUPPORTED"}},
		{"no evidence", releaseFacts(), report(claim(neg, "ne2"), claim(neg, "ne1")), canonical.ProtocolState{},
			progress.OutcomeNoEvidence, "NN", "ne1,ne2", []string{"ONLY_NEGATIVE"}},
		{"negative citing found", releaseFacts(), report(claim(neg, "ef1")), canonical.ProtocolState{},
			progress.OutcomeNoEvidence, "N", "ef1", []string{"ONLY_NEGATIVE"}},
		{"partial: no evidence for positive", releaseFacts(), report(claim(pos, "ef1"), claim(pos, "ne1")), canonical.ProtocolState{},
			progress.OutcomePartial, "VU", "ef1", []string{"UNSUPPORTED_CLAIMS", "NO_EVIDENCE_FOR_POSITIVE"}},
		{"partial: unknown", releaseFacts(), report(claim(pos, "ef1", "nope")), canonical.ProtocolState{},
			progress.OutcomePartial, "U", "", []string{"UNSUPPORTED_CLAIMS", "UNKNOWN_ID"}},
		{"partial: excluded", releaseFacts(), report(claim(neg, "err1"), claim(pos, "xrun"), claim(pos, "exp", "proj"), claim(neg, "ne1")), canonical.ProtocolState{},
			progress.OutcomePartial, "UUUN", "ne1", []string{"UNSUPPORTED_CLAIMS", "EXCLUDED_ID", "EXCLUDED_ID", "EXCLUDED_ID", "EXCLUDED_ID"}},
		{"partial: hand-built claims", releaseFacts(), report(claim("maybe", "ef1"), claim(pos), claim(pos, "a b")), canonical.ProtocolState{},
			progress.OutcomePartial, "UUU", "", []string{"UNSUPPORTED_CLAIMS", "MALFORMED", "NO_CITATION", "INVALID_ID"}},
		{"partial: nil facts", nil, report(claim(pos, "ef1")), canonical.ProtocolState{},
			progress.OutcomePartial, "U", "", []string{"UNSUPPORTED_CLAIMS", "UNKNOWN_ID"}},
		{"withheld: violated", releaseFacts(), report(claim(pos, "ef1"), claim(neg, "ne1")), violated,
			progress.OutcomeWithheld, "", "ef1,ef2", []string{"PROTOCOL_VIOLATED"}},
		{"withheld: violated and unsupported", releaseFacts(), report(claim(pos, "nope")), violated,
			progress.OutcomeWithheld, "", "ef1,ef2", []string{"PROTOCOL_VIOLATED"}},
		{"withheld: no claims", releaseFacts(), report(), canonical.ProtocolState{},
			progress.OutcomeWithheld, "", "ef1,ef2", []string{"NO_CLAIMS"}},
		{"withheld: nil facts", nil, report(), violated,
			progress.OutcomeWithheld, "", "", []string{"PROTOCOL_VIOLATED"}},
	}
	letter := map[progress.Verdict]string{progress.VerdictVerified: "V", progress.VerdictNegative: "N", progress.VerdictUnsupported: "U"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := progress.Release(c.facts, c.report, c.state)
			var verdicts, facts, reasons []string
			for i, v := range d.Claims {
				verdicts = append(verdicts, letter[v.Verdict])
				if v.Index != i || !reflect.DeepEqual(v.Claim, c.report.Claims[i]) || (v.Verdict == progress.VerdictUnsupported) != (len(v.Findings) > 0) {
					t.Fatalf("claim %d: %+v", i, v)
				}
			}
			for _, f := range d.Facts {
				facts = append(facts, f.ToolCallID)
			}
			for _, r := range d.Reasons {
				reasons = append(reasons, string(r.Code))
			}
			if d.Outcome != c.outcome || strings.Join(verdicts, "") != c.verdicts ||
				strings.Join(facts, ",") != c.facts2 || !reflect.DeepEqual(reasons, c.reasons) {
				t.Fatalf("got %s %q facts %q reasons %v\nwant %s %q facts %q reasons %v",
					d.Outcome, strings.Join(verdicts, ""), strings.Join(facts, ","), reasons,
					c.outcome, c.verdicts, c.facts2, c.reasons)
			}
			if d.Outcome == progress.OutcomeWithheld && len(d.Claims) != 0 {
				t.Fatalf("withheld decision releases claims: %+v", d.Claims)
			}
		})
	}
}

// Same inputs, same decision; and the inputs are left as they were.
func TestReleaseDeterministic(t *testing.T) {
	facts := releaseFacts()
	r := report(claim(progress.Positive, "ef2", "ne1"), claim(progress.Negative, "ne2", "ef1"), claim(progress.Positive, "ef1"))
	before, _ := json.Marshal([]any{facts, r})
	first, _ := json.Marshal(progress.Release(facts, r, canonical.ProtocolState{}))
	for i := 0; i < 50; i++ {
		d := progress.Release(facts, r, canonical.ProtocolState{})
		d.Claims[0].Cites[0] = "mutated" // must not reach the inputs
		got, _ := json.Marshal(progress.Release(facts, r, canonical.ProtocolState{}))
		if string(got) != string(first) {
			t.Fatalf("decision changed:\n%s\n%s", got, first)
		}
	}
	after, _ := json.Marshal([]any{facts, r})
	if string(before) != string(after) {
		t.Fatalf("inputs changed:\n%s\n%s", before, after)
	}
}

// tableStore serves whatever index and records a test made up, including what
// no real store would hold (inconsistent states, foreign records, bad
// entries), so that the property holds for any store content.
type tableStore struct {
	canonical.Store // nil: only CheckPrincipal, Completed and GetMany are used
	index           map[string][]string
	records         map[[2]string]*canonical.Record
}

// CheckPrincipal lets every reader in: ownership is not what the property is about.
func (s *tableStore) CheckPrincipal(context.Context, string, string) error { return nil }

func (s *tableStore) Completed(_ context.Context, run string, limit int) ([]string, int, error) {
	idx := s.index[run]
	return append([]string{}, idx[:min(limit, len(idx))]...), len(idx), nil
}

func (s *tableStore) GetMany(_ context.Context, run string, ids []string, _ canonical.ReadOptions) ([]*canonical.Record, error) {
	out := make([]*canonical.Record, len(ids))
	for i, id := range ids {
		if err := canonical.ValidateToolCallID(id); err != nil {
			return nil, err // as every store: one bad id refuses the batch
		}
		if r := s.records[[2]string{run, id}]; r != nil {
			c := *r
			out[i] = &c
		}
	}
	return out, nil
}

// No claim is released as verified unless every id it cites is a READY,
// EVIDENCE_FOUND record of this run, read under its own identity, whatever
// the store holds and the agent claims. Negative claims likewise need READY
// records of this run, and released facts are always such records.
func TestReleaseProperty(t *testing.T) {
	rng := rand.New(rand.NewSource(20240601))
	const run, other = "run-p", "run-q"
	statuses := []canonical.Status{canonical.StatusReady, canonical.StatusReady, canonical.StatusError, canonical.StatusProjecting, "BOGUS"}
	evidences := []canonical.Evidence{canonical.EvidenceFound, canonical.NoEvidence, canonical.EvidenceError, canonical.EvidenceUnknown, ""}
	seenOutcomes := map[progress.Outcome]int{}
	verifiedClaims := 0
	for iter := 0; iter < 3000; iter++ {
		s := &tableStore{index: map[string][]string{}, records: map[[2]string]*canonical.Record{}}
		n := 1 + rng.Intn(12)
		pool := []string{"nope", "a b", ""}
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("c%d", i)
			pool = append(pool, id)
			switch rng.Intn(10) {
			case 0: // gone
			default:
				rec := &canonical.Record{RunID: run, ToolCallID: id, Tool: "t", Status: statuses[rng.Intn(len(statuses))],
					Evidence: evidences[rng.Intn(len(evidences))], Result: []byte(`{"i":` + fmt.Sprint(i) + `}`)}
				if rng.Intn(8) == 0 {
					rec.RunID = other
				}
				if rng.Intn(12) == 0 {
					rec.ToolCallID = "c99"
				}
				if rng.Intn(2) == 0 { // mostly consistent, like a real store
					rec.Status = canonical.StatusReady
					rec.Evidence = evidences[rng.Intn(2)]
				}
				s.records[[2]string{run, id}] = rec
			}
			if rng.Intn(6) != 0 {
				s.index[run] = append(s.index[run], id)
			}
			if rng.Intn(10) == 0 {
				s.index[run] = append(s.index[run], pool[rng.Intn(len(pool))]) // duplicates and junk
			}
		}
		p, err := progress.Project(ctx(), s, run, progress.Options{})
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		indexed := map[string]bool{}
		for _, id := range s.index[run] {
			indexed[id] = true
		}
		isRecord := func(id string, ev func(canonical.Evidence) bool) bool {
			r := s.records[[2]string{run, id}]
			return indexed[id] && r != nil && r.RunID == run && r.ToolCallID == id &&
				r.Status == canonical.StatusReady && ev(r.Evidence)
		}
		found := func(e canonical.Evidence) bool { return e == canonical.EvidenceFound }
		ready := func(e canonical.Evidence) bool { return e.Ready() }

		var claims []progress.Claim
		nClaims := 1 + rng.Intn(3)
		if rng.Intn(10) == 0 {
			nClaims = 0
		}
		pick := func() string {
			// Mostly ids of facts (whatever the projection says they are),
			// so that supported claims are common; the rest anything.
			if len(p.Facts) > 0 && rng.Intn(10) < 8 {
				return p.Facts[rng.Intn(len(p.Facts))].ToolCallID
			}
			return pool[rng.Intn(len(pool))]
		}
		for c := nClaims; c > 0; c-- {
			kind := progress.Positive
			if rng.Intn(2) == 0 {
				kind = progress.Negative
			}
			var cites []string
			for k := rng.Intn(3); k >= 0; k-- {
				cites = append(cites, pick())
			}
			claims = append(claims, progress.Claim{Text: "t", Kind: kind, Cites: cites})
		}
		state := canonical.ProtocolState{Violated: rng.Intn(8) == 0}
		d := progress.Release(p, progress.Report{Claims: claims}, state)
		seenOutcomes[d.Outcome]++

		unsupported, positive := 0, 0
		for _, v := range d.Claims {
			switch v.Verdict {
			case progress.VerdictVerified:
				verifiedClaims++
				positive++
				for _, id := range v.Cites {
					if !isRecord(id, found) {
						t.Fatalf("iter %d: claim %d verified citing %q (%+v)", iter, v.Index, id, s.records[[2]string{run, id}])
					}
				}
				if v.Kind != progress.Positive {
					t.Fatalf("iter %d: negative claim verdict VERIFIED", iter)
				}
			case progress.VerdictNegative:
				for _, id := range v.Cites {
					if !isRecord(id, ready) {
						t.Fatalf("iter %d: negative claim %d supported by %q", iter, v.Index, id)
					}
				}
			default:
				unsupported++
			}
		}
		for _, f := range d.Facts {
			if !isRecord(f.ToolCallID, ready) || (d.Outcome == progress.OutcomeWithheld && !isRecord(f.ToolCallID, found)) {
				t.Fatalf("iter %d: released fact %q (%s)", iter, f.ToolCallID, d.Outcome)
			}
		}
		want := progress.OutcomeVerified
		switch {
		case state.Violated || len(claims) == 0:
			want = progress.OutcomeWithheld
		case unsupported > 0:
			want = progress.OutcomePartial
		case positive == 0:
			want = progress.OutcomeNoEvidence
		}
		if d.Outcome != want || (want == progress.OutcomeWithheld && len(d.Claims) != 0) ||
			(want != progress.OutcomeWithheld && len(d.Claims) != len(claims)) {
			t.Fatalf("iter %d: outcome %s with %d claims; want %s", iter, d.Outcome, len(d.Claims), want)
		}
		if again := progress.Release(p, progress.Report{Claims: claims}, state); !reflect.DeepEqual(again, d) {
			t.Fatalf("iter %d: not deterministic", iter)
		}
	}
	// The generator must reach every path, or the property says little.
	for _, o := range []progress.Outcome{progress.OutcomeVerified, progress.OutcomePartial, progress.OutcomeNoEvidence, progress.OutcomeWithheld} {
		if seenOutcomes[o] < 50 {
			t.Fatalf("outcome %s reached %d times: %v", o, seenOutcomes[o], seenOutcomes)
		}
	}
	if verifiedClaims < 200 {
		t.Fatalf("only %d verified claims generated", verifiedClaims)
	}
	t.Logf("outcomes %v, %d verified claims", seenOutcomes, verifiedClaims)
}
