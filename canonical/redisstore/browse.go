package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/record"
)

// listSteps bounds the SCANs of one ListRuns page.
const listSteps = 8

var _ canonical.Browser = (*Store)(nil)

// ListRuns implements canonical.Browser. On each master in turn (as Reap
// finds them) it walks the keyspace with SCAN MATCH
// <prefix>:{*}:[rl][ui][nv]* COUNT 4*max (at least 64, at most 4096),
// keeping the run-state keys and the live markers, until it has max runs,
// the master's walk ends, or it took 8 SCANs; then it reads each found
// run's owner and creation time with one HMGET, all pipelined. A run is
// listed from its state's key; from its live marker only when it has no
// state (it is lost: Usage says so), so that each run is listed once. A
// page therefore costs at most 8 SCANs, one HMGET per run found (and per
// marker whose state's key the page did not find) and, on a
// cluster, the CLUSTER SLOTS and CLUSTER MYIDs of Reap. The cursor names the
// master by its place in the address-ordered list of masters, and its SCAN
// cursor.
func (s *Store) ListRuns(ctx context.Context, cursor string, size int) (canonical.RunPage, error) {
	page := canonical.RunPage{Runs: []canonical.RunInfo{}}
	if err := canonical.ValidateRunsPage(size); err != nil {
		return page, err
	}
	nodes, err := s.masters(ctx)
	if err != nil {
		return page, unavailable(err, "list runs")
	}
	if len(nodes) == 0 {
		return page, unavailable(errors.New("no master"), "list runs")
	}
	node, pos, err := canonical.ParseCursor(cursor, len(nodes))
	if err != nil {
		return page, err
	}
	count := int64(min(max(4*size, 64), canonical.MaxReapBatch))
	match := s.keys.Prefix() + ":{*}:[rl][ui][nv]*"
	var runs []string
	var marker []bool // runs[i] was found by its live marker
	states := 0       // runs found by their state's key: what fills the page
	for page.Steps < listSteps && states < size {
		sctx, cancel := s.bound(ctx)
		n := nodes[node]
		e, err := n.Do(sctx, n.B().Scan().Cursor(pos).Match(match).Count(count).Build()).AsScanEntry()
		cancel()
		page.Steps++
		if err != nil {
			return page, unavailable(fmt.Errorf("SCAN: %w", err), "list runs")
		}
		for _, k := range e.Elements {
			if run, live, ok := s.runOfKey(k); ok {
				runs, marker = append(runs, run), append(marker, live)
				if !live {
					states++
				}
			}
		}
		pos = e.Cursor
		if pos == 0 {
			if node++; node == len(nodes) {
				break
			}
		}
	}
	if node < len(nodes) {
		page.Next = canonical.FormatCursor(node, pos)
	}
	runs, marker = dropListed(runs, marker)
	if len(runs) == 0 {
		return page, nil
	}
	cmds := make(rueidis.Commands, len(runs))
	for i, r := range runs {
		cmds[i] = s.c.B().Hmget().Key(s.keys.Run(r)).Field(record.RunIdentField, "created_ms").Build()
	}
	hctx, cancel := s.bound(ctx)
	defer cancel()
	for i, res := range s.c.DoMulti(hctx, cmds...) {
		v, err := res.ToArray()
		if err != nil || len(v) != 2 {
			return page, unavailable(errors.Join(err, errors.New("HMGET reply")), "list runs")
		}
		owner, _, _ := runIdent(v[0])
		created, _ := v[1].ToString()
		if stated := owner != "" || created != ""; stated == marker[i] {
			continue // listed by its state's key; or expired since the SCAN
		}
		ri := canonical.RunInfo{RunID: runs[i], Principal: owner}
		if created != "" {
			ri.CreatedAt = msTime(atoi(created))
		}
		page.Runs = append(page.Runs, ri)
	}
	return page, nil
}

// dropListed drops the live markers of runs whose state's key the page
// found too: they need no read.
func dropListed(runs []string, marker []bool) ([]string, []bool) {
	stated := map[string]bool{}
	for i, r := range runs {
		if !marker[i] {
			stated[r] = true
		}
	}
	n := 0
	for i, r := range runs {
		if !marker[i] || !stated[r] {
			runs[n], marker[n] = r, marker[i]
			n++
		}
	}
	return runs[:n], marker[:n]
}

// runOfKey returns the run of a run-state key or live marker of the
// store's prefix, and whether it is the marker.
func (s *Store) runOfKey(key string) (run string, live, ok bool) {
	run, ok = strings.CutPrefix(key, s.keys.Prefix()+":{")
	if !ok {
		return "", false, false
	}
	if r, isLive := strings.CutSuffix(run, "}:live"); isLive {
		return r, true, canonical.ValidateRunID(r) == nil && s.keys.Live(r) == key
	}
	run, ok = strings.CutSuffix(run, "}:run")
	return run, false, ok && canonical.ValidateRunID(run) == nil && s.keys.Run(run) == key
}

// CompletedRange implements canonical.Browser: the run's finished calls
// (ZRANGE BYSCORE of its calls) and their count, in one round trip.
func (s *Store) CompletedRange(ctx context.Context, runID string, start, max int) ([]string, int, error) {
	if err := canonical.ValidateRunID(runID); err != nil {
		return nil, 0, err
	}
	if err := canonical.ValidateMax(max); err != nil {
		return nil, 0, err
	}
	if start < 0 {
		return nil, 0, canonical.Errorf(canonical.CodeInvalidArgument, "start must not be negative")
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	k := s.keys.Calls(runID)
	res := s.c.DoMulti(ctx, s.completed(k, start, max), s.completedCount(k))
	ids, err := res[0].AsStrSlice()
	n, err2 := res[1].AsInt64()
	if err := errors.Join(err, err2); err != nil {
		return nil, 0, unavailable(err, "read completion index")
	}
	return ids, int(n), nil
}

// InFlight implements canonical.Browser: the run's calls in flight with
// their leases (ZRANGE BYSCORE WITHSCORES of its calls) and their count,
// in one round trip.
func (s *Store) InFlight(ctx context.Context, runID string, start, max int) ([]canonical.Lease, int, error) {
	if err := canonical.ValidateRunID(runID); err != nil {
		return nil, 0, err
	}
	if err := canonical.ValidateMax(max); err != nil {
		return nil, 0, err
	}
	if start < 0 {
		return nil, 0, canonical.Errorf(canonical.CodeInvalidArgument, "start must not be negative")
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	k := s.keys.Calls(runID)
	res := s.c.DoMulti(ctx, s.inFlight(k, start, max), s.inFlightCount(k))
	zs, err := res[0].AsZScores()
	n, err2 := res[1].AsInt64()
	if err := errors.Join(err, err2); err != nil {
		return nil, 0, unavailable(err, "read leases")
	}
	out := make([]canonical.Lease, 0, len(zs))
	for _, z := range zs {
		out = append(out, canonical.Lease{ToolCallID: z.Member, Until: msTime(int64(z.Score))})
	}
	return out, int(n), nil
}
