package progress_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/progress"
)

// protocolRun is a run with one EVIDENCE_FOUND fact "found", one NO_EVIDENCE
// fact "empty" and one excluded ERROR call "failed".
func protocolRun(t *testing.T, s canonical.Store) *progress.Projection {
	t.Helper()
	run := newRunID(t)
	readyCall(t, s, run, "found", canonical.EvidenceFound)
	readyCall(t, s, run, "empty", canonical.NoEvidence)
	begin(t, s, run, "failed", longTTL)
	fail(t, s, run, "failed")
	return project(t, s, run)
}

const (
	validReport      = `{"claims":[{"text":"it is there","kind":"positive","cites":["found"]},{"text":"nothing else","kind":"negative","cites":["empty","found"]}]}`
	unknownReport    = `{"claims":[{"text":"it is there","kind":"positive","cites":["found","call_nope"]}]}`
	malformedReport  = `{"claims":[{"text":"it is there","kind":"positive","cites":["found"],"confidence":0.9}]}`
	noEvidenceReport = `{"claims":[{"text":"ok","kind":"negative","cites":["found"]},{"text":"it is there","kind":"positive","cites":["empty"]}]}`
	excludedReport   = `{"claims":[{"text":"it failed","kind":"negative","cites":["failed"]}]}`
)

// An invalid report is a repairable observation each time; the violation
// counter is never lowered by a repair and saturates exactly at the
// threshold.
func TestProtocolRepairSequence(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		p := protocolRun(t, h.store)
		const threshold = 3
		steps := []struct {
			report              string
			finding             progress.FindingCode
			claim, cite         int
			id                  string
			pending, violations int64
			violated            bool
		}{
			{unknownReport, progress.FindingUnknownID, 0, 1, "call_nope", 1, 1, false},
			{validReport, "", 0, 0, "", 0, 1, false}, // repaired: pending reset, violations kept
			{malformedReport, progress.FindingMalformed, 0, -1, "", 1, 2, false},
			{validReport, "", 0, 0, "", 0, 2, false},
			{noEvidenceReport, progress.FindingNoEvidenceForPositive, 1, 0, "empty", 1, 3, true}, // exactly at the threshold
			{validReport, "", 0, 0, "", 0, 3, true},                                              // a repair does not undo it
			{excludedReport, progress.FindingExcludedID, 0, 0, "failed", 1, 3, true},             // saturated
			{`not json`, progress.FindingMalformed, -1, -1, "", 2, 3, true},
		}
		for i, st := range steps {
			obs, err := progress.Observe(ctx(), h.store, p, []byte(st.report), progress.ProtocolOptions{Threshold: threshold})
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			wantState := canonical.ProtocolState{Reports: int64(i + 1), Pending: st.pending, Violations: st.violations, Violated: st.violated}
			if obs.State != wantState {
				t.Fatalf("step %d: state %+v; want %+v", i, obs.State, wantState)
			}
			if (st.finding == "") != obs.Valid {
				t.Fatalf("step %d: valid=%v findings %+v", i, obs.Valid, obs.Findings)
			}
			if st.violated != (obs.Violation == progress.CodeProgressProtocolViolated) {
				t.Fatalf("step %d: violation %q", i, obs.Violation)
			}
			if st.finding == "" {
				if obs.Code != "" || len(obs.Findings) != 0 || len(obs.Report.Claims) != 2 {
					t.Fatalf("step %d: valid report observed as %+v", i, obs)
				}
				if (obs.Hint == "") == st.violated {
					t.Fatalf("step %d: hint %q", i, obs.Hint)
				}
				continue
			}
			f := obs.Findings
			if obs.Code != progress.CodeInvalidProgressProtocol || len(f) != 1 || f[0].Code != st.finding ||
				f[0].Claim != st.claim || f[0].Cite != st.cite || f[0].ToolCallID != st.id || f[0].Fix == "" {
				t.Fatalf("step %d: code %q findings %+v", i, obs.Code, f)
			}
			if !strings.Contains(obs.Hint, string(st.finding)) || !strings.Contains(obs.Hint, f[0].Fix) ||
				(st.id != "" && !strings.Contains(obs.Hint, st.id)) || len(obs.Hint) > progress.MaxHintBytes {
				t.Fatalf("step %d: hint %q", i, obs.Hint)
			}
			if strings.Contains(obs.Hint, "it is there") {
				t.Fatalf("step %d: hint quotes the claim: %q", i, obs.Hint)
			}
		}
		u, err := h.store.Usage(ctx(), p.RunID)
		want := canonical.ProtocolState{Reports: int64(len(steps)), Pending: 2, Violations: 3, Violated: true}
		if err != nil || u.Protocol != want {
			t.Fatalf("stored protocol %+v, %v; want %+v", u.Protocol, err, want)
		}
	})
}

// Reports from 16 goroutines are counted exactly, and the threshold is
// crossed by exactly one report.
func TestProtocolConcurrentReports(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		const workers, each = 16, 8
		t.Run("Mixed", func(t *testing.T) {
			p := protocolRun(t, h.store)
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := 0; i < each; i++ {
						r := validReport
						if (w+i)%2 == 0 {
							r = unknownReport
						}
						if _, err := progress.Observe(ctx(), h.store, p, []byte(r), progress.ProtocolOptions{Threshold: 1000}); err != nil {
							t.Error(err)
						}
					}
				}(w)
			}
			wg.Wait()
			u, err := h.store.Usage(ctx(), p.RunID)
			if err != nil || u.Protocol.Reports != workers*each || u.Protocol.Violations != workers*each/2 || u.Protocol.Violated {
				t.Fatalf("protocol %+v, %v; want %d reports, %d violations", u.Protocol, err, workers*each, workers*each/2)
			}
		})
		t.Run("Saturation", func(t *testing.T) {
			p := protocolRun(t, h.store)
			const threshold = 20
			var before, after atomic.Int64
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < each; i++ {
						obs, err := progress.Observe(ctx(), h.store, p, []byte(malformedReport), progress.ProtocolOptions{Threshold: threshold})
						if err != nil {
							t.Error(err)
							return
						}
						if obs.Violation == "" {
							before.Add(1)
						} else {
							after.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if before.Load() != threshold-1 || after.Load() != workers*each-threshold+1 {
				t.Fatalf("%d observations before the violation, %d after; want %d and %d",
					before.Load(), after.Load(), threshold-1, workers*each-threshold+1)
			}
			u, err := h.store.Usage(ctx(), p.RunID)
			if err != nil || u.Protocol != (canonical.ProtocolState{Reports: workers * each, Pending: workers * each, Violations: threshold, Violated: true}) {
				t.Fatalf("protocol %+v, %v", u.Protocol, err)
			}
		})
	})
}

// Every way a report can be invalid, with where the finding points.
func TestObserveFindings(t *testing.T) {
	h := newMemHarness(t)
	p := protocolRun(t, h.store)
	cases := []struct {
		name, report string
		want         []string // claim/cite/code/id of each finding
	}{
		{"valid", validReport, nil},
		{"unknown", unknownReport, []string{"0/1/UNKNOWN_ID/call_nope"}},
		{"excluded", excludedReport, []string{"0/0/EXCLUDED_ID/failed"}},
		{"no evidence for positive", noEvidenceReport, []string{"1/0/NO_EVIDENCE_FOR_POSITIVE/empty"}},
		{"several", `{"claims":[{"text":"a","kind":"positive","cites":["empty","zz"]},{"text":"b","kind":"negative","cites":["failed"]}]}`,
			[]string{"0/0/NO_EVIDENCE_FOR_POSITIVE/empty", "0/1/UNKNOWN_ID/zz", "1/0/EXCLUDED_ID/failed"}},
		{"unknown field", malformedReport, []string{"0/-1/MALFORMED/"}},
		{"bad id", `{"claims":[{"text":"a","kind":"positive","cites":["found","a b"]}]}`, []string{"0/1/MALFORMED/"}},
		{"empty", ``, []string{"-1/-1/MALFORMED/"}},
		{"no claims", `{"claims":[]}`, []string{"-1/-1/MALFORMED/"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs, err := progress.Observe(ctx(), h.store, p, []byte(c.report), progress.ProtocolOptions{Threshold: 100})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range obs.Findings {
				got = append(got, strings.Join([]string{itoa(f.Claim), itoa(f.Cite), string(f.Code), f.ToolCallID}, "/"))
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") || obs.Valid != (len(c.want) == 0) {
				t.Fatalf("findings %v (valid=%v); want %v", got, obs.Valid, c.want)
			}
		})
	}
}

func itoa(i int) string {
	if i < 0 {
		return "-" + itoa(-i)
	}
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + itoa(i%10)
}

// However many problems a report has, what the agent is told is bounded.
func TestObserveHintBounded(t *testing.T) {
	h := newMemHarness(t)
	p := protocolRun(t, h.store)
	var b strings.Builder
	b.WriteString(`{"claims":[`)
	for i := 0; i < progress.DefaultMaxClaims; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"text":"t","kind":"positive","cites":[`)
		for j := 0; j < progress.DefaultMaxCites; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + strings.Repeat("u", 40) + itoa(j) + `"`)
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`]}`)
	obs, err := progress.Observe(ctx(), h.store, p, []byte(b.String()), progress.ProtocolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	total := progress.DefaultMaxClaims * progress.DefaultMaxCites
	if len(obs.Findings) != progress.MaxFindings || obs.Omitted != total-progress.MaxFindings {
		t.Fatalf("%d findings, %d omitted", len(obs.Findings), obs.Omitted)
	}
	if len(obs.Hint) > progress.MaxHintBytes || !strings.Contains(obs.Hint, "more)") {
		t.Fatalf("hint of %d bytes: %q", len(obs.Hint), obs.Hint)
	}
}

// Bad arguments are refused before anything is counted.
func TestObserveRefusals(t *testing.T) {
	h := newMemHarness(t)
	p := protocolRun(t, h.store)
	cs := &countingStore{Store: h.store}
	cases := []struct {
		name  string
		store canonical.ProgressObserver
		facts *progress.Projection
		opts  progress.ProtocolOptions
		code  canonical.Code
	}{
		{"nil store", nil, p, progress.ProtocolOptions{}, canonical.CodeInvalidArgument},
		{"nil facts", cs, nil, progress.ProtocolOptions{}, canonical.CodeInvalidArgument},
		{"bad run", cs, &progress.Projection{RunID: "a b"}, progress.ProtocolOptions{}, canonical.CodeInvalidRunID},
		{"negative threshold", cs, p, progress.ProtocolOptions{Threshold: -1}, canonical.CodeInvalidArgument},
		{"bad limits", cs, p, progress.ProtocolOptions{Limits: progress.ReportLimits{MaxClaims: -1}}, canonical.CodeInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := progress.Observe(ctx(), c.store, c.facts, []byte(validReport), c.opts)
			if canonical.CodeOf(err) != c.code {
				t.Fatalf("err %v; want %s", err, c.code)
			}
		})
	}
	if cs.calls.Load() != 0 {
		t.Fatalf("%d store calls for refused arguments", cs.calls.Load())
	}
	// One report, one count.
	if _, err := progress.Observe(ctx(), cs, p, []byte(unknownReport), progress.ProtocolOptions{}); err != nil || cs.calls.Load() != 1 {
		t.Fatalf("observe: %v, %d store calls", err, cs.calls.Load())
	}
}

func TestParseErrorCarriesProtocolCode(t *testing.T) {
	_, err := progress.ParseReport([]byte(`{}`), progress.ReportLimits{})
	var pe *progress.ParseError
	if !errors.As(err, &pe) || !errors.Is(err, progress.ErrInvalidProgressProtocol) ||
		canonical.CodeOf(err) != progress.CodeInvalidProgressProtocol || pe.Path() != "report" {
		t.Fatalf("err = %v", err)
	}
}
