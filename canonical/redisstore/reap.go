package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/record"
)

// reapParallel is how many abandons one reap step has in flight at once;
// the client pipelines them on its connections.
const reapParallel = 16

// Reap implements canonical.Store. On each master (the one server when
// standalone; on a cluster the nodes that CLUSTER SLOTS names as masters,
// told apart by CLUSTER MYID) it walks the keyspace with SCAN MATCH
// <prefix>:{*}:leases TYPE zset COUNT opts.Batch. Each step then reads the
// first opts.Batch leases of every run it found, earliest first, and the
// server's TIME, in one pipeline, and abandons the passed ones through
// abandon.lua, which checks each lease again on its own node's clock. A run
// with opts.Batch passed leases is read again after its abandons.
//
// When nothing has expired a pass costs, per master, ceil(keys / Batch)
// SCANs (a SCAN examines Batch keys of every kind, records included) plus
// one pipeline per step that found runs; a cluster adds CLUSTER SLOTS and a
// CLUSTER MYID per node. The ACL user needs +scan (and, on a cluster,
// +cluster|slots and +cluster|myid).
func (s *Store) Reap(ctx context.Context, opts canonical.ReapOptions) (canonical.ReapReport, error) {
	r := &reaping{s: s, claim: record.NewClaim(), rep: canonical.ReapReport{Abandoned: []canonical.ReapedCall{}}}
	o, err := opts.WithDefaults()
	if err != nil {
		return r.rep, err
	}
	r.opts = o
	nodes, err := s.masters(ctx)
	if err != nil {
		r.fail(err)
	}
	for _, n := range nodes {
		r.rep.Nodes++
		if err := r.node(ctx, n); err != nil {
			r.fail(err)
		}
		if r.rep.Truncated {
			break
		}
	}
	if r.err != nil {
		return r.rep, unavailable(r.err, "reap")
	}
	return r.rep, nil
}

// masters returns a client of each master the store writes to, by address.
func (s *Store) masters(ctx context.Context) ([]rueidis.Client, error) {
	if s.c.Mode() != rueidis.ClientModeCluster {
		return []rueidis.Client{s.c}, nil
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	ranges, err := s.c.Do(ctx, s.c.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SLOTS: %w", err)
	}
	ids := map[string]bool{}
	for _, rg := range ranges {
		parts, err := rg.ToArray()
		if err != nil || len(parts) < 3 {
			return nil, errors.New("CLUSTER SLOTS: a slot range without a master")
		}
		master, err := parts[2].ToArray()
		if err != nil || len(master) < 3 {
			return nil, errors.New("CLUSTER SLOTS: a master without an id")
		}
		id, err := master[2].ToString()
		if err != nil {
			return nil, errors.New("CLUSTER SLOTS: a master without an id")
		}
		ids[id] = true
	}
	nodes := s.c.Nodes()
	addrs := make([]string, 0, len(nodes))
	for a := range nodes {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	var out []rueidis.Client
	var errs []error
	for _, a := range addrs {
		id, err := nodes[a].Do(ctx, nodes[a].B().ClusterMyid().Build()).ToString()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: CLUSTER MYID: %w", a, err))
			continue
		}
		if ids[id] {
			out = append(out, nodes[a])
			delete(ids, id)
		}
	}
	if len(ids) > 0 {
		errs = append(errs, fmt.Errorf("%d master(s) of CLUSTER SLOTS not known to the client yet", len(ids)))
	}
	return out, errors.Join(errs...)
}

// reaping is one pass of Reap.
type reaping struct {
	s     *Store
	opts  canonical.ReapOptions
	claim string     // this pass's claim: an abandon resent after a lost reply is told it is its own
	mu    sync.Mutex // guards rep and err while abandons run in parallel
	rep   canonical.ReapReport
	err   error // the first failure
}

func (r *reaping) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rep.Errors++
	if r.err == nil {
		r.err = err
	}
}

// node walks one master's keyspace, a SCAN step at a time.
func (r *reaping) node(ctx context.Context, n rueidis.Client) error {
	match := r.s.keys.Prefix() + ":{*}:leases"
	for cursor := uint64(0); ; {
		if err := ctx.Err(); err != nil {
			r.rep.Truncated = true
			return err
		}
		sctx, cancel := r.s.bound(ctx)
		e, err := n.Do(sctx, n.B().Scan().Cursor(cursor).Match(match).Count(int64(r.opts.Batch)).Type("zset").Build()).AsScanEntry()
		cancel()
		r.rep.Steps++
		if err != nil {
			return fmt.Errorf("SCAN: %w", err)
		}
		runs := make([]string, 0, len(e.Elements))
		for _, k := range e.Elements {
			if run, ok := r.s.leasesRun(k); ok {
				runs = append(runs, run)
			}
		}
		r.rep.Runs += len(runs)
		r.runs(ctx, n, runs)
		if r.rep.Truncated || e.Cursor == 0 {
			return nil
		}
		cursor = e.Cursor
	}
}

// leasesRun returns the run of a leases key of the store's prefix.
func (s *Store) leasesRun(key string) (string, bool) {
	run, ok := strings.CutPrefix(key, s.keys.Prefix()+":{")
	if !ok {
		return "", false
	}
	run, ok = strings.CutSuffix(run, "}:leases")
	return run, ok && canonical.ValidateRunID(run) == nil && s.keys.Leases(run) == key
}

// passedLease is one lease found passed.
type passedLease struct{ run, id string }

// runs reaps the passed leases of runs, reading again the runs that had a
// whole batch of them, while abandons make progress.
func (r *reaping) runs(ctx context.Context, n rueidis.Client, runs []string) {
	for len(runs) > 0 {
		budget := r.opts.MaxAbandon - len(r.rep.Abandoned)
		if budget <= 0 {
			r.rep.Truncated = true
			return
		}
		passed, full, err := r.passed(ctx, n, runs)
		if err != nil {
			r.fail(err)
			return
		}
		if len(passed) > budget {
			passed, full = passed[:budget], nil
			r.rep.Truncated = true
		}
		r.rep.Expired += len(passed)
		if r.abandon(ctx, passed) == 0 {
			return
		}
		runs = full
	}
}

// passed reads the first Batch leases of each run and the server's time in
// one pipeline to n, the node whose SCAN found the runs, and returns the
// passed ones, and the runs whose every lease read had passed (they may
// have more). A run whose slot has moved away since is read again through
// the cluster client, which follows the move.
func (r *reaping) passed(ctx context.Context, n rueidis.Client, runs []string) (passed []passedLease, full []string, err error) {
	s := r.s
	ctx, cancel := s.bound(ctx)
	defer cancel()
	cmds := make(rueidis.Commands, 0, len(runs)+1)
	cmds = append(cmds, n.B().Time().Build())
	for _, run := range runs {
		cmds = append(cmds, n.B().Zrange().Key(s.keys.Leases(run)).Min("0").Max(strconv.Itoa(r.opts.Batch-1)).Withscores().Build())
	}
	res := n.DoMulti(ctx, cmds...)
	t, err := res[0].AsStrSlice()
	if err != nil || len(t) != 2 {
		return nil, nil, fmt.Errorf("TIME: %w", errors.Join(err, errors.New("TIME reply")))
	}
	now := atoi(t[0])*1000 + atoi(t[1])/1000
	add := func(run string, ids []string) {
		for _, id := range ids {
			if canonical.ValidateToolCallID(id) != nil {
				r.fail(fmt.Errorf("%s holds %q, not a tool_call_id", s.keys.Leases(run), id))
				continue
			}
			passed = append(passed, passedLease{run, id})
		}
		if len(ids) == r.opts.Batch {
			full = append(full, run)
		}
	}
	for i, run := range runs {
		leases, err := res[i+1].AsZScores()
		if movedAway(err) {
			ids, err := s.ExpiredLeases(ctx, run, r.opts.Batch)
			if err != nil {
				r.fail(err)
				continue
			}
			add(run, ids)
			continue
		}
		if err != nil {
			r.fail(fmt.Errorf("ZRANGE %s: %w", s.keys.Leases(run), err))
			continue
		}
		var ids []string
		for _, l := range leases {
			if l.Score > float64(now) { // the "~" member is +inf
				break
			}
			ids = append(ids, l.Member)
		}
		add(run, ids)
	}
	return passed, full, nil
}

// abandon closes the passed leases, reapParallel at a time, and returns how
// many this pass abandoned.
func (r *reaping) abandon(ctx context.Context, passed []passedLease) int {
	var wg sync.WaitGroup
	sem := make(chan struct{}, reapParallel)
	closed := 0
	for _, p := range passed {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			rec, fresh, err := r.abandonOne(ctx, p)
			code := canonical.CodeOf(err)
			if err != nil && code != canonical.CodeNotFound && code != canonical.CodeInvalidTransition && code != canonical.CodeLayoutMismatch {
				r.fail(fmt.Errorf("abandon %s/%s: %w", p.run, p.id, err))
				return
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			switch {
			case err == nil && fresh:
				closed++
				r.rep.Abandoned = append(r.rep.Abandoned, canonical.ReapedCall{RunID: p.run, ToolCallID: p.id,
					Tool: rec.Tool, LeaseUntil: rec.LeaseUntil, AbandonedAt: rec.UpdatedAt})
			case code == canonical.CodeNotFound:
				r.rep.Gone++
			default: // abandoned by another reaper, completed, not passed on the record's node, or another layout's
				r.rep.Skipped++
			}
		}()
	}
	wg.Wait()
	return closed
}

// abandonAttempts is how many times a reap pass sends one abandon whose
// reply did not come (a lost connection, a WAIT not acknowledged in time).
const abandonAttempts = 3

// abandonOne abandons p under the pass's claim, sending it again while the
// store is unavailable: the abandon may have been made with its reply lost,
// and only a resend under the same claim learns that it is this pass's to
// report.
func (r *reaping) abandonOne(ctx context.Context, p passedLease) (canonical.Record, bool, error) {
	for attempt := 1; ; attempt++ {
		actx, cancel := r.s.bound(ctx)
		rec, fresh, err := r.s.abandon(actx, p.run, p.id, r.claim)
		cancel()
		if canonical.CodeOf(err) != canonical.CodeStoreUnavailable || attempt == abandonAttempts || !pause(ctx, attempt) {
			return rec, fresh, err
		}
	}
}

// movedAway reports a MOVED or ASK reply: the key's slot is served by
// another node now, or is being migrated to one.
func movedAway(err error) bool {
	rerr, ok := rueidis.IsRedisErr(err)
	if !ok {
		return false
	}
	_, moved := rerr.IsMoved()
	_, ask := rerr.IsAsk()
	return moved || ask
}
