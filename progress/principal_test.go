package progress_test

import (
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/progress"
)

func TestOnlyTheRunsPrincipalProjectsAndReports(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		run := newRunID(t)
		// begin and readyCall begin as the empty principal.
		readyCall(t, h.store, run, "call_1", canonical.EvidenceFound)

		cs := &countingStore{Store: h.store}
		if _, err := progress.Project(ctx(), cs, run, progress.Options{Principal: "user:bob"}); canonical.CodeOf(err) != canonical.CodeRunForbidden {
			t.Fatalf("another principal's projection: %v", err)
		}
		if cs.calls.Load() != 1 || cs.completed.Load() != 0 || len(cs.getMany) != 0 {
			t.Fatalf("a refused projection read the run: %d round trips, %d index reads, %v", cs.calls.Load(), cs.completed.Load(), cs.getMany)
		}
		facts, err := progress.Project(ctx(), h.store, run, progress.Options{})
		if err != nil || len(facts.Facts) != 1 {
			t.Fatalf("the owner's projection: %+v, %v", facts, err)
		}
		// Observe reports as the principal the facts were projected for.
		obs, err := progress.Observe(ctx(), h.store, facts, []byte(`{"claims":[{"text":"x","kind":"positive","cites":["call_1"]}]}`), progress.ProtocolOptions{})
		if err != nil || !obs.Valid || obs.State.Reports != 1 {
			t.Fatalf("the owner's report: %+v, %v", obs, err)
		}
		empty := newRunID(t) + "e"
		p, err := progress.Project(ctx(), cs, empty, progress.Options{Principal: "user:bob"})
		if err != nil || len(p.Facts) != 0 {
			t.Fatalf("a run nobody wrote: %+v, %v", p, err)
		}
		// Bob's report on the run nobody wrote is answered and counted
		// nowhere: it claims no run, so its first Begin's principal owns
		// it. The owner of the first run is unaffected.
		obs, err = progress.Observe(ctx(), h.store, p, []byte(`{}`), progress.ProtocolOptions{})
		if err != nil || obs.Valid || obs.State != (canonical.ProtocolState{}) {
			t.Fatalf("a report on a run nobody began: %+v, %v", obs, err)
		}
		if _, err := h.store.Usage(ctx(), empty); canonical.CodeOf(err) != canonical.CodeNotFound {
			t.Fatalf("a report on a run nobody began left state: %v", err)
		}
		if _, err := progress.Project(ctx(), h.store, empty, progress.Options{}); err != nil {
			t.Fatalf("the empty principal on the run nobody claimed: %v", err)
		}
		if u, _ := h.store.Usage(ctx(), run); u.Protocol.Reports != 1 || u.Protocol.Violations != 0 {
			t.Fatalf("usage of the first run: %+v", u)
		}
	})
}
