package progress_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/progress"
)

func project(t *testing.T, s canonical.Store, run string) *progress.Projection {
	t.Helper()
	p, err := progress.Project(ctx(), s, run, progress.Options{})
	if err != nil {
		t.Fatalf("Project: %v", err)
	}
	return p
}

func factIDs(p *progress.Projection) []string {
	out := []string{}
	for _, f := range p.Facts {
		out = append(out, f.ToolCallID)
	}
	return out
}

func excluded(p *progress.Projection) string {
	var parts []string
	for _, e := range p.Excluded {
		parts = append(parts, fmt.Sprintf("%d:%s:%s", e.Position, e.ToolCallID, e.Reason))
	}
	return strings.Join(parts, " ")
}

// wantOnlyExcluded checks that p excludes exactly id, for reason, and that id
// cannot support any claim.
func wantOnlyExcluded(t *testing.T, p *progress.Projection, id string, reason progress.Reason) {
	t.Helper()
	if len(p.Excluded) != 1 || p.Excluded[0].ToolCallID != id || p.Excluded[0].Reason != reason {
		t.Fatalf("excluded = %s; want %s %s", excluded(p), id, reason)
	}
	if _, ok := p.Fact(id); ok {
		t.Fatalf("%s is both a fact and excluded", id)
	}
	for _, kind := range []progress.Kind{progress.Positive, progress.Negative} {
		r := progress.Report{Claims: []progress.Claim{{Text: "x", Kind: kind, Cites: []string{id}}}}
		d := progress.Release(p, r, canonical.ProtocolState{})
		if d.Outcome != progress.OutcomePartial || d.Claims[0].Verdict != progress.VerdictUnsupported {
			t.Fatalf("%s claim citing excluded %s: outcome %s verdict %s", kind, id, d.Outcome, d.Claims[0].Verdict)
		}
		f := d.Claims[0].Findings
		if len(f) != 1 || f[0].Code != progress.FindingExcludedID || f[0].Excluded != reason || f[0].ToolCallID != id {
			t.Fatalf("findings = %+v", f)
		}
	}
}

// Seed 000, "Completed calls are projected": a run that ends after several
// READY calls projects each indexed record, in execution order, as bounded
// facts.
func TestSeedCompletedCallsAreProjected(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		run := newRunID(t)
		for _, id := range []string{"call_a", "call_b", "call_c", "toolu_d"} {
			begin(t, h.store, run, id, longTTL)
		}
		long := `{"excerpt":"` + strings.Repeat("é", 400) + `"}` // 2-byte runes: a cut could split one
		complete(t, h.store, run, "call_c", canonical.EvidenceFound, `{"evidence":["c"]}`)
		complete(t, h.store, run, "call_a", canonical.NoEvidence, `{"query":"q","evidence":[]}`)
		complete(t, h.store, run, "toolu_d", canonical.EvidenceFound, long)
		// call_b is still running: not in the index, not a fact.

		cs := &countingStore{Store: h.store}
		p, err := progress.Project(ctx(), cs, run, progress.Options{MaxSummaryBytes: 101})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(factIDs(p), ","); got != "call_c,call_a,toolu_d" {
			t.Fatalf("facts in order %s; want completion order call_c,call_a,toolu_d", got)
		}
		if len(p.Excluded) != 0 || p.Duplicates != 0 || p.RunID != run {
			t.Fatalf("projection = %+v", p)
		}
		want := []progress.Fact{
			{Position: 0, ToolCallID: "call_c", Tool: "kb.search", Evidence: canonical.EvidenceFound, Summary: `{"evidence":["c"]}`},
			{Position: 1, ToolCallID: "call_a", Tool: "kb.search", Evidence: canonical.NoEvidence, Summary: `{"query":"q","evidence":[]}`},
		}
		for i, w := range want {
			if p.Facts[i] != w {
				t.Fatalf("fact %d = %+v; want %+v", i, p.Facts[i], w)
			}
		}
		d := p.Facts[2]
		if !d.Truncated || len(d.Summary) > 101 || len(d.Summary) < 98 || !utf8.ValidString(d.Summary) || !strings.HasPrefix(long, d.Summary) {
			t.Fatalf("summary of a long result: %d bytes, truncated=%v, valid=%v", len(d.Summary), d.Truncated, utf8.ValidString(d.Summary))
		}
		b, _ := json.Marshal(p)
		if strings.Contains(string(b), "RAW-") || strings.Contains(string(b), "q-call") {
			t.Fatalf("projection carries raw or request data: %s", b)
		}
		if cs.calls.Load() != 3 || len(cs.getMany) != 1 || len(cs.getMany[0]) != 3 || cs.readOpts[0] != (canonical.ReadOptions{}) {
			t.Fatalf("round trips %d, GetMany calls %v with %+v; want the owner check, Completed and one GetMany of 3 ids without raw",
				cs.calls.Load(), cs.getMany, cs.readOpts)
		}
	})
}

// Seed 000, "Indexed identity is invalid": missing, expired, cross-run,
// PROJECTING and ERROR identities in one run are excluded with their reason
// and cannot become verified evidence.
func TestSeedIndexedIdentityIsInvalid(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		run, other := newRunID(t), newRunID(t)
		readyCall(t, h.store, run, "good", canonical.EvidenceFound)
		// expired: completed, then its TTL runs out.
		begin(t, h.store, run, "expired", h.shortTTL)
		complete(t, h.store, run, "expired", canonical.EvidenceFound, `{"a":1}`)
		// error: completed as ERROR.
		begin(t, h.store, run, "failed", longTTL)
		fail(t, h.store, run, "failed")
		h.wait(2 * h.shortTTL)
		// projecting, cross-run and missing need a writer outside the Store
		// (see harness): the index of a store names only finished calls.
		begin(t, h.store, run, "projecting", longTTL)
		h.injectIndex(t, run, "projecting")
		readyCall(t, h.store, other, "foreign", canonical.EvidenceFound)
		h.plantForeign(t, run, other, "foreign")
		h.injectIndex(t, run, "not a valid id")

		p := project(t, h.store, run)
		if got := strings.Join(factIDs(p), ","); got != "good" {
			t.Fatalf("facts = %s; want good", got)
		}
		want := "1:expired:EXPIRED 2:failed:ERROR 3:projecting:PROJECTING 4:foreign:CROSS_RUN 5:not a valid id:MISSING"
		if got := excluded(p); got != want {
			t.Fatalf("excluded = %s\nwant       %s", got, want)
		}
		// A report citing any of them is an invalid observation, and the final
		// release never verifies them.
		for _, id := range []string{"expired", "projecting", "failed", "foreign"} {
			report := `{"claims":[{"text":"found it","kind":"positive","cites":["good","` + id + `"]}]}`
			obs, err := progress.Observe(ctx(), h.store, p, []byte(report), progress.ProtocolOptions{Threshold: 100})
			if err != nil {
				t.Fatal(err)
			}
			if obs.Valid || obs.Code != progress.CodeInvalidProgressProtocol || len(obs.Findings) != 1 ||
				obs.Findings[0].ToolCallID != id || obs.Findings[0].Code != progress.FindingExcludedID || obs.Findings[0].Cite != 1 {
				t.Fatalf("citing %s: %+v", id, obs)
			}
			d := progress.Release(p, obs.Report, obs.State)
			if d.Outcome != progress.OutcomePartial || d.Claims[0].Verdict != progress.VerdictUnsupported {
				t.Fatalf("release citing %s: %s", id, d.Outcome)
			}
			for _, f := range d.Facts {
				if f.ToolCallID != "good" {
					t.Fatalf("released %s", f.ToolCallID)
				}
			}
		}
	})
}

func TestExcludedExpired(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		run := newRunID(t)
		begin(t, h.store, run, "short", h.shortTTL)
		complete(t, h.store, run, "short", canonical.EvidenceFound, `{"a":1}`)
		readyCall(t, h.store, run, "long", canonical.EvidenceFound) // keeps the index alive
		h.wait(2 * h.shortTTL)
		p := project(t, h.store, run)
		wantOnlyExcluded(t, p, "short", progress.ReasonExpired)
		if got := strings.Join(factIDs(p), ","); got != "long" || p.Facts[0].Position != 1 {
			t.Fatalf("facts = %+v", p.Facts)
		}
	})
}

// A record removed before its TTL (DEL, eviction) reads exactly like an
// expired one; it is reported as EXPIRED, as documented. Only Redis can
// remove a record outside the Store.
func TestExcludedDeletedReportedAsExpired(t *testing.T) {
	h := newRedisHarness(t)
	run := newRunID(t)
	readyCall(t, h.store, run, "gone", canonical.EvidenceFound)
	readyCall(t, h.store, run, "kept", canonical.EvidenceFound)
	h.deleteRecord(t, run, "gone")
	wantOnlyExcluded(t, project(t, h.store, run), "gone", progress.ReasonExpired)
}

// MISSING cannot arise through the Store API: stores index only valid ids.
// On Redis the entry is written with RPUSH; on memstore through faultStore.
func TestExcludedMissing(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		run := newRunID(t)
		readyCall(t, h.store, run, "ok", canonical.EvidenceFound)
		huge := strings.Repeat("x:", 200)
		h.injectIndex(t, run, huge)
		p := project(t, h.store, run)
		if len(p.Excluded) != 1 || p.Excluded[0].Reason != progress.ReasonMissing ||
			p.Excluded[0].ToolCallID != huge[:canonical.MaxIDLen] || p.Excluded[0].Position != 1 {
			t.Fatalf("excluded = %+v", p.Excluded)
		}
		if got := strings.Join(factIDs(p), ","); got != "ok" {
			t.Fatalf("facts = %s", got)
		}
		h.injectIndex(t, run, "")
		p = project(t, h.store, run)
		if got := excluded(p); !strings.HasSuffix(got, " 2::MISSING") {
			t.Fatalf("empty entry: %s", got)
		}
	})
}

// CROSS_RUN cannot arise through the Store API: a record is read under its
// own run's key. On Redis another run's record is COPYed under this run's key
// and indexed with RPUSH; on memstore faultStore returns it.
func TestExcludedCrossRun(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		run, other := newRunID(t), newRunID(t)
		readyCall(t, h.store, run, "mine", canonical.EvidenceFound)
		readyCall(t, h.store, other, "theirs", canonical.EvidenceFound)
		h.plantForeign(t, run, other, "theirs")
		wantOnlyExcluded(t, project(t, h.store, run), "theirs", progress.ReasonCrossRun)
		// The other run still owns it.
		if got := strings.Join(factIDs(project(t, h.store, other)), ","); got != "theirs" {
			t.Fatalf("other run's facts = %s", got)
		}
	})
}

// An indexed call whose id is begun again after its record expired leaves
// the index until it finishes again (a store's index names each call once,
// at its latest completion); one that a writer outside the store names
// while it is in flight is PROJECTING.
func TestExcludedProjecting(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		run := newRunID(t)
		begin(t, h.store, run, "reused", h.shortTTL)
		complete(t, h.store, run, "reused", canonical.EvidenceFound, `{"a":1}`)
		readyCall(t, h.store, run, "long", canonical.EvidenceFound)
		h.wait(2 * h.shortTTL)
		begin(t, h.store, run, "reused", longTTL)
		if idx, n, err := h.store.Completed(ctx(), run, 10); err != nil || strings.Join(idx, ",") != "long" || n != 1 {
			t.Fatalf("index after the id was begun again = %v (%d), %v; want long alone", idx, n, err)
		}
		h.injectIndex(t, run, "reused")
		wantOnlyExcluded(t, project(t, h.store, run), "reused", progress.ReasonProjecting)
		complete(t, h.store, run, "reused", canonical.NoEvidence, `{"b":2}`)
		if idx, _, err := h.store.Completed(ctx(), run, 10); err != nil || !strings.HasPrefix(strings.Join(idx, ","), "long,reused") {
			t.Fatalf("index after the id finished again = %v, %v; want long, reused", idx, err)
		}
	})
}

func TestExcludedError(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		run := newRunID(t)
		readyCall(t, h.store, run, "ok", canonical.NoEvidence)
		begin(t, h.store, run, "boom", longTTL)
		fail(t, h.store, run, "boom")
		wantOnlyExcluded(t, project(t, h.store, run), "boom", progress.ReasonError)
	})
}

// A duplicated index entry is reported once, at its first position, and
// resolved with one read. No store's index repeats an id (Redis keeps the
// index in a sorted set): the in-memory store's wrapper writes the
// duplicate, as a foreign writer of another store could.
func TestDuplicateIndexEntryReportedOnce(t *testing.T) {
	func(t *testing.T, h *harness) {
		run := newRunID(t)
		begin(t, h.store, run, "again", longTTL)
		complete(t, h.store, run, "again", canonical.NoEvidence, `{"second":2}`)
		readyCall(t, h.store, run, "middle", canonical.EvidenceFound)
		h.injectIndex(t, run, "again")
		idx, _, _ := h.store.Completed(ctx(), run, 10)
		if strings.Join(idx, ",") != "again,middle,again" {
			t.Fatalf("index = %v", idx)
		}
		cs := &countingStore{Store: h.store}
		p, err := progress.Project(ctx(), cs, run, progress.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Duplicates != 1 || len(p.Facts) != 2 || p.Facts[0].ToolCallID != "again" || p.Facts[0].Position != 0 ||
			p.Facts[0].Summary != `{"second":2}` || p.Facts[1].ToolCallID != "middle" || len(p.Excluded) != 0 {
			t.Fatalf("projection = %+v", p)
		}
		if len(cs.getMany) != 1 || strings.Join(cs.getMany[0], ",") != "again,middle" {
			t.Fatalf("GetMany ids = %v", cs.getMany)
		}
	}(t, newMemHarness(t))
}

func TestProjectUnknownRunIsOneRoundTrip(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		cs := &countingStore{Store: h.store}
		p, err := progress.Project(ctx(), cs, newRunID(t), progress.Options{})
		if err != nil || len(p.Facts) != 0 || len(p.Excluded) != 0 || cs.calls.Load() != 1 {
			t.Fatalf("projection %+v, %v, %d round trips", p, err, cs.calls.Load())
		}
	})
}

func TestProjectRefusals(t *testing.T) {
	h := newMemHarness(t)
	run := newRunID(t)
	readyCall(t, h.store, run, "a", canonical.EvidenceFound)
	readyCall(t, h.store, run, "b", canonical.EvidenceFound)
	cases := []struct {
		name  string
		store canonical.Store
		run   string
		opts  progress.Options
		code  canonical.Code
	}{
		{"nil store", nil, run, progress.Options{}, canonical.CodeInvalidArgument},
		{"bad run id", h.store, "bad:run", progress.Options{}, canonical.CodeInvalidRunID},
		{"negative summary", h.store, run, progress.Options{MaxSummaryBytes: -1}, canonical.CodeInvalidArgument},
		{"negative calls", h.store, run, progress.Options{MaxCalls: -1}, canonical.CodeInvalidArgument},
		{"index over MaxCalls", h.store, run, progress.Options{MaxCalls: 1}, canonical.CodeBudgetExhausted},
		{"MaxCalls over the ceiling", h.store, run, progress.Options{MaxCalls: canonical.MaxIndexRead + 1}, canonical.CodeInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := progress.Project(ctx(), c.store, c.run, c.opts)
			if canonical.CodeOf(err) != c.code || p != nil {
				t.Fatalf("got %v, %v; want %s", p, err, c.code)
			}
		})
	}
}

func TestSummaryCutAtRuneBoundary(t *testing.T) {
	h := newMemHarness(t)
	run := newRunID(t)
	result := `{"t":"` + strings.Repeat("日本", 20) + `"}` // 3-byte runes
	begin(t, h.store, run, "c", longTTL)
	complete(t, h.store, run, "c", canonical.EvidenceFound, result)
	for max := 1; max <= len(result)+1; max++ {
		p, err := progress.Project(ctx(), h.store, run, progress.Options{MaxSummaryBytes: max})
		if err != nil {
			t.Fatal(err)
		}
		f := p.Facts[0]
		cut := len(result) > max
		if f.Truncated != cut || len(f.Summary) > max || !utf8.ValidString(f.Summary) ||
			!strings.HasPrefix(result, f.Summary) || len(f.Summary) < min(max, len(result))-2 {
			t.Fatalf("max %d: summary %q truncated=%v", max, f.Summary, f.Truncated)
		}
	}
}

// Project reads no more of the index than its limit, whatever the index's
// length, and says how long the index is when it refuses it.
func TestProjectReadsAtMostMaxCalls(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		run := newRunID(t)
		for i := 0; i < 12; i++ {
			readyCall(t, h.store, run, fmt.Sprintf("c%02d", i), canonical.EvidenceFound)
		}
		cs := &countingStore{Store: h.store}
		_, err := progress.Project(ctx(), cs, run, progress.Options{MaxCalls: 5})
		if canonical.CodeOf(err) != canonical.CodeBudgetExhausted || !strings.Contains(err.Error(), "12 entries") {
			t.Fatalf("Project over MaxCalls: %v; want BUDGET_EXHAUSTED naming the 12 entries", err)
		}
		if len(cs.indexRead) != 1 || cs.indexRead[0] != [2]int{5, 5} || len(cs.getMany) != 0 {
			t.Fatalf("index reads (max, got) %v, GetMany %v; want one read of at most 5 ids and no record read", cs.indexRead, cs.getMany)
		}
		cs = &countingStore{Store: h.store}
		p, err := progress.Project(ctx(), cs, run, progress.Options{MaxCalls: 12})
		if err != nil || len(p.Facts) != 12 || len(cs.indexRead) != 1 || cs.indexRead[0] != [2]int{12, 12} {
			t.Fatalf("Project at the limit: %d facts, %v, index reads %v", len(p.Facts), err, cs.indexRead)
		}
	})
}

// Classify says of one record what Project says of its index entry.
func TestClassify(t *testing.T) {
	ready := &canonical.Record{RunID: "r", ToolCallID: "c", Status: canonical.StatusReady, Evidence: canonical.EvidenceFound}
	failed := &canonical.Record{RunID: "r", ToolCallID: "c", Status: canonical.StatusError, Evidence: canonical.EvidenceError}
	running := &canonical.Record{RunID: "r", ToolCallID: "c", Status: canonical.StatusProjecting}
	for _, c := range []struct {
		rec    *canonical.Record
		run    string
		reason progress.Reason
		ok     bool
	}{
		{ready, "r", "", true},
		{ready, "other", progress.ReasonCrossRun, false},
		{failed, "r", progress.ReasonError, false},
		{running, "r", progress.ReasonProjecting, false},
		{nil, "r", progress.ReasonExpired, false},
	} {
		if reason, ok := progress.Classify(c.rec, c.run, "c"); reason != c.reason || ok != c.ok {
			t.Errorf("Classify(%+v, %q) = %q, %v; want %q, %v", c.rec, c.run, reason, ok, c.reason, c.ok)
		}
	}
}
