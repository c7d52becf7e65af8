package memstore

import (
	"testing"
	"time"
)

// Len returns how many records the store holds, expired or not.
func Len(s *Store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.records)
}

// AllKeys lists what the store holds as the keys Redis would hold, with the
// time each has left by the store's clock (-1: no expiry). Expired entries
// not yet dropped are left out, as Redis leaves out expired keys.
func AllKeys(s *Store) map[string]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
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
	for k, r := range s.records {
		add("mem:{"+k.run+"}:call:"+k.id, r.expires)
	}
	for id, r := range s.runs {
		add("mem:{"+id+"}:run", r.expires)
	}
	for id, x := range s.indexes {
		add("mem:{"+id+"}:done", x.expires)
	}
	for id, l := range s.leases {
		add("mem:{"+id+"}:leases", l.expires)
	}
	return out
}

// DropRunState forgets a run's state, as eviction or a DEL would on Redis.
func DropRunState(t *testing.T, s *Store, runID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.runs[runID]; !ok {
		t.Fatalf("memstore: run %s has no state to drop", runID)
	}
	delete(s.runs, runID)
}
