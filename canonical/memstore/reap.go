package memstore

import (
	"context"
	"sort"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// Reap implements canonical.Store. With opts.Every it first takes the
// store's reap lease, and yields while another pass holds it. A step is one shard: its lock is held
// while the shard's passed leases are read (at most opts.Batch of each run,
// earliest first), then each call is abandoned under the lock as Abandon
// takes it. A shard with a run that had more than Batch passed leases is
// read again until it has none left or nothing changed.
func (s *Store) Reap(ctx context.Context, opts canonical.ReapOptions) (canonical.ReapReport, error) {
	rep := canonical.ReapReport{Abandoned: []canonical.ReapedCall{}}
	claim := newClaim() // one per pass, as on Redis
	o, err := opts.WithDefaults()
	if err != nil {
		return rep, err
	}
	if o.Every > 0 && !s.takeReapLease(o.Every) {
		rep.Yielded = true
		return rep, nil
	}
	rep.Nodes = 1
	for i := range s.shards {
		for {
			if err := ctx.Err(); err != nil {
				rep.Truncated = true
				return rep, canonical.Wrap(canonical.CodeStoreUnavailable, err, "reap")
			}
			rep.Steps++
			runs, passed, more := s.passedInShard(i, o.Batch, o.MaxAbandon-len(rep.Abandoned))
			rep.Runs += runs
			rep.Expired += len(passed)
			closed := 0
			for _, p := range passed {
				rec, fresh, err := s.abandon(p.run, p.id, claim)
				switch {
				case err == nil && fresh:
					closed++
					rep.Abandoned = append(rep.Abandoned, canonical.ReapedCall{RunID: p.run, ToolCallID: p.id,
						Tool: rec.Tool, LeaseUntil: rec.LeaseUntil, AbandonedAt: rec.UpdatedAt})
				case canonical.CodeOf(err) == canonical.CodeNotFound:
					rep.Gone++
				default: // abandoned by another reaper, completed, or not passed any more
					rep.Skipped++
				}
			}
			if len(rep.Abandoned) >= o.MaxAbandon {
				rep.Truncated = more || i < len(s.shards)-1
				return rep, nil
			}
			if !more || closed == 0 {
				break
			}
		}
	}
	return rep, nil
}

// takeReapLease takes the store's reap lease for every, as a pass on Redis
// sets its lease key, and reports whether it did: false while the lease a
// pass took last runs.
func (s *Store) takeReapLease(every time.Duration) bool {
	now := s.nowMs()
	for {
		until := s.reapLease.Load()
		if now < until {
			return false
		}
		if s.reapLease.CompareAndSwap(until, now+every.Milliseconds()) {
			return true
		}
	}
}

// runLease is one passed lease of a run.
type runLease struct {
	run, id string
	until   int64
}

// passedInShard returns, under shard i's lock, how many runs of the shard
// have passed leases and up to perRun passed leases of each (at most
// budget in all), by run, then lease, then id; more is true when some were
// left out.
func (s *Store) passedInShard(i, perRun, budget int) (runs int, passed []runLease, more bool) {
	sh := &s.shards[i]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.nowMs()
	for run, l := range sh.leases {
		if l.expires <= now || len(l.until) == 0 {
			continue
		}
		var of []runLease
		for id, until := range l.until {
			if until <= now {
				of = append(of, runLease{run, id, until})
			}
		}
		if len(of) > 0 {
			runs++
		}
		sort.Slice(of, func(a, b int) bool {
			if of[a].until != of[b].until {
				return of[a].until < of[b].until
			}
			return of[a].id < of[b].id
		})
		if len(of) > perRun {
			of, more = of[:perRun], true
		}
		passed = append(passed, of...)
	}
	sort.Slice(passed, func(a, b int) bool {
		if passed[a].run != passed[b].run {
			return passed[a].run < passed[b].run
		}
		if passed[a].until != passed[b].until {
			return passed[a].until < passed[b].until
		}
		return passed[a].id < passed[b].id
	})
	if len(passed) > budget {
		passed, more = passed[:budget], true
	}
	return runs, passed, more
}
