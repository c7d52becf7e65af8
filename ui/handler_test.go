package ui_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/ui"
	"github.com/toolcanon/toolcanon/ui/internal/seed"
)

// get serves one request and returns its status, body and headers.
func get(h http.Handler, method, target string, body url.Values, hdr ...string) (int, string, http.Header) {
	var r *http.Request
	if body != nil {
		r = httptest.NewRequest(method, target, strings.NewReader(body.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		r = httptest.NewRequest(method, target, nil)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(b), w.Header()
}

// codeOf returns the stable code an error page shows.
func codeOf(body string) string {
	m := regexp.MustCompile(`data-code="([A-Z_]+)"`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

func seeded(t testing.TB, runs ...string) *memstore.Store {
	t.Helper()
	s := memstore.New()
	for _, r := range runs {
		if err := seed.Run(context.Background(), s, r, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestSecurityHeadersOnEveryPage(t *testing.T) {
	h := ui.Handler(seeded(t, "r1"), ui.Options{})
	for _, target := range []string{"/", "/run?run=r1", "/call?run=r1&call=call_kb_1", "/nope", "/run?run=bad%20id", "/assets/style.css"} {
		_, _, hdr := get(h, "GET", target, nil)
		csp := hdr.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", target, csp)
		}
		if hdr.Get("X-Frame-Options") != "DENY" || hdr.Get("Referrer-Policy") != "no-referrer" || hdr.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", target, hdr)
		}
	}
}

func TestPagesHaveNoInlineScript(t *testing.T) {
	h := ui.Handler(seeded(t, "r1"), ui.Options{ShowRaw: true, AllowActions: true})
	inline := regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]|<[^>]*\son[a-z]+=`)
	for _, target := range []string{"/", "/run?run=r1", "/call?run=r1&call=" + seed.Hostile, "/confirm?do=reap&run=r1"} {
		code, body, _ := get(h, "GET", target, nil)
		if code != 200 {
			t.Fatalf("%s: %d", target, code)
		}
		if m := inline.FindString(body); m != "" {
			t.Errorf("%s: inline script or handler %q", target, m)
		}
	}
}

func TestHostilePayloadsAreEscaped(t *testing.T) {
	h := ui.Handler(seeded(t, "r1"), ui.Options{ShowRaw: true})
	_, body, _ := get(h, "GET", "/call?run=r1&call="+seed.Hostile, nil)
	for _, p := range []string{seed.ScriptPayload, seed.OnerrorPayload} {
		if strings.Contains(body, p) {
			t.Errorf("payload %q is in the page unescaped", p)
		}
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the script payload is not shown as text")
	}
}

func TestRawOnlyWithShowRawAndRedacted(t *testing.T) {
	s := seeded(t, "r1")
	rec, err := s.Get(context.Background(), "r1", "call_kb_1")
	if err != nil {
		t.Fatal(err)
	}
	_, off, _ := get(ui.Handler(s, ui.Options{}), "GET", "/call?run=r1&call=call_kb_1", nil)
	if strings.Contains(off, `id="raw"`) || strings.Contains(off, `id="request"`) || strings.Contains(off, "api_key") || strings.Contains(off, "refund approval") {
		t.Error("raw response or request shown without ShowRaw")
	}
	_, on, _ := get(ui.Handler(s, ui.Options{ShowRaw: true}), "GET", "/call?run=r1&call=call_kb_1", nil)
	if !strings.Contains(on, `id="raw"`) || !strings.Contains(on, "api_key") || strings.Contains(on, seed.Secret) {
		t.Error("with ShowRaw the raw response is not shown redacted")
	}
	for _, body := range []string{off, on} {
		if strings.Contains(body, rec.Owner) {
			t.Error("the owner token is on the page")
		}
	}
	_, capped, _ := get(ui.Handler(s, ui.Options{ShowRaw: true, RawCap: 10}), "GET", "/call?run=r1&call=call_kb_1", nil)
	if !strings.Contains(capped, "Cut at the UI's cap") || strings.Contains(capped, "Refund approval&#34;,&#34;score") {
		t.Error("RawCap does not cut the raw response")
	}
}

func TestActionsOffByDefault(t *testing.T) {
	s := seeded(t, "r1")
	h := ui.Handler(s, ui.Options{})
	_, run, _ := get(h, "GET", "/run?run=r1", nil)
	if strings.Contains(run, "/confirm") {
		t.Error("the run page offers actions")
	}
	if code, body, _ := get(h, "GET", "/confirm?do=abandon&run=r1&call="+seed.Stuck, nil); code != 403 || codeOf(body) != string(ui.CodeActionsOff) {
		t.Errorf("confirm without actions: %d %s", code, codeOf(body))
	}
	form := url.Values{"do": {"abandon"}, "confirm": {"abandon"}, "run": {"r1"}, "call": {seed.Stuck}}
	if code, body, _ := get(h, "POST", "/act", form); code != 403 || codeOf(body) != string(ui.CodeActionsOff) {
		t.Errorf("POST without actions: %d %s", code, codeOf(body))
	}
	if rec, _ := s.Get(context.Background(), "r1", seed.Stuck); rec.Status != canonical.StatusProjecting {
		t.Error("an action ran while actions are off")
	}
}

// csrfOf reads the token of a confirmation page.
func csrfOf(t *testing.T, h http.Handler, query string) string {
	t.Helper()
	_, body, _ := get(h, "GET", "/confirm?"+query, nil)
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token on the confirmation page: %s", body)
	}
	return m[1]
}

func TestActionsNeedTokenOriginAndConfirmation(t *testing.T) {
	s := seeded(t, "r1")
	h := ui.Handler(s, ui.Options{AllowActions: true})
	tok := csrfOf(t, h, "do=abandon&run=r1&call="+seed.Stuck)
	form := func(csrf, confirm string) url.Values {
		return url.Values{"do": {"abandon"}, "confirm": {confirm}, "run": {"r1"}, "call": {seed.Stuck}, "csrf": {csrf}}
	}
	refused := []struct {
		name string
		form url.Values
		hdr  []string
		code canonical.Code
	}{
		{"no token", form("", "abandon"), nil, ui.CodeCSRF},
		{"wrong token", form(strings.Repeat("0", len(tok)), "abandon"), nil, ui.CodeCSRF},
		{"cross-site", form(tok, "abandon"), []string{"Sec-Fetch-Site", "cross-site"}, ui.CodeCSRF},
		{"other origin", form(tok, "abandon"), []string{"Origin", "http://evil.example"}, ui.CodeCSRF},
		{"unconfirmed", form(tok, ""), nil, ui.CodeUnconfirmed},
	}
	for _, c := range refused {
		if _, body, _ := get(h, "POST", "/act", c.form, c.hdr...); codeOf(body) != string(c.code) {
			t.Errorf("%s: answered %q, want %s", c.name, codeOf(body), c.code)
		}
	}
	if rec, _ := s.Get(context.Background(), "r1", seed.Stuck); rec.Status != canonical.StatusProjecting {
		t.Fatal("a refused action changed the call")
	}
	if code, body, _ := get(h, "POST", "/act", form(tok, "abandon"), "Sec-Fetch-Site", "same-origin", "Origin", "null"); code != 200 || !strings.Contains(body, `id="done"`) {
		t.Fatalf("the confirmed abandon: %d %s", code, codeOf(body))
	}
	if rec, _ := s.Get(context.Background(), "r1", seed.Stuck); rec.Error != canonical.CodeExecutionAbandoned {
		t.Errorf("after the abandon the call is %s", rec.Error)
	}
	// The running call's lease has not passed: the store refuses, and says so.
	running := url.Values{"do": {"abandon"}, "confirm": {"abandon"}, "run": {"r1"}, "call": {"call_running_1"}, "csrf": {tok}}
	if code, body, _ := get(h, "POST", "/act", running); code != 409 || codeOf(body) != string(canonical.CodeInvalidTransition) {
		t.Errorf("abandon of a running lease: %d %s", code, codeOf(body))
	}
}

func TestReapAndCloseARun(t *testing.T) {
	s := seeded(t, "r1")
	ctx := context.Background()
	h := ui.Handler(s, ui.Options{AllowActions: true})
	tok := csrfOf(t, h, "do=reap&run=r1")
	if code, body, _ := get(h, "POST", "/act", url.Values{"do": {"reap"}, "confirm": {"reap"}, "run": {"r1"}, "csrf": {tok}}); code != 200 || !strings.Contains(body, seed.Stuck) {
		t.Fatalf("reap: %d %s", code, codeOf(body))
	}
	if ids, _ := s.ExpiredLeases(ctx, "r1", 10); len(ids) != 0 {
		t.Errorf("after the reap %v have passed leases", ids)
	}
	wrong := url.Values{"do": {"close"}, "confirm": {"close"}, "run": {"r1"}, "csrf": {tok}, "principal": {"someone-else"}}
	if code, body, _ := get(h, "POST", "/act", wrong); code != 409 || codeOf(body) != string(canonical.CodeRunForbidden) {
		t.Errorf("close by another principal: %d %s", code, codeOf(body))
	}
	right := url.Values{"do": {"close"}, "confirm": {"close"}, "run": {"r1"}, "csrf": {tok}, "principal": {seed.Principal}}
	if code, _, _ := get(h, "POST", "/act", right); code != 200 {
		t.Fatalf("close: %d", code)
	}
	if u, _ := s.Usage(ctx, "r1"); !u.Closed {
		t.Error("the run is not closed")
	}
}

func TestBearerTokens(t *testing.T) {
	const tok = "0123456789abcdef-operator"
	h := ui.Handler(seeded(t, "r1"), ui.Options{BearerTokens: []string{tok}})
	if code, _, hdr := get(h, "GET", "/", nil); code != http.StatusSeeOther || hdr.Get("Location") != "/login" {
		t.Errorf("no token: %d to %q", code, hdr.Get("Location"))
	}
	if code, body, _ := get(h, "GET", "/run?run=r1", nil, "Authorization", "Bearer wrong"); code != 401 || codeOf(body) != string(ui.CodeUnauthorized) {
		t.Errorf("wrong token: %d %s", code, codeOf(body))
	}
	if code, _, _ := get(h, "GET", "/run?run=r1", nil, "Authorization", "Bearer "+tok); code != 200 {
		t.Errorf("right token: %d", code)
	}
	if code, _, _ := get(h, "POST", "/login", url.Values{"token": {"wrong"}}); code != 401 {
		t.Errorf("login with a wrong token: %d", code)
	}
	_, _, hdr := get(h, "POST", "/login", url.Values{"token": {tok}})
	c := hdr.Get("Set-Cookie")
	if !strings.Contains(c, "HttpOnly") || !strings.Contains(c, "SameSite=Strict") {
		t.Fatalf("login cookie %q", c)
	}
	if code, _, _ := get(h, "GET", "/run?run=r1", nil, "Cookie", strings.SplitN(c, ";", 2)[0]); code != 200 {
		t.Errorf("with the login cookie: %d", code)
	}
}

// The login cookie holds a random session id that expires, never the
// bearer token: the token as a cookie is no sign-in. Signing out ends the
// session; its cookie is then refused, as it is once it has expired. The
// cookie is Secure over TLS, or behind a trusted proxy that says HTTPS.
func TestLoginSessions(t *testing.T) {
	const tok = "0123456789abcdef-operator"
	now := time.Unix(1_800_000_000, 0)
	proxy := netip.MustParsePrefix("192.0.2.0/24")
	h := ui.Handler(seeded(t, "r1"), ui.Options{BearerTokens: []string{tok}, SessionTTL: time.Hour,
		TrustedProxies: []netip.Prefix{proxy}, Now: func() time.Time { return now }})
	login := func(hdr ...string) *http.Cookie {
		t.Helper()
		r := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		cs := w.Result().Cookies()
		if w.Code != http.StatusSeeOther || len(cs) != 1 {
			t.Fatalf("login: %d %v", w.Code, cs)
		}
		return cs[0]
	}
	c := login()
	if c.Name != "toolcanon_ui_session" || c.Value == tok || strings.Contains(c.Value, tok) || len(c.Value) != 64 ||
		c.MaxAge != 3600 || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure {
		t.Fatalf("login cookie %+v", c)
	}
	if other := login(); other.Value == c.Value {
		t.Fatal("two sign-ins got one session id")
	}
	page := func(cookie string) (int, string) {
		code, body, _ := get(h, "GET", "/run?run=r1", nil, "Cookie", cookie)
		return code, body
	}
	if code, body := page(c.Name + "=" + c.Value); code != 200 || !strings.Contains(body, `id="sign-out"`) {
		t.Fatalf("with the session cookie: %d, sign-out offered %v", code, strings.Contains(body, `id="sign-out"`))
	}
	for _, bad := range []string{"toolcanon_ui_token=" + tok, c.Name + "=" + tok, c.Name + "=" + strings.Repeat("0", 64)} {
		if code, _ := page(bad); code != http.StatusSeeOther {
			t.Errorf("cookie %q: %d, want the login page", bad, code)
		}
	}

	// Sign out: only with the page's CSRF token.
	_, body, _ := get(h, "GET", "/", nil, "Cookie", c.Name+"="+c.Value)
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	if csrf == nil {
		t.Fatal("no sign-out form")
	}
	if code, _, _ := get(h, "POST", "/logout", url.Values{"csrf": {"forged"}}, "Cookie", c.Name+"="+c.Value); code != http.StatusForbidden {
		t.Errorf("sign-out without the page's token: %d", code)
	}
	code, _, hdr := get(h, "POST", "/logout", url.Values{"csrf": {csrf[1]}}, "Cookie", c.Name+"="+c.Value)
	if code != http.StatusSeeOther || hdr.Get("Location") != "/login" || !strings.Contains(hdr.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("sign-out: %d %q %q", code, hdr.Get("Location"), hdr.Get("Set-Cookie"))
	}
	if code, _ := page(c.Name + "=" + c.Value); code != http.StatusSeeOther {
		t.Errorf("a signed-out session: %d", code)
	}

	// A session ends with its TTL.
	c = login()
	now = now.Add(time.Hour + time.Second)
	if code, _ := page(c.Name + "=" + c.Value); code != http.StatusSeeOther {
		t.Errorf("an expired session: %d", code)
	}

	// Secure over TLS, or behind a trusted proxy that says HTTPS.
	r := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.TLS = &tls.ConnectionState{}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if cs := w.Result().Cookies(); len(cs) != 1 || !cs[0].Secure {
		t.Errorf("a sign-in over TLS: %+v", cs)
	}
	if c := login("X-Forwarded-Proto", "https"); !c.Secure {
		t.Error("a sign-in through the trusted proxy over HTTPS is not Secure")
	}
	untrusted := ui.Handler(seeded(t, "r2"), ui.Options{BearerTokens: []string{tok}})
	r = httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Forwarded-Proto", "https")
	w = httptest.NewRecorder()
	untrusted.ServeHTTP(w, r)
	if cs := w.Result().Cookies(); len(cs) != 1 || cs[0].Secure {
		t.Errorf("X-Forwarded-Proto from a client that is no trusted proxy: %+v", cs)
	}
}

func TestHostsRefuseOtherNames(t *testing.T) {
	h := ui.Handler(seeded(t, "r1"), ui.Options{Hosts: []string{"127.0.0.1", "localhost"}})
	r := httptest.NewRequest("GET", "/", nil)
	r.Host = "rebound.example:7474"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusMisdirectedRequest || codeOf(w.Body.String()) != string(ui.CodeHost) {
		t.Errorf("another host: %d %s", w.Code, codeOf(w.Body.String()))
	}
	r.Host = "localhost:7474"
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Errorf("localhost: %d", w.Code)
	}
}

// Every request counts against its client's cap, whether it sends the
// live refresh's header or not: past RequestsPerInterval at once, 429
// UI_LIVE_LIMIT, then RequestsPerInterval an interval; the embedded
// assets are not counted. Past MaxLiveClients, a new client waits for one
// to go idle.
func TestEveryRequestIsCapped(t *testing.T) {
	now := time.Unix(1000, 0)
	h := ui.Handler(seeded(t, "r1"), ui.Options{LiveInterval: 2 * time.Second, RequestsPerInterval: 3, MaxLiveClients: 1,
		Now: func() time.Time { return now }})
	from := func(remote, target string, live bool) (int, string) {
		r := httptest.NewRequest("GET", target, nil)
		r.RemoteAddr = remote + ":5000"
		if live {
			r.Header.Set("X-Toolcanon-Live", "1")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	for i, target := range []string{"/run?run=r1", "/", "/call?run=r1&call=call_kb_1"} {
		if c, _ := from("10.0.0.1", target, false); c != 200 {
			t.Fatalf("request %d: %d", i, c)
		}
	}
	for _, live := range []bool{false, true} {
		if c, body := from("10.0.0.1", "/call?run=r1&call=x", live); c != http.StatusTooManyRequests || codeOf(body) != string(ui.CodeLiveLimit) {
			t.Errorf("a request past the cap (live header %v): %d %s", live, c, codeOf(body))
		}
	}
	if c, _ := from("10.0.0.1", "/assets/style.css", false); c != 200 {
		t.Errorf("an asset past the cap: %d", c)
	}
	if c, _ := from("10.0.0.2", "/", false); c != http.StatusTooManyRequests {
		t.Errorf("a second client over the cap of clients: %d", c)
	}
	now = now.Add(time.Second) // 1.5 requests' worth
	if c, _ := from("10.0.0.1", "/", false); c != 200 {
		t.Errorf("a request once the bucket refilled: %d", c)
	}
	if c, _ := from("10.0.0.1", "/", false); c != http.StatusTooManyRequests {
		t.Errorf("the second request of that second: %d", c)
	}
	now = now.Add(5 * time.Second)
	if c, _ := from("10.0.0.2", "/", false); c != 200 {
		t.Errorf("a client after the first went idle: %d", c)
	}
}

// Behind a trusted proxy, each client forwarded counts on its own.
func TestTrustedProxyNamesTheClient(t *testing.T) {
	h := ui.Handler(seeded(t, "r1"), ui.Options{RequestsPerInterval: 1, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}})
	via := func(forwarded string) int {
		r := httptest.NewRequest("GET", "/", nil) // from 192.0.2.1, the proxy
		r.Header.Set("X-Forwarded-For", forwarded)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if c := via("203.0.113.9, 198.51.100.1"); c != 200 {
		t.Fatalf("first client: %d", c)
	}
	if c := via("198.51.100.1"); c != http.StatusTooManyRequests {
		t.Errorf("the same client again: %d", c)
	}
	if c := via("198.51.100.2, 192.0.2.7"); c != 200 {
		t.Errorf("another client, through two proxies: %d", c)
	}
}

// bare hides a store's Browser.
type bare struct{ canonical.Store }

func TestStoreWithoutListing(t *testing.T) {
	h := ui.Handler(bare{seeded(t, "r1")}, ui.Options{})
	if _, body, _ := get(h, "GET", "/", nil); !strings.Contains(body, `id="no-listing"`) {
		t.Error("the runs page does not say the store cannot list")
	}
	if _, body, _ := get(h, "GET", "/run?run=r1", nil); !strings.Contains(body, "call_kb_1") {
		t.Error("a run by id is not shown")
	}
}

func TestRunPagesWalkTheIndex(t *testing.T) {
	s := memstore.New()
	if err := seed.Long(context.Background(), s, "long", 120, time.Hour); err != nil {
		t.Fatal(err)
	}
	h := ui.Handler(s, ui.Options{PageSize: 50})
	next := regexp.MustCompile(`id="next" href="/run\?([^"]+)"`) // the link the browser follows
	q, seen := "run=long", 0
	for pages := 0; ; pages++ {
		_, body, _ := get(h, "GET", "/run?"+strings.ReplaceAll(q, "&amp;", "&"), nil)
		for i := seen; i < min(seen+50, 120); i++ {
			if !strings.Contains(body, "call="+"call_"+strconv.Itoa(i)+`"`) {
				t.Fatalf("page %d lacks call_%d", pages, i)
			}
		}
		if strings.Contains(body, "call=call_"+strconv.Itoa(seen+50)+`"`) {
			t.Fatalf("page %d shows more than its 50", pages)
		}
		if pages == 0 && !strings.Contains(body, `id="last" href="/run?from=70&amp;run=long"`) {
			t.Error("the first page has no link to the last page (from 70)")
		}
		m := next.FindStringSubmatch(body)
		if m == nil {
			if pages != 2 {
				t.Errorf("%d pages, want 3", pages+1)
			}
			return
		}
		q, seen = m[1], seen+50
	}
}

func TestBadParametersHaveStableCodes(t *testing.T) {
	h := ui.Handler(seeded(t, "r1"), ui.Options{AllowActions: true})
	for _, target := range []string{"/?state=gone", "/?cursor=zz", "/?x=1", "/?stuck=yes", "/run?run=r1&from=-1", "/run?run=r1&from=01",
		"/run?run=a%20b", "/call?run=r1", "/confirm?do=format&run=r1", "/confirm?do=abandon&run=r1", "/run?run=r1&run=r2"} {
		code, body, _ := get(h, "GET", target, nil)
		if code != 400 || (codeOf(body) != string(ui.CodeBadRequest) && codeOf(body) != string(canonical.CodeInvalidArgument)) {
			t.Errorf("%s: %d %q", target, code, codeOf(body))
		}
	}
	if code, body, _ := get(h, "POST", "/run?run=r1", url.Values{}); code != 405 || codeOf(body) != string(ui.CodeMethod) {
		t.Errorf("POST to a page: %d %q", code, codeOf(body))
	}
	if code, body, _ := get(h, "GET", "/nope", nil); code != 404 || codeOf(body) != string(ui.CodeNotFound) {
		t.Errorf("no such page: %d %q", code, codeOf(body))
	}
	if code, body, _ := get(h, "GET", "/call?run=r1&call=nope", nil); code != 404 || codeOf(body) != string(canonical.CodeNotFound) {
		t.Errorf("unknown call: %d %q", code, codeOf(body))
	}
}

func FuzzRunsQuery(f *testing.F) {
	// One client sends every input: the per-client cap is not what is fuzzed.
	h := ui.Handler(seeded(f, "r1"), ui.Options{RequestsPerInterval: 1 << 30})
	for _, q := range []string{"", "state=active&stuck=1", "cursor=0-17", "principal=ops%40example&near=1", "cursor=%00", "state=closed&state=lost"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		code, body, _ := get(h, "GET", "/?"+url.PathEscape(q), nil)
		if u, err := url.ParseQuery(q); err == nil {
			code, body, _ = get(h, "GET", "/?"+u.Encode(), nil)
		}
		if code != 200 && (code != 400 || codeOf(body) == "") {
			t.Fatalf("%q: %d %q", q, code, codeOf(body))
		}
	})
}

func FuzzActionForm(f *testing.F) {
	s := seeded(f, "r1")
	// One client sends every input: the per-client cap is not what is fuzzed.
	h := ui.Handler(s, ui.Options{AllowActions: true, RequestsPerInterval: 1 << 30})
	f.Add("abandon", "r1", seed.Stuck, "", "abandon")
	f.Add("close", "r1", "", seed.Principal, "close")
	f.Add("reap", "r1\x00", "x", "p", "")
	f.Add("abandon", "r1", strings.Repeat("c", 9<<10), "", "abandon")
	f.Fuzz(func(t *testing.T, do, run, call, principal, confirm string) {
		form := url.Values{"do": {do}, "run": {run}, "call": {call}, "principal": {principal}, "confirm": {confirm}, "csrf": {"forged"}}
		code, body, _ := get(h, "POST", "/act", form)
		// A form past the 8 KiB bound is refused unread, before its token is looked at.
		want, wantCode := 403, string(ui.CodeCSRF)
		if len(form.Encode()) > 8<<10 {
			want, wantCode = 400, string(ui.CodeBadRequest)
		}
		if code != want || codeOf(body) != wantCode {
			t.Fatalf("a form without the token (%d bytes): %d %q", len(form.Encode()), code, codeOf(body))
		}
		q := url.Values{"do": {do}, "run": {run}, "call": {call}}
		if code, body, _ := get(h, "GET", "/confirm?"+q.Encode(), nil); code != 200 && (code != 400 || codeOf(body) == "") {
			t.Fatalf("confirm %v: %d %q", q, code, codeOf(body))
		}
	})
}

func TestRunPageShowsOutcomesAndProtocol(t *testing.T) {
	h := ui.Handler(seeded(t, "r1"), ui.Options{})
	_, body, _ := get(h, "GET", "/run?run=r1", nil)
	for _, want := range []string{
		`<title>LEASE_PASSED 1</title>`, `<title>EXECUTION_FAILED 1</title>`, `<title>EVIDENCE_FOUND 2</title>`, `<title>NO_EVIDENCE 1</title>`,
		`2 report(s), 1 pending, 1 violation(s)`, `open: 1 invalid report(s) since the last valid one`,
		// Three READY calls are progress facts; the failed one is left out.
		`Progress facts on this page: 3; left out: ERROR 1 ·`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
	if n, m := strings.Count(body, `<td class="fact">fact</td>`), strings.Count(body, `<td class="fact">ERROR</td>`); n != 3 || m != 1 {
		t.Errorf("the completed calls show %d facts and %d left out as ERROR, want 3 and 1", n, m)
	}
}

func TestRunsPageShowsLastCompletion(t *testing.T) {
	s := seeded(t, "r1")
	rec, err := s.Get(context.Background(), "r1", "call_ticket_1") // the last one the seed completes
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := get(ui.Handler(s, ui.Options{}), "GET", "/", nil)
	last := regexp.MustCompile(`<td title="([^"]+)">[^<]*</td>\n</tr>`).FindStringSubmatch(body) // the row's last cell
	if want := rec.UpdatedAt.UTC().Format("2006-01-02 15:04:05.000Z"); last == nil || last[1] != want {
		t.Errorf("the runs page shows the last completion %q, want %q", last, want)
	}
}

// Calls in flight past the first page are reached through their own
// pager, earliest lease first, keeping the completion index's page.
func TestInFlightPages(t *testing.T) {
	s := seeded(t, "r1") // two calls in flight: the stuck one, then the running one
	for i := range 5 {
		if _, err := s.Begin(context.Background(), canonical.BeginRequest{RunID: "r1", ToolCallID: "open_" + strconv.Itoa(i),
			Tool: "kb.search", Owner: canonical.NewOwner(), Principal: seed.Principal, Request: []byte(`{}`), TTL: time.Hour,
			Lease: time.Duration(i+1) * time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	h := ui.Handler(s, ui.Options{PageSize: 3})
	inflight := regexp.MustCompile(`<tr class="(?:stuck)?"><td><a href="/call\?run=r1&amp;call=([a-z_0-9]+)">`)
	rows := func(body string) []string {
		var ids []string
		for _, m := range inflight.FindAllStringSubmatch(body, -1) {
			ids = append(ids, m[1])
		}
		return ids
	}
	next := regexp.MustCompile(`id="inflight-next" href="([^"]+)"`)
	var seen []string
	target := "/run?run=r1&from=1"
	for page := 0; target != ""; page++ {
		if page > 5 {
			t.Fatal("the pages of calls in flight do not end")
		}
		code, body, _ := get(h, "GET", target, nil)
		if code != 200 {
			t.Fatalf("%s: %d", target, code)
		}
		if !strings.Contains(body, "Positions 1–") {
			t.Errorf("%s: the completion index's page was not kept", target)
		}
		seen = append(seen, rows(body)...)
		target = ""
		if m := next.FindStringSubmatch(body); m != nil {
			target = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	want := "call_stuck_1,open_0,open_1,open_2,open_3,open_4,call_running_1"
	if got := strings.Join(seen, ","); got != want {
		t.Errorf("calls in flight over the pages: %s, want %s", got, want)
	}
	if code, body, _ := get(h, "GET", "/run?run=r1&inflight=-1", nil); code != 400 || codeOf(body) != string(ui.CodeBadRequest) {
		t.Errorf("a negative position: %d %s", code, codeOf(body))
	}

	// The reap action abandons every passed lease of the run: each page of
	// calls in flight offers it while one is passed, though only the first
	// page shows the passed call, and none offers it once it is gone.
	acts := ui.Handler(s, ui.Options{PageSize: 3, AllowActions: true})
	reapOffered := func() []int {
		var at []int
		for _, from := range []int{0, 3, 6} {
			code, body, _ := get(acts, "GET", "/run?run=r1&inflight="+strconv.Itoa(from), nil)
			if code != 200 {
				t.Fatalf("inflight=%d: %d", from, code)
			}
			if strings.Contains(body, `id="reap-run"`) {
				at = append(at, from)
			}
		}
		return at
	}
	if got := reapOffered(); !slices.Equal(got, []int{0, 3, 6}) {
		t.Errorf("with call_stuck_1's lease passed, the pages of calls in flight from %v offer to reap, want [0 3 6]", got)
	}
	if _, err := s.Abandon(context.Background(), "r1", "call_stuck_1"); err != nil {
		t.Fatal(err)
	}
	if got := reapOffered(); len(got) != 0 {
		t.Errorf("with no lease passed, the pages from %v offer to reap", got)
	}
}
