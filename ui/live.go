package ui

import (
	"net/http"
	"sync"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// liveLimiter caps the requests of each client: a bucket of perInterval
// requests, refilled at perInterval an interval, and at most max clients
// counted at once; a client is forgotten once it has been idle for two
// intervals (its bucket is full again).
type liveLimiter struct {
	mu          sync.Mutex
	interval    time.Duration
	perInterval float64
	max         int
	now         func() time.Time
	by          map[string]*clientUse
}

// clientUse is one client's bucket.
type clientUse struct {
	tokens float64
	last   time.Time
}

func newLiveLimiter(interval time.Duration, perInterval, max int, now func() time.Time) *liveLimiter {
	return &liveLimiter{interval: interval, perInterval: float64(perInterval), max: max, now: now, by: map[string]*clientUse{}}
}

// allow reports whether client may make one more request now, and counts
// it.
func (l *liveLimiter) allow(client string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	c := l.by[client]
	if c == nil {
		if len(l.by) >= l.max {
			for k, u := range l.by {
				if now.Sub(u.last) > 2*l.interval {
					delete(l.by, k)
				}
			}
			if len(l.by) >= l.max {
				return false
			}
		}
		c = &clientUse{tokens: l.perInterval, last: now}
		l.by[client] = c
	}
	c.tokens = min(l.perInterval, c.tokens+now.Sub(c.last).Seconds()/l.interval.Seconds()*l.perInterval)
	c.last = now
	if c.tokens < 1 {
		return false
	}
	c.tokens--
	return true
}

// liveAllowed refuses a request over its client's cap with 429
// UI_LIVE_LIMIT: a live refresh or not, every request counts.
func (s *server) liveAllowed(w http.ResponseWriter, r *http.Request) bool {
	if s.live.allow(s.client(r)) {
		return true
	}
	w.Header().Set("Retry-After", "1")
	s.fail(w, r, http.StatusTooManyRequests, canonical.Errorf(CodeLiveLimit,
		"requests are capped at %d per %v per client", int(s.live.perInterval), s.opts.LiveInterval))
	return false
}
