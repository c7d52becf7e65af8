package gateway

import (
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// A run counts as live until its last call's record TTL has passed: then
// its place in the principal's cap is free again.
func TestLiveRunsFreeAsTheirRecordsExpire(t *testing.T) {
	l := newLimiter(Caps{MaxLiveRuns: 2, MaxNewRunsPerMinute: -1})
	now := time.Unix(1_800_000_000, 0)
	for _, run := range []string{"a", "b"} {
		release, err := l.acquire("p", run, time.Minute, now)
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	// A later call of "b" keeps it live longer.
	release, err := l.acquire("p", "b", time.Hour, now.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	release()
	if _, err := l.acquire("p", "c", time.Minute, now.Add(59*time.Second)); canonical.CodeOf(err) != canonical.CodeStoreFull {
		t.Fatalf("a third live run: %v", err)
	}
	if _, err := l.acquire("p", "c", 0, now.Add(59*time.Second)); err != nil {
		t.Fatalf("a progress tool on a new run: %v", err)
	}
	release, err = l.acquire("p", "c", time.Minute, now.Add(61*time.Second))
	if err != nil {
		t.Fatalf("a new run once a run's records expired: %v", err)
	}
	release()
	if _, err := l.acquire("p", "d", time.Minute, now.Add(62*time.Second)); canonical.CodeOf(err) != canonical.CodeStoreFull {
		t.Fatalf("b is still live: %v", err)
	}
}
