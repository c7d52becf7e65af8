package cputime_test

import (
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/internal/cputime"
)

// Work is counted, sleeping is not.
func TestMeasure(t *testing.T) {
	busy := cputime.Measure(func() {
		for start := time.Now(); time.Since(start) < 30*time.Millisecond; {
		}
	})
	idle := cputime.Measure(func() { time.Sleep(30 * time.Millisecond) })
	if busy < 5*time.Millisecond || busy > 2*time.Second {
		t.Errorf("30 ms of work measured as %v", busy)
	}
	if idle > busy/2 {
		t.Errorf("30 ms asleep measured as %v, 30 ms of work as %v", idle, busy)
	}
}
