package ui

import (
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// liveHeader marks the requests of the page's live refresh.
const liveHeader = "X-Toolcanon-Live"

// liveLimiter caps live refreshes: one per client per interval (a little
// early is let through), and at most max clients at once; a client's slot
// frees after two intervals without a refresh.
type liveLimiter struct {
	mu       sync.Mutex
	interval time.Duration
	max      int
	now      func() time.Time
	last     map[string]time.Time
}

func newLiveLimiter(interval time.Duration, max int, now func() time.Time) *liveLimiter {
	return &liveLimiter{interval: interval, max: max, now: now, last: map[string]time.Time{}}
}

// allow reports whether client may refresh now, and records it.
func (l *liveLimiter) allow(client string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if t, ok := l.last[client]; ok {
		if now.Sub(t) < l.interval*3/4 {
			return false
		}
		l.last[client] = now
		return true
	}
	if len(l.last) >= l.max {
		for c, t := range l.last {
			if now.Sub(t) > 2*l.interval {
				delete(l.last, c)
			}
		}
		if len(l.last) >= l.max {
			return false
		}
	}
	l.last[client] = now
	return true
}

// liveAllowed refuses a live refresh over the cap with 429 UI_LIVE_LIMIT.
// A page loaded by the operator is never refused.
func (s *server) liveAllowed(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get(liveHeader) == "" {
		return true
	}
	client := r.RemoteAddr
	if h, _, err := net.SplitHostPort(client); err == nil {
		client = h
	}
	if s.live.allow(client + " " + r.URL.Path) {
		return true
	}
	w.Header().Set("Retry-After", "1")
	s.fail(w, r, http.StatusTooManyRequests, canonical.Errorf(CodeLiveLimit, "live refreshes are capped at one per %v per client", s.opts.LiveInterval))
	return false
}
