package ui

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// DefaultSessionTTL is how long a sign-in lasts when Options.SessionTTL is
// zero.
const DefaultSessionTTL = 8 * time.Hour

// maxSessions bounds the sign-ins kept at once; past it the oldest ends.
const maxSessions = 1024

// sessionCookie is the cookie the login page sets: a random session id,
// never the bearer token.
const sessionCookie = "toolcanon_ui_session"

// sessions are the sign-ins of the login page, by the SHA-256 of their
// random id, each with its expiry.
type sessions struct {
	mu  sync.Mutex
	ttl time.Duration
	now func() time.Time
	by  map[[32]byte]time.Time
}

// start makes a new session and returns its id.
func (ss *sessions) start() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	now := ss.now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.by == nil {
		ss.by = map[[32]byte]time.Time{}
	}
	if len(ss.by) >= maxSessions {
		var oldest [32]byte
		first := true
		for k, exp := range ss.by {
			if !exp.After(now) {
				delete(ss.by, k)
				continue
			}
			if first || exp.Before(ss.by[oldest]) {
				oldest, first = k, false
			}
		}
		if len(ss.by) >= maxSessions {
			delete(ss.by, oldest)
		}
	}
	ss.by[sha256.Sum256([]byte(id))] = now.Add(ss.ttl)
	return id
}

// valid reports whether id is a session that has not expired; an expired
// one is forgotten.
func (ss *sessions) valid(id string) bool {
	if len(id) != 64 {
		return false
	}
	k := sha256.Sum256([]byte(id))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	exp, ok := ss.by[k]
	if ok && !exp.After(ss.now()) {
		delete(ss.by, k)
		return false
	}
	return ok
}

// end forgets id.
func (ss *sessions) end(id string) {
	k := sha256.Sum256([]byte(id))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.by, k)
}

// sessionOf returns the session id r's cookie carries, "" when none.
func sessionOf(r *http.Request) string {
	if c, err := r.Cookie(sessionCookie); err == nil {
		return c.Value
	}
	return ""
}

// authorized reports whether r carries a valid bearer token in its
// Authorization header or the cookie of a live session, or none is
// required; signedIn says it came with the session's cookie.
func (s *server) authorized(r *http.Request) (ok, signedIn bool) {
	if len(s.tokens) == 0 {
		return true, false
	}
	if tok, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found {
		return s.tokenValid(tok), false
	}
	if id := sessionOf(r); id != "" && s.sessions.valid(id) {
		return true, true
	}
	return false, false
}

func (s *server) tokenValid(tok string) bool {
	sum := sha256.Sum256([]byte(tok))
	good := 0
	for _, t := range s.tokens {
		good |= subtle.ConstantTimeCompare(sum[:], t[:])
	}
	return good == 1
}

// loginPage asks for a bearer token when one is required.
func (s *server) loginPage(w http.ResponseWriter, r *http.Request) {
	if len(s.tokens) == 0 {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "login", page{Title: "Sign in"})
}

// login checks a token typed into the login page and starts a session:
// its random id goes in a strict, HTTP-only cookie that expires with it,
// Secure when the request came over TLS (or a trusted proxy says so).
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if len(s.tokens) == 0 || !s.tokenValid(r.PostFormValue("token")) {
		s.fail(w, r, http.StatusUnauthorized, canonical.Errorf(CodeUnauthorized, "that token is not accepted"))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: s.sessions.start(), Path: "/",
		MaxAge: int(s.opts.SessionTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout ends the request's session, with the page's CSRF token from this
// UI's own page, and clears its cookie.
func (s *server) logout(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxActionForm)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, canonical.Errorf(CodeBadRequest, "unreadable form"))
		return
	}
	if !s.sameOrigin(r) || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
		s.fail(w, r, http.StatusForbidden, canonical.Errorf(CodeCSRF, "the sign-out did not come from this UI's page"))
		return
	}
	if id := sessionOf(r); id != "" {
		s.sessions.end(id)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// fromProxy returns the address r came from, and whether that is one of
// Options.TrustedProxies.
func (s *server) fromProxy(r *http.Request) (netip.Addr, bool) {
	host := r.RemoteAddr
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return ip.Unmap(), s.trusted(ip.Unmap())
}

func (s *server) trusted(ip netip.Addr) bool {
	for _, p := range s.opts.TrustedProxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// secure reports whether r reached the UI over HTTPS: over TLS, or through
// a trusted proxy that says so (X-Forwarded-Proto: https).
func (s *server) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	_, proxied := s.fromProxy(r)
	return proxied && strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
}

// client names who sent r, for the request cap: its address, or behind
// trusted proxies the last address of X-Forwarded-For that is not one.
func (s *server) client(r *http.Request) string {
	ip, proxied := s.fromProxy(r)
	if !ip.IsValid() {
		return r.RemoteAddr
	}
	if proxied {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0 && i >= len(hops)-32; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break
			}
			if hop = hop.Unmap(); !s.trusted(hop) {
				return hop.String()
			}
		}
	}
	return ip.String()
}
