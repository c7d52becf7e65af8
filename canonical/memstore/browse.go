package memstore

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

var _ canonical.Browser = (*Store)(nil)

// ListRuns implements canonical.Browser. A page takes whole shards, in
// order, until it holds size runs or every shard was read: it examines the
// runs of each shard it takes (the store's runs / 256 on average) under that
// shard's lock only, and copies out at most the runs of its shards. The
// cursor names the next shard. Nothing evicts a run's state here, so no run
// is lost and every run is listed from its state.
func (s *Store) ListRuns(ctx context.Context, cursor string, size int) (canonical.RunPage, error) {
	page := canonical.RunPage{Runs: []canonical.RunInfo{}}
	if err := canonical.ValidateRunsPage(size); err != nil {
		return page, err
	}
	_, pos, err := canonical.ParseCursor(cursor, 1)
	if err != nil || pos >= shardCount {
		return page, canonical.Errorf(canonical.CodeInvalidArgument, "invalid run listing cursor")
	}
	if err := ctx.Err(); err != nil {
		return page, canonical.Wrap(canonical.CodeStoreUnavailable, err, "list runs")
	}
	sh := int(pos)
	for ; sh < shardCount && len(page.Runs) < size; sh++ {
		page.Steps++
		page.Runs = s.shards[sh].list(page.Runs, s.nowMs())
	}
	if sh < shardCount {
		page.Next = canonical.FormatCursor(0, uint64(sh))
	}
	return page, nil
}

// list appends the shard's live runs to out, sorted by id.
func (sh *shard) list(out []canonical.RunInfo, now int64) []canonical.RunInfo {
	sh.mu.Lock()
	from := len(out)
	for id, r := range sh.runs {
		if r.expires > now {
			out = append(out, canonical.RunInfo{RunID: id, Principal: r.principal, CreatedAt: time.UnixMilli(r.createdMillis)})
		}
	}
	sh.mu.Unlock()
	slices.SortFunc(out[from:], func(a, b canonical.RunInfo) int {
		if a.RunID < b.RunID {
			return -1
		}
		return 1
	})
	return out
}

// CompletedRange implements canonical.Browser.
func (s *Store) CompletedRange(ctx context.Context, runID string, start, max int) ([]string, int, error) {
	if err := enter(ctx, runID, "read completion index"); err != nil {
		return nil, 0, err
	}
	if err := canonical.ValidateMax(max); err != nil {
		return nil, 0, err
	}
	if start < 0 {
		return nil, 0, canonical.Errorf(canonical.CodeInvalidArgument, "start must not be negative")
	}
	sh, now := s.lockForRead(runID)
	defer sh.mu.Unlock()
	x := sh.liveIndex(runID, now)
	if x == nil || start >= len(x.ids) {
		return []string{}, lenOf(x), nil
	}
	end := min(start+max, len(x.ids))
	return append([]string{}, x.ids[start:end]...), len(x.ids), nil
}

func lenOf(x *index) int {
	if x == nil {
		return 0
	}
	return len(x.ids)
}

// InFlight implements canonical.Browser. It sorts the run's leases: a cost
// in the calls the run has in flight, which its limits bound.
func (s *Store) InFlight(ctx context.Context, runID string, start, max int) ([]canonical.Lease, int, error) {
	if err := enter(ctx, runID, "read leases"); err != nil {
		return nil, 0, err
	}
	if err := canonical.ValidateMax(max); err != nil {
		return nil, 0, err
	}
	if start < 0 {
		return nil, 0, canonical.Errorf(canonical.CodeInvalidArgument, "start must not be negative")
	}
	sh, now := s.lockForRead(runID)
	l := sh.liveLeases(runID, now)
	out := []canonical.Lease{}
	if l != nil {
		for id, until := range l.until {
			out = append(out, canonical.Lease{ToolCallID: id, Until: time.UnixMilli(until)})
		}
	}
	sh.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Until.Equal(out[j].Until) {
			return out[i].Until.Before(out[j].Until)
		}
		return out[i].ToolCallID < out[j].ToolCallID
	})
	n := len(out)
	if start >= n {
		return []canonical.Lease{}, n, nil
	}
	return out[start:min(start+max, n)], n, nil
}
