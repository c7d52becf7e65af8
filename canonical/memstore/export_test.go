package memstore

import (
	"testing"
	"time"
)

// Batch bounds, for tests that hold the expiry passes to them.
const (
	ExpireBatch = expireBatch
	SweepBatch  = sweepBatch
	ShardCount  = shardCount
)

// Len returns how many records the store holds, expired or not.
func Len(s *Store) int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.records)
		sh.mu.Unlock()
	}
	return n
}

// Tracked returns how many entries the shards' deadline heaps hold, and
// checks that each is the entry its map holds under its key, at its place
// in its heap, with a deadline no later than its expiry.
func Tracked(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for at, e := range sh.deadlines {
			var held *expiry
			switch e.kind {
			case kindRecord:
				if r := sh.records[recordKey{e.run, e.id}]; r != nil {
					held = &r.expiry
				}
			case kindRun:
				if r := sh.runs[e.run]; r != nil {
					held = &r.expiry
				}
			case kindIndex:
				if x := sh.indexes[e.run]; x != nil {
					held = &x.expiry
				}
			case kindLeases:
				if l := sh.leases[e.run]; l != nil {
					held = &l.expiry
				}
			case kindMarker:
				if m := sh.markers[e.run]; m != nil {
					held = &m.expiry
				}
			}
			if held != e || e.at != at || e.deadline > e.expires {
				t.Errorf("shard %d: heap entry %d (%+v) is not its map's entry at its place", i, at, *e)
			}
			if at > 0 && sh.deadlines[(at-1)/2].deadline > e.deadline {
				t.Errorf("shard %d: heap order broken at %d", i, at)
			}
		}
		if want := len(sh.records) + len(sh.runs) + len(sh.indexes) + len(sh.leases) + len(sh.markers); want != len(sh.deadlines) {
			t.Errorf("shard %d: %d entries in maps, %d in the heap", i, want, len(sh.deadlines))
		}
		n += len(sh.deadlines)
		sh.mu.Unlock()
	}
	return n
}

// LongestExpiryPass returns the most heap entries one expiry pass examined
// while holding a shard's lock.
func LongestExpiryPass(s *Store) int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n = max(n, sh.longestPass)
		sh.mu.Unlock()
	}
	return n
}

// AllKeys lists what the store holds as the keys Redis would hold, with the
// time each has left by the store's clock (-1: no expiry). Expired entries
// not yet dropped are left out, as Redis leaves out expired keys.
func AllKeys(s *Store) map[string]time.Duration {
	now := s.nowMs()
	out := map[string]time.Duration{}
	add := func(key string, expires int64) {
		switch {
		case expires == 0:
			out[key] = -1
		case expires > now:
			out[key] = time.Duration(expires-now) * time.Millisecond
		}
	}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, r := range sh.records {
			add("mem:{"+k.run+"}:call:"+k.id, r.expires)
		}
		for id, r := range sh.runs {
			add("mem:{"+id+"}:run", r.expires)
		}
		// The index and the leases are one key on Redis, the run's calls:
		// it lives as long as the later of the two.
		for id, x := range sh.indexes {
			if l := sh.leases[id]; l == nil || l.expires <= x.expires && l.expires != 0 {
				add("mem:{"+id+"}:calls", x.expires)
			}
		}
		for id, l := range sh.leases {
			if x := sh.indexes[id]; x == nil || x.expires < l.expires || l.expires == 0 {
				add("mem:{"+id+"}:calls", l.expires)
			}
		}
		for id, m := range sh.markers {
			add("mem:{"+id+"}:live", m.expires)
		}
		sh.mu.Unlock()
	}
	return out
}

// DropRunState forgets a run's state, as eviction or a DEL would on Redis.
func DropRunState(t *testing.T, s *Store, runID string) {
	sh := &s.shards[s.shardOf(runID)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	r, ok := sh.runs[runID]
	if !ok {
		t.Fatalf("memstore: run %s has no state to drop", runID)
	}
	sh.drop(&r.expiry)
}

// Evict forgets one key of a run, named as the last part of its Redis key
// ("run", "calls", "live"), as memory eviction or a DEL would on Redis:
// "calls" is the run's leases and its completion index, which Redis keeps
// in one key. It fails the test when the run has no such key.
func Evict(t *testing.T, s *Store, runID, key string) {
	t.Helper()
	sh := &s.shards[s.shardOf(runID)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var e *expiry
	switch key {
	case "run":
		if r := sh.runs[runID]; r != nil {
			e = &r.expiry
		}
	case "calls":
		l, x := sh.leases[runID], sh.indexes[runID]
		if l != nil && x != nil {
			sh.drop(&l.expiry)
			e = &x.expiry
		} else if l != nil {
			e = &l.expiry
		} else if x != nil {
			e = &x.expiry
		}
	case "live":
		if m := sh.markers[runID]; m != nil {
			e = &m.expiry
		}
	}
	if e == nil {
		t.Fatalf("memstore: run %s has no key %q to evict", runID, key)
	}
	sh.drop(e)
}
