package gateway

import (
	"sync"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// Defaults of Caps.
const (
	DefaultMaxCallsInFlight    = 64
	DefaultMaxNewRunsPerMinute = 60
	// DefaultMaxLiveRuns is a tenth of the command's in-memory store.
	DefaultMaxLiveRuns = 1000
)

// Caps bound what one principal may ask of one gateway process: calls in
// flight at once, and new runs per minute (a run is new when this process has
// not served a call of it for ten minutes). Over either, a call is refused
// at once with RATE_LIMITED as a tool result: nothing is recorded or run,
// and nothing waits. Zero fields take the defaults; a negative field is no
// cap. The progress tools are counted as any tool.
//
// MaxLiveRuns bounds the runs one principal has live at once, as this
// process counts them: a run is live from its first tools/call here until
// its last call's record TTL has passed. A tools/call of one more run is
// refused with STORE_FULL, so that no principal fills a shared store for
// the others; the progress tools create no run and count none.
type Caps struct {
	MaxCallsInFlight    int
	MaxNewRunsPerMinute int
	MaxLiveRuns         int
}

// runMemory is how long a run stays known to the caps after its last call.
const runMemory = 10 * time.Minute

// limiter enforces Caps per principal.
type limiter struct {
	inFlight, newRuns, liveRuns int
	mu                          sync.Mutex
	by                          map[string]*principalUse
}

// principalUse is what the limiter knows of one principal.
type principalUse struct {
	inFlight int
	starts   []time.Time          // new runs in the last minute, oldest first
	runs     map[string]time.Time // known runs by last call
	live     map[string]time.Time // live runs, by when their last record expires
}

func newLimiter(c Caps) *limiter {
	l := &limiter{inFlight: c.MaxCallsInFlight, newRuns: c.MaxNewRunsPerMinute, liveRuns: c.MaxLiveRuns, by: map[string]*principalUse{}}
	if l.inFlight == 0 {
		l.inFlight = DefaultMaxCallsInFlight
	}
	if l.newRuns == 0 {
		l.newRuns = DefaultMaxNewRunsPerMinute
	}
	if l.liveRuns == 0 {
		l.liveRuns = DefaultMaxLiveRuns
	}
	return l
}

// acquire admits one call of principal in run, or refuses it; release must
// be called once the call is done. ttl > 0 counts the run live until ttl
// from now (a tools/call); 0 counts no run live (a progress tool).
func (l *limiter) acquire(principal, run string, ttl time.Duration, now time.Time) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.by[principal]
	if u == nil {
		l.sweep(now)
		u = &principalUse{runs: map[string]time.Time{}, live: map[string]time.Time{}}
		l.by[principal] = u
	}
	if l.inFlight > 0 && u.inFlight >= l.inFlight {
		return nil, canonical.Errorf(canonical.CodeRateLimited, "gateway: principal %q has %d calls in flight, the cap", principal, u.inFlight)
	}
	if ttl > 0 && l.liveRuns > 0 {
		if until, known := u.live[run]; !known || !until.After(now) {
			if n := u.liveCount(now); n >= l.liveRuns {
				return nil, canonical.Errorf(canonical.CodeStoreFull, "gateway: principal %q has %d live runs, the cap", principal, n)
			}
		}
	}
	if l.newRuns > 0 {
		if last, known := u.runs[run]; !known || now.Sub(last) > runMemory {
			cut := 0
			for cut < len(u.starts) && now.Sub(u.starts[cut]) >= time.Minute {
				cut++
			}
			u.starts = u.starts[cut:]
			if len(u.starts) >= l.newRuns {
				return nil, canonical.Errorf(canonical.CodeRateLimited, "gateway: principal %q started %d new runs in the last minute, the cap", principal, len(u.starts))
			}
			u.starts = append(u.starts, now)
			if len(u.runs) >= 2*l.newRuns*int(runMemory/time.Minute) {
				for r, t := range u.runs {
					if now.Sub(t) > runMemory {
						delete(u.runs, r)
					}
				}
			}
		}
		u.runs[run] = now
	}
	if until := now.Add(ttl); ttl > 0 && l.liveRuns > 0 && until.After(u.live[run]) {
		u.live[run] = until
	}
	u.inFlight++
	return func() {
		l.mu.Lock()
		u.inFlight--
		l.mu.Unlock()
	}, nil
}

// sweep forgets the principals with nothing in flight and no run called
// within runMemory, once the map has grown, so that it stays bounded by
// the principals active lately.
func (l *limiter) sweep(now time.Time) {
	if len(l.by) < 1024 {
		return
	}
	for p, u := range l.by {
		idle := u.inFlight == 0 && u.liveCount(now) == 0
		for _, t := range u.runs {
			if now.Sub(t) <= runMemory {
				idle = false
				break
			}
		}
		if idle {
			delete(l.by, p)
		}
	}
}

// liveCount forgets the runs whose records have all expired and counts the
// others.
func (u *principalUse) liveCount(now time.Time) int {
	for r, until := range u.live {
		if !until.After(now) {
			delete(u.live, r)
		}
	}
	return len(u.live)
}
