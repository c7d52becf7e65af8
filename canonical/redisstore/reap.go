package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/record"
)

// reapParallel is how many abandons one reap step has in flight at once;
// the client pipelines them on its connections.
const reapParallel = 16

// slotsPerStep is how many slots one step of a sweep reads: a pipeline of
// as many ZRANGEs.
const slotsPerStep = 1024

// Reap implements canonical.Store. A pass reads no key but the ones that
// name work: with opts.Every it first takes the store's reap lease (SET NX
// PX) and yields when another pass holds it; then it reads, for every slot,
// the runs of the slot's due set (canonical.SlotDue) scored at or before
// the server's TIME, opts.Batch at a time, slotsPerStep slots to a
// pipeline; for the runs found it reads the first opts.Batch leases of
// each, abandons the passed ones through abandon.lua (which checks each
// lease again on its own node's clock), and moves the run in its due set
// to its next lease, or drops it, through reschedule.lua. A run with
// opts.Batch passed leases is read again after its abandons.
//
// So a pass costs 16 pipelines of 1,024 ZRANGEs (on a cluster, split
// between its masters) plus a pipeline of reads and the scripts per run
// found due, however many other keys the servers hold; a run is found due
// once per lease of its, at most, when the lease it was scored at has
// passed. The ACL user needs no command beyond a worker's (SET for the
// lease; on a cluster CLUSTER SLOTS and CLUSTER MYID to count the masters).
func (s *Store) Reap(ctx context.Context, opts canonical.ReapOptions) (canonical.ReapReport, error) {
	r := &reaping{s: s, claim: record.NewClaim(), rep: canonical.ReapReport{Abandoned: []canonical.ReapedCall{}}}
	o, err := opts.WithDefaults()
	if err != nil {
		return r.rep, err
	}
	r.opts = o
	if o.Every > 0 {
		held, err := s.takePassLease(ctx, "reap", o.Every)
		if err != nil {
			return r.rep, unavailable(err, "reap lease")
		}
		if !held {
			r.rep.Yielded = true
			return r.rep, nil
		}
	}
	r.rep.Nodes = 1
	if s.c.Mode() == rueidis.ClientModeCluster {
		nodes, err := s.masters(ctx)
		if err != nil {
			r.fail(err)
		}
		r.rep.Nodes = len(nodes)
	}
	steps, err := s.sweepSlots(ctx, canonical.SlotDue, o.Batch, func(runs []string, now int64) bool {
		r.rep.Runs += len(runs)
		r.runs(ctx, runs, now)
		return !r.rep.Truncated
	})
	r.rep.Steps += steps
	if err != nil {
		if ctx.Err() != nil {
			r.rep.Truncated = true
		}
		r.fail(err)
	}
	if r.err != nil {
		return r.rep, unavailable(r.err, "reap")
	}
	return r.rep, nil
}

// takePassLease takes the store's lease of pass for every (SET NX PX) and
// reports whether it did: false when another pass holds it.
func (s *Store) takePassLease(ctx context.Context, pass string, every time.Duration) (bool, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	err := s.do(ctx, s.c.B().Set().Key(s.keys.PassLease(pass)).Value(record.NewClaim()).Nx().
		PxMilliseconds(every.Milliseconds()).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return false, nil
	}
	return err == nil, err
}

// serverTime returns the server's TIME, in ms since the epoch.
func (s *Store) serverTime(ctx context.Context) (int64, error) {
	t, err := s.do(ctx, s.c.B().Time().Build()).AsStrSlice()
	if err != nil || len(t) != 2 {
		return 0, fmt.Errorf("TIME: %w", errors.Join(err, errors.New("TIME reply")))
	}
	return atoi(t[0])*1000 + atoi(t[1])/1000, nil
}

// sweepSlots reads, for every slot, the members of the slot's index of
// kind scored at or before the server's time (one TIME), up to batch of
// each slot at a time, slotsPerStep slots to a pipeline, and hands visit
// the members each pipeline found, and the time. A slot that gave batch members is read
// again after the visit, while its reads change. It stops early when visit returns false, and
// returns the pipelines it sent.
func (s *Store) sweepSlots(ctx context.Context, kind string, batch int, visit func(members []string, now int64) bool) (int, error) {
	steps := 0
	read := func(slots []int, upTo string) ([][]string, error) {
		sctx, cancel := s.bound(ctx)
		defer cancel()
		cmds := make(rueidis.Commands, 0, len(slots))
		for _, slot := range slots {
			cmds = append(cmds, s.c.B().Zrange().Key(s.keys.SlotIndex(slot, kind)).Min("-inf").Max(upTo).Byscore().
				Limit(0, int64(batch)).Build())
		}
		steps++
		res := s.doMulti(sctx, cmds...)
		out := make([][]string, len(slots))
		for i, rr := range res {
			m, err := rr.AsStrSlice()
			if err != nil {
				return nil, fmt.Errorf("ZRANGE %s: %w", s.keys.SlotIndex(slots[i], kind), err)
			}
			out[i] = m
		}
		return out, nil
	}
	sctx, cancel := s.bound(ctx)
	now, err := s.serverTime(sctx)
	cancel()
	if err != nil {
		return steps, err
	}
	// One time for the whole sweep: what falls due while it runs is the
	// next pass's.
	upTo := strconv.FormatInt(now, 10)
	slots := make([]int, 0, slotsPerStep)
	var prev map[int][]string // the members of the slots read again, as last read
	for from := 0; from < canonical.Slots; from += slotsPerStep {
		if err := ctx.Err(); err != nil {
			return steps, err
		}
		slots = slots[:0]
		for slot := from; slot < min(from+slotsPerStep, canonical.Slots); slot++ {
			slots = append(slots, slot)
		}
		// The chunk's members go to visit together; slots that gave a whole
		// batch are read again, together, until a read finds nothing moved.
		for len(slots) > 0 {
			found, err := read(slots, upTo)
			if err != nil {
				return steps, err
			}
			var members []string
			var full []int
			next := map[int][]string{}
			for i, m := range found {
				if p, again := prev[slots[i]]; again && slices.Equal(p, m) {
					continue // the visit moved none of them: the next pass tries again
				}
				members = append(members, m...)
				if len(m) == batch {
					full = append(full, slots[i])
					next[slots[i]] = m
				}
			}
			if len(members) > 0 && !visit(members, now) {
				return steps, nil
			}
			prev, slots = next, full
		}
		prev = nil
	}
	return steps, nil
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

// passedLease is one lease found passed.
type passedLease struct{ run, id string }

// runs reaps the passed leases of runs, reading again the runs that had a
// whole batch of them, while abandons make progress; then it moves each
// run in its slot's due set to its next lease (reschedule.lua).
func (r *reaping) runs(ctx context.Context, runs []string, now int64) {
	defer r.reschedule(ctx, runs)
	for len(runs) > 0 {
		budget := r.opts.MaxAbandon - len(r.rep.Abandoned)
		if budget <= 0 {
			r.rep.Truncated = true
			return
		}
		passed, full, err := r.passed(ctx, runs, now)
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

// reschedule moves each run in its slot's due set to its earliest lease,
// or drops it, reapParallel at a time.
func (r *reaping) reschedule(ctx context.Context, runs []string) {
	s := r.s
	var wg sync.WaitGroup
	sem := make(chan struct{}, reapParallel)
	for _, run := range runs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			rctx, cancel := s.bound(ctx)
			defer cancel()
			_, err := execReschedule(rctx, s, rescheduleKeys{Run: s.keys.Run(run), Calls: s.keys.Calls(run),
				Due: s.keys.RunSlotIndex(run, canonical.SlotDue)}, rescheduleArgs{RunID: run})
			if err != nil {
				r.fail(fmt.Errorf("reschedule %s: %w", run, err))
			}
		}()
	}
	wg.Wait()
}

// passed reads the first Batch leases of each run in one pipeline, and
// returns the ones passed by now (the server's time the sweep read), and
// the runs whose every lease read had passed (they may have more).
func (r *reaping) passed(ctx context.Context, runs []string, now int64) (passed []passedLease, full []string, err error) {
	s := r.s
	ctx, cancel := s.bound(ctx)
	defer cancel()
	cmds := make(rueidis.Commands, 0, len(runs))
	for _, run := range runs {
		cmds = append(cmds, s.inFlight(s.keys.Calls(run), 0, r.opts.Batch))
	}
	res := s.doMulti(ctx, cmds...)
	for i, run := range runs {
		leases, err := res[i].AsZScores()
		if err != nil {
			r.fail(fmt.Errorf("ZRANGE %s: %w", s.keys.Calls(run), err))
			continue
		}
		n := 0
		for _, l := range leases {
			if l.Score > float64(now) {
				break
			}
			n++
			if canonical.ValidateToolCallID(l.Member) != nil {
				r.fail(fmt.Errorf("%s holds %q, not a tool_call_id", s.keys.Calls(run), l.Member))
				continue
			}
			passed = append(passed, passedLease{run, l.Member})
		}
		if n == r.opts.Batch {
			full = append(full, run)
		}
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
