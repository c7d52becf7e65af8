package memstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
)

// A store at its run cap refuses every new run state with STORE_FULL and
// goes on serving the runs it holds; once runs expire, new ones are taken.
func TestMaxRunsRefusesNewRuns(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: time.UnixMilli(1_800_000_000_000)}
	const max = 5
	s := memstore.New(memstore.WithClock(clock.Now), memstore.WithMaxRuns(max), memstore.WithDefaultTTL(time.Second))
	for r := 0; r < max; r++ {
		begin(t, s, "run"+strconv.Itoa(r), "c0", time.Second)
	}
	_, err := s.Begin(ctx, canonical.BeginRequest{RunID: "one-more", ToolCallID: "c0", Tool: "t", Owner: "o", Request: []byte(`{}`), TTL: time.Second})
	if canonical.CodeOf(err) != canonical.CodeStoreFull {
		t.Fatalf("begin of a new run in a full store: %v, want STORE_FULL", err)
	}
	// A close or a progress report creates no run, full or not.
	if err := s.CloseRun(ctx, "one-more", ""); canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Fatalf("close of a new run in a full store: %v, want NOT_FOUND", err)
	}
	if _, err := s.ObserveProgress(ctx, "one-more", "", false, 3); canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Fatalf("progress of a new run in a full store: %v, want NOT_FOUND", err)
	}
	if _, err := s.Usage(ctx, "one-more"); canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Fatalf("a refused run left state: %v", err)
	}
	begin(t, s, "run0", "c1", time.Second) // a run it holds goes on
	clock.Advance(2 * time.Second)
	for r := 0; r < max; r++ {
		begin(t, s, "new"+strconv.Itoa(r), "c0", time.Hour)
	}
	_, err = s.Begin(ctx, canonical.BeginRequest{RunID: "one-more", ToolCallID: "c0", Tool: "t", Owner: "o", Request: []byte(`{}`), TTL: time.Hour})
	if canonical.CodeOf(err) != canonical.CodeStoreFull {
		t.Fatalf("begin of a new run in a store full again: %v, want STORE_FULL", err)
	}
}

// One principal fills its share and no more: its next new run is
// STORE_FULL, while another principal's runs are still created, and its
// calls in the runs it owns go on. Its share frees as its runs expire, or
// as a run it owned is lost and taken from it.
func TestMaxRunsPerPrincipalKeepsRoomForOthers(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: time.UnixMilli(1_800_000_000_000)}
	const share = 3
	s := memstore.New(memstore.WithClock(clock.Now), memstore.WithMaxRuns(100), memstore.WithMaxRunsPerPrincipal(share))
	beginAs := func(principal, run, id string, ttl time.Duration) error {
		_, err := s.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "t", Owner: "o-" + id,
			Principal: principal, Request: []byte(`{}`), TTL: ttl})
		return err
	}
	for r := range share {
		if err := beginAs("mallory", "m"+strconv.Itoa(r), "c0", time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := beginAs("mallory", "m-more", "c0", time.Hour); canonical.CodeOf(err) != canonical.CodeStoreFull {
		t.Fatalf("a new run past the principal's share: %v, want STORE_FULL", err)
	}
	if _, err := s.Usage(ctx, "m-more"); canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Fatalf("a refused run left state: %v", err)
	}
	if err := beginAs("mallory", "m0", "c1", time.Second); err != nil {
		t.Fatalf("a call in a run the principal owns: %v", err)
	}
	for r := range share {
		if err := beginAs("alice", "a"+strconv.Itoa(r), "c0", time.Hour); err != nil {
			t.Fatalf("another principal's new run: %v", err)
		}
	}
	// A progress report or a close of a run nobody began counts nowhere.
	if _, err := s.ObserveProgress(ctx, "m-more", "mallory", false, 3); canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Fatalf("report on a run nobody began: %v", err)
	}
	clock.Advance(2 * time.Second)
	if err := beginAs("mallory", "m-more", "c0", time.Hour); err != nil {
		t.Fatalf("a new run once the principal's runs expired: %v", err)
	}
}
