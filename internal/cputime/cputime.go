// Package cputime measures the processor time a piece of code takes on the
// calling goroutine's thread, for tests that compare costs on a shared,
// loaded machine: wall time counts the time other processes hold the
// processor, which grows with the length of a run and so distorts a
// comparison of a short run with a long one; thread time does not.
package cputime

import (
	"runtime"
	"time"
)

// Measure runs f once, locked to one thread, and returns the processor
// time that thread spent in it, or the wall time where the platform cannot
// tell thread time apart.
func Measure(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, ok := threadTime()
	if !ok {
		t := time.Now()
		f()
		return time.Since(t)
	}
	f()
	end, _ := threadTime()
	return end - start
}
