package ui

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// Defaults and ceilings of Options.
const (
	DefaultPageSize       = 50
	MaxPageSize           = 500
	DefaultRawCap         = 64 << 10
	MaxRawCap             = 1 << 20
	DefaultLiveInterval   = 5 * time.Second
	MinLiveInterval       = time.Second
	DefaultMaxLiveClients = 64
	// DefaultRequestsPerInterval is Options.RequestsPerInterval's default:
	// a page left refreshing, and an operator's clicks besides.
	DefaultRequestsPerInterval = 20
	// DefaultTimeout bounds the store reads of one page.
	DefaultTimeout = 10 * time.Second
)

// Stable codes of the UI's own failures; a store's failure shows its
// canonical code.
const (
	CodeBadRequest   canonical.Code = "UI_BAD_REQUEST"  // a parameter is malformed
	CodeNotFound     canonical.Code = "UI_NOT_FOUND"    // no such page
	CodeMethod       canonical.Code = "UI_METHOD"       // the method is not served here
	CodeUnauthorized canonical.Code = "UI_UNAUTHORIZED" // a bearer token is required
	CodeHost         canonical.Code = "UI_HOST"         // the Host header is not one the UI serves
	CodeCSRF         canonical.Code = "UI_CSRF"         // an action without the page's token, or from another origin
	CodeActionsOff   canonical.Code = "UI_ACTIONS_OFF"  // actions were not enabled
	CodeLiveLimit    canonical.Code = "UI_LIVE_LIMIT"   // live refreshes too often, or too many clients
	CodeNoListing    canonical.Code = "UI_NO_LISTING"   // the store cannot list runs
	CodeUnconfirmed  canonical.Code = "UI_UNCONFIRMED"  // an action without its confirmation
)

// Options configure Handler. Zero fields take their defaults.
type Options struct {
	// ShowRaw shows each call's raw response and request, redacted by
	// projectors/redact and cut to RawCap bytes. Off, neither is read.
	ShowRaw bool
	// RawCap bounds the raw response and request shown (default
	// DefaultRawCap, at most MaxRawCap).
	RawCap int
	// AllowActions offers the operator's actions: abandon a call whose
	// lease passed, reap a run's passed leases, close a run. Each takes a
	// confirmation step and the page's CSRF token, and is logged to Log.
	AllowActions bool
	// PageSize is the runs or calls one page shows (default
	// DefaultPageSize, at most MaxPageSize).
	PageSize int
	// LiveInterval is how often a page refreshes itself (default
	// DefaultLiveInterval, at least MinLiveInterval).
	LiveInterval time.Duration
	// RequestsPerInterval caps the requests of one client (by address):
	// this many at once, then this many per LiveInterval (default
	// DefaultRequestsPerInterval). Every authenticated request counts, live
	// refresh or not, but the embedded assets; past the cap it is refused
	// with 429 UI_LIVE_LIMIT.
	RequestsPerInterval int
	// MaxLiveClients caps the clients counted at once (default
	// DefaultMaxLiveClients); one more is refused with UI_LIVE_LIMIT until
	// a client has been idle for two intervals.
	MaxLiveClients int
	// BearerTokens, when set, are required of every request: an
	// "Authorization: Bearer" header, or the cookie of a session the login
	// page started with one (a random id, never the token).
	BearerTokens []string
	// SessionTTL is how long a sign-in of the login page lasts (default
	// DefaultSessionTTL); the page's "Sign out" ends it sooner.
	SessionTTL time.Duration
	// TrustedProxies are the addresses of reverse proxies in front of the
	// UI: a request from one counts against the cap of the last
	// X-Forwarded-For address that is not one, and is HTTPS when its
	// X-Forwarded-Proto says so (the session cookie is then Secure, as it
	// is over TLS).
	TrustedProxies []netip.Prefix
	// Hosts, when set, are the only Host headers served (host or
	// host:port), against DNS rebinding; the command sets them for a
	// loopback listener.
	Hosts []string
	// Log receives every action (nil: slog.Default()).
	Log *slog.Logger
	// Timeout bounds the store reads of one page (default DefaultTimeout).
	Timeout time.Duration
	// Now is the clock of lease and TTL displays (nil: time.Now).
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	clamp := func(v, def, lo, hi int) int {
		if v == 0 {
			return def
		}
		return min(max(v, lo), hi)
	}
	o.RawCap = clamp(o.RawCap, DefaultRawCap, 1, MaxRawCap)
	o.PageSize = clamp(o.PageSize, DefaultPageSize, 1, MaxPageSize)
	o.MaxLiveClients = clamp(o.MaxLiveClients, DefaultMaxLiveClients, 1, 1<<16)
	o.RequestsPerInterval = clamp(o.RequestsPerInterval, DefaultRequestsPerInterval, 1, 1<<20)
	if o.SessionTTL <= 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.LiveInterval == 0 {
		o.LiveInterval = DefaultLiveInterval
	}
	o.LiveInterval = max(o.LiveInterval, MinLiveInterval)
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// server is one Handler.
type server struct {
	store    canonical.Store
	browser  canonical.Browser // nil when the store cannot list runs
	opts     Options
	csrf     string // the per-handler token every action form carries
	tmpl     *template.Template
	live     *liveLimiter
	tokens   [][32]byte // SHA-256 of each bearer token
	sessions *sessions
	mux      *http.ServeMux
}

// Handler serves the operator UI of store. A store that implements
// canonical.Browser (memstore and redisstore do) gets the runs list; any
// other still serves a run and a call by id. The handler authenticates
// (Options.BearerTokens) but listens nowhere: whoever mounts it decides who
// can reach it.
func Handler(store canonical.Store, opts Options) http.Handler {
	s := &server{store: store, opts: opts.withDefaults(), mux: http.NewServeMux()}
	s.browser, _ = store.(canonical.Browser)
	var b [32]byte
	_, _ = rand.Read(b[:])
	s.csrf = hex.EncodeToString(b[:])
	for _, t := range s.opts.BearerTokens {
		s.tokens = append(s.tokens, sha256.Sum256([]byte(t)))
	}
	s.live = newLiveLimiter(s.opts.LiveInterval, s.opts.RequestsPerInterval, s.opts.MaxLiveClients, s.opts.Now)
	s.sessions = &sessions{ttl: s.opts.SessionTTL, now: s.opts.Now}
	s.tmpl = template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html"))
	s.mux.HandleFunc("GET /{$}", s.serveView("runs", s.runsView))
	s.mux.HandleFunc("GET /run", s.serveView("run", s.runView))
	s.mux.HandleFunc("GET /call", s.serveView("call", s.callView))
	s.mux.HandleFunc("GET /confirm", s.confirmPage)
	s.mux.HandleFunc("POST /act", s.act)
	s.mux.HandleFunc("GET /login", s.loginPage)
	s.mux.HandleFunc("POST /login", s.login)
	s.mux.HandleFunc("POST /logout", s.logout)
	s.mux.Handle("GET /assets/", http.FileServerFS(assetFS))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			s.fail(w, r, http.StatusMethodNotAllowed, canonical.Errorf(CodeMethod, "%s is not served here", r.Method))
			return
		}
		s.fail(w, r, http.StatusNotFound, canonical.Errorf(CodeNotFound, "no page %s", r.URL.Path))
	})
	return s
}

// ServeHTTP applies the headers, the host check, authentication and the
// request cap, then routes.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if !s.hostAllowed(r.Host) {
		s.fail(w, r, http.StatusMisdirectedRequest, canonical.Errorf(CodeHost, "host %q is not served here", r.Host))
		return
	}
	asset := strings.HasPrefix(r.URL.Path, "/assets/")
	ok, signedIn := s.authorized(r)
	if !ok && r.URL.Path != "/login" && !asset {
		if r.Method == http.MethodGet && r.Header.Get("Authorization") == "" {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		h.Set("WWW-Authenticate", `Bearer realm="toolcanon-ui"`)
		s.fail(w, r, http.StatusUnauthorized, canonical.Errorf(CodeUnauthorized, "a bearer token is required"))
		return
	}
	// Counted once authenticated, so that no one without a token can take
	// the clients' places.
	if ok && !asset && !s.liveAllowed(w, r) {
		return
	}
	if signedIn {
		r = r.WithContext(context.WithValue(r.Context(), signedInKey{}, true))
	}
	s.mux.ServeHTTP(w, r)
}

// signedInKey marks, in its context, a request of a login session: its
// pages offer to sign out.
type signedInKey struct{}

// hostAllowed reports whether host is one of Options.Hosts (any when none).
func (s *server) hostAllowed(host string) bool {
	if len(s.opts.Hosts) == 0 {
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	for _, a := range s.opts.Hosts {
		if strings.EqualFold(a, host) || strings.EqualFold(a, name) {
			return true
		}
	}
	return false
}

// view reads the data of one page from its query: the page's title and
// data, or an error with a stable code.
type view func(ctx context.Context, q url.Values) (title string, data any, err error)

// serveView serves template name with what v reads, within the page's
// time bound, and shows the server time it took. Every view refreshes
// itself.
func (s *server) serveView(name string, v view) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := s.ctx(r)
		defer cancel()
		start := time.Now()
		title, data, err := v(ctx, r.URL.Query())
		if err != nil {
			s.fail(w, r, storeStatus(err), err)
			return
		}
		s.render(w, r, http.StatusOK, name, page{Title: title, Live: true, Data: data,
			Elapsed: time.Since(start).Round(time.Microsecond).String()})
	}
}

// page is what every template gets.
type page struct {
	Title   string
	Elapsed string // the server time of the view's reads
	Live    bool   // the page refreshes itself
	LiveMs  int64
	Actions bool
	ShowRaw bool
	CSRF    string
	// SignedIn: the request came with a login session's cookie, so the
	// page offers to sign out.
	SignedIn bool
	Err      *failure
	Data     any
}

// failure is an error as a page shows it.
type failure struct {
	Code    canonical.Code
	Message string
	Status  int
}

// render writes template name with p.
func (s *server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	p.Actions, p.ShowRaw, p.CSRF = s.opts.AllowActions, s.opts.ShowRaw, s.csrf
	p.SignedIn, _ = r.Context().Value(signedInKey{}).(bool)
	p.LiveMs = s.opts.LiveInterval.Milliseconds()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var buf strings.Builder
	if err := s.tmpl.ExecuteTemplate(&buf, name, p); err != nil {
		s.opts.Log.Error("ui: template failed", "page", name, "error", err)
		http.Error(w, "UI_TEMPLATE: the page could not be drawn", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(buf.String()))
}

// fail renders the error page of err, with its stable code.
func (s *server) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	code := canonical.CodeOf(err)
	if code == "" {
		code = canonical.CodeStoreUnavailable
	}
	msg := err.Error()
	var ce *canonical.Error
	if errors.As(err, &ce) && ce.Msg != "" {
		msg = ce.Msg
	}
	s.render(w, r, status, "error", page{Title: string(code), Err: &failure{Code: code, Message: msg, Status: status}})
}

// storeStatus is the HTTP status of a store failure.
func storeStatus(err error) int {
	switch canonical.CodeOf(err) {
	case canonical.CodeNotFound:
		return http.StatusNotFound
	case canonical.CodeInvalidArgument, CodeBadRequest:
		return http.StatusBadRequest
	case canonical.CodeInvalidTransition, canonical.CodeRunForbidden:
		return http.StatusConflict
	}
	return http.StatusBadGateway
}

// ctx bounds the store reads of one request.
func (s *server) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.opts.Timeout)
}
