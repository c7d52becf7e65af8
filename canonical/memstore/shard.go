package memstore

import (
	"container/heap"
	"sync"
	"sync/atomic"
)

// shardCount is how many shards a store splits its runs over: a power of
// two, well above the cores of one host, so that the runs in flight rarely
// share a lock.
const shardCount = 256

// expireBatch is the most deadline entries one write examines in its own
// shard before it does its work: more than one Begin adds (a record, its
// run's state and leases), so that a busy shard keeps up with what expires.
const expireBatch = 16

// sweepEvery is how many Begins of a shard pass between its visits to
// another shard, taken in turn, so that expired entries of shards nobody
// writes to any more are dropped too. A visit examines at most sweepBatch
// entries, and only when that shard's lock is free: it never waits.
const (
	sweepEvery = 8
	sweepBatch = 64
)

// kind says which of a shard's maps holds an entry.
type kind uint8

const (
	kindRecord kind = iota
	kindRun
	kindIndex
	kindLeases
	kindMarker
)

// expiry is what every entry of a shard carries: when it expires, and where
// the shard's deadline heap holds it.
//
// The heap is ordered by deadline, fixed when the entry enters the heap;
// expires may only grow after that (a TTL raised), so deadline <= expires.
// An entry found at the top with a deadline passed but a later expiry moves
// down to its expiry: raising a TTL costs nothing until then.
type expiry struct {
	expires  int64 // unix ms
	deadline int64 // unix ms, the heap's order; <= expires
	at       int   // index in the shard's heap, -1 when not in it
	kind     kind
	run, id  string // the entry's map key; id only for a record
}

// deadlines is a min-heap of entries by deadline (container/heap).
type deadlines []*expiry

func (d deadlines) Len() int           { return len(d) }
func (d deadlines) Less(i, j int) bool { return d[i].deadline < d[j].deadline }
func (d deadlines) Swap(i, j int) {
	d[i], d[j] = d[j], d[i]
	d[i].at, d[j].at = i, j
}

func (d *deadlines) Push(x any) {
	e := x.(*expiry)
	e.at = len(*d)
	*d = append(*d, e)
}

func (d *deadlines) Pop() any {
	old := *d
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*d = old[:len(old)-1]
	e.at = -1
	return e
}

// shard is the state of the runs whose ids hash to it, under one lock.
type shard struct {
	mu        sync.Mutex
	records   map[recordKey]*record
	runs      map[string]*runState
	indexes   map[string]*index
	leases    map[string]*leaseSet
	markers   map[string]*marker
	audits    map[string]*auditLog // runs' pending audit events and chain heads
	deadlines deadlines
	begins    uint64        // Begins that wrote here: paces the visits to other shards
	runCount  *atomic.Int64 // the store's run states, over every shard
	owned     *owners       // the store's live run states by owner
	// longestPass is the most entries one pass of expire examined, for
	// tests that hold the passes to their bound.
	longestPass int
	_           [64]byte // keeps the next shard's lock off this shard's cache lines
}

func (sh *shard) init() {
	sh.records, sh.runs = map[recordKey]*record{}, map[string]*runState{}
	sh.indexes, sh.leases, sh.markers = map[string]*index{}, map[string]*leaseSet{}, map[string]*marker{}
	sh.audits = map[string]*auditLog{}
}

// track enters an entry, its expiry set, into the deadline heap.
func (sh *shard) track(e *expiry, k kind, run, id string) {
	e.kind, e.run, e.id, e.deadline = k, run, id, e.expires
	heap.Push(&sh.deadlines, e)
}

// drop removes an entry from its map and from the deadline heap.
func (sh *shard) drop(e *expiry) {
	if e.at >= 0 {
		heap.Remove(&sh.deadlines, e.at)
	}
	switch e.kind {
	case kindRecord:
		delete(sh.records, recordKey{e.run, e.id})
	case kindRun:
		if r, ok := sh.runs[e.run]; ok {
			sh.runCount.Add(-1)
			if r.principal != "" {
				sh.owned.add(r.principal, -1)
			}
		}
		delete(sh.runs, e.run)
		sh.dropHeadOnly(e.run)
	case kindIndex:
		delete(sh.indexes, e.run)
	case kindLeases:
		delete(sh.leases, e.run)
	case kindMarker:
		delete(sh.markers, e.run)
	}
}

// expire examines at most limit entries at the top of the deadline heap:
// those expired by now are dropped, those whose TTL was raised move to
// their expiry. It returns how many it examined.
func (sh *shard) expire(now int64, limit int) int {
	n := 0
	for ; n < limit && len(sh.deadlines) > 0 && sh.deadlines[0].deadline <= now; n++ {
		e := sh.deadlines[0]
		if e.expires > now {
			e.deadline = e.expires
			heap.Fix(&sh.deadlines, 0)
		} else {
			sh.drop(e)
		}
	}
	sh.longestPass = max(sh.longestPass, n)
	return n
}

// entry is how live reaches the expiry every entry embeds.
func (e *expiry) entry() *expiry { return e }

// live returns m[k] if it exists and has not expired, dropping it when it
// has: the one lookup of every record, run state, index and lease set.
func live[K comparable, V interface {
	comparable
	entry() *expiry
}](sh *shard, m map[K]V, k K, now int64) V {
	var none V
	v := m[k]
	if v != none && v.entry().expires <= now {
		sh.drop(v.entry())
		return none
	}
	return v
}

func (sh *shard) liveRecord(k recordKey, now int64) *record { return live(sh, sh.records, k, now) }
func (sh *shard) liveRun(id string, now int64) *runState    { return live(sh, sh.runs, id, now) }
func (sh *shard) liveIndex(id string, now int64) *index     { return live(sh, sh.indexes, id, now) }
func (sh *shard) liveLeases(id string, now int64) *leaseSet { return live(sh, sh.leases, id, now) }
func (sh *shard) liveMarker(id string, now int64) *marker   { return live(sh, sh.markers, id, now) }

// newRun creates a run's state expiring at expires, as the first HSET and
// PEXPIRE of a script do on Redis.
func (sh *shard) newRun(id string, now, expires int64) *runState {
	r := &runState{toolCalls: map[string]int64{}, createdMillis: now}
	r.expires = expires
	sh.runs[id] = r
	sh.runCount.Add(1)
	sh.track(&r.expiry, kindRun, id, "")
	return r
}

// newLeases creates a run's lease set expiring at expires.
func (sh *shard) newLeases(id string, expires int64) *leaseSet {
	l := &leaseSet{until: map[string]int64{}}
	l.expires = expires
	sh.leases[id] = l
	sh.track(&l.expiry, kindLeases, id, "")
	return l
}

// begun reports whether a key only a begun run has lives: its live marker,
// completion index or leases. None outlives the run's state, so with no
// state (or one without limits) they prove the state was lost.
func (sh *shard) begun(runID string, now int64) bool {
	return sh.liveMarker(runID, now) != nil || sh.liveIndex(runID, now) != nil || sh.liveLeases(runID, now) != nil
}

// cover makes the run's live marker expire at expires unless it expires
// later already, creating it when the run has none.
func (sh *shard) cover(runID string, expires, now int64) {
	m := sh.liveMarker(runID, now)
	if m == nil {
		m = &marker{}
		m.expires = expires
		sh.markers[runID] = m
		sh.track(&m.expiry, kindMarker, runID, "")
	} else if m.expires < expires {
		m.expires = expires
	}
}

// dropLease removes id from the run's leases; an empty set is gone, as an
// empty ZSET is on Redis.
func (sh *shard) dropLease(runID, id string, now int64) {
	// An empty set is kept until it expires, as Redis keeps the leases
	// with their "~" member: they prove the run began calls.
	if l := sh.liveLeases(runID, now); l != nil {
		delete(l.until, id)
	}
}

// appendIndex appends id to the run's completion index and extends the
// index to cover a record that expires at recExpires.
func (sh *shard) appendIndex(runID, id string, recExpires, now int64) {
	sh.dropFromIndex(runID, id, now)
	x := sh.liveIndex(runID, now)
	if x == nil {
		x = &index{in: map[string]bool{}}
		x.expires = recExpires
		sh.indexes[runID] = x
		sh.track(&x.expiry, kindIndex, runID, "")
	}
	x.ids = append(x.ids, id)
	x.in[id] = true
	if x.expires < recExpires {
		x.expires = recExpires
	}
}

// dropFromIndex takes id out of the run's completion index, keeping the
// order of the others: an id whose record expired, begun or finished
// again (rare: the set of the index's ids tells at once).
func (sh *shard) dropFromIndex(runID, id string, now int64) {
	x := sh.liveIndex(runID, now)
	if x == nil || !x.in[id] {
		return
	}
	delete(x.in, id)
	for i, v := range x.ids {
		if v == id {
			x.ids = append(x.ids[:i:i], x.ids[i+1:]...)
			break
		}
	}
}

// owners counts the live run states each owner (a principal's tag) has,
// over every shard, for WithMaxRunsPerPrincipal. A shard's lock may be held
// when it is taken; it never takes one.
type owners struct {
	mu sync.Mutex
	by map[string]int64
}

// add changes tag's count by d, forgetting a count that reaches zero.
func (o *owners) add(tag string, d int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.by == nil {
		o.by = map[string]int64{}
	}
	if n := o.by[tag] + d; n > 0 {
		o.by[tag] = n
	} else {
		delete(o.by, tag)
	}
}

// count returns tag's count.
func (o *owners) count(tag string) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.by[tag]
}
