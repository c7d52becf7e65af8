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
	if err := s.CloseRun(ctx, "one-more", ""); canonical.CodeOf(err) != canonical.CodeStoreFull {
		t.Fatalf("close of a new run in a full store: %v, want STORE_FULL", err)
	}
	if _, err := s.ObserveProgress(ctx, "one-more", "", false, 3); canonical.CodeOf(err) != canonical.CodeStoreFull {
		t.Fatalf("progress of a new run in a full store: %v, want STORE_FULL", err)
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
