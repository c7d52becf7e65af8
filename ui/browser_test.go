package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
	"github.com/toolcanon/toolcanon/ui"
	"github.com/toolcanon/toolcanon/ui/internal/seed"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// browser is a headless chromium and what its pages did: the dialogs they
// opened and the console errors they wrote.
type browser struct {
	ctx     context.Context
	mu      sync.Mutex
	dialogs []string
	errors  []string
}

// newBrowser starts Debian's chromium headless, with an empty profile and
// no background networking. A machine without chromium fails the test: the
// UI's tests are browser tests.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed: run 'make setup' as root (sudo make setup), which installs it with apt-get: %v", err)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{ctx: ctx}
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.errors = append(b.errors, m.String()+" at "+m.URL)
				b.mu.Unlock()
			}
		}
	}()
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, ev.Message)
			b.mu.Unlock()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	return b
}

// do runs steps, failing the test on an error.
func (b *browser) do(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		sctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		text, _ := chromedp.Run(sctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
		t.Fatalf("browser: %v; the page:\n%s", err, text)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("browser: %s: %v", expr, err)
	}
	return v
}

// clean fails the test when a page opened a dialog or wrote a console error,
// after giving late events a moment to arrive.
func (b *browser) clean(t *testing.T) {
	t.Helper()
	time.Sleep(200 * time.Millisecond)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.dialogs) > 0 {
		t.Errorf("a page opened dialogs: %q", b.dialogs)
	}
	if len(b.errors) > 0 {
		t.Errorf("console errors: %q", b.errors)
	}
}

// forget drops what was collected: for pages that are expected to fail.
func (b *browser) forget() {
	time.Sleep(200 * time.Millisecond)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dialogs, b.errors = nil, nil
}

// redisStore opens a store on the harness's Redis under a prefix of its
// own, so that its runs list holds only this test's runs.
func redisStore(t *testing.T) *redisstore.Store {
	t.Helper()
	prefix := "ui" + strings.ToLower(canonical.NewOwner()[:10])
	s, err := redisstore.New(redisstore.Options{Addrs: []string{redistest.Addr(t)}, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func serve(t *testing.T, s canonical.Store, opts ui.Options) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(ui.Handler(s, opts))
	t.Cleanup(srv.Close)
	return srv
}

// TestBrowserReadOnly walks a Redis store read-only, as `toolcanon ui` serves
// it by default: the seeded run shows up on the runs list; the operator goes
// from it to the run and to a call; stored <script> and onerror= payloads
// show as text and run nothing; there is no raw response and no action; the
// page refreshes itself; no page writes a console error.
func TestBrowserReadOnly(t *testing.T) {
	s := redisStore(t)
	ctx := context.Background()
	if err := seed.Run(ctx, s, "demo-run-ui", time.Hour); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, s, ui.Options{LiveInterval: time.Second})
	b := newBrowser(t)

	b.do(t, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`a.run-link`)))
	if got := eval[string](t, b, `document.querySelector("a.run-link").textContent`); got != "demo-run-ui" {
		t.Fatalf("runs list shows %q, want the seeded run", got)
	}
	if n := eval[int](t, b, `document.querySelectorAll("#runs tbody tr.stuck").length`); n != 1 {
		t.Errorf("%d runs marked stuck, want 1", n)
	}
	// Keyboard: the first Tab reaches the skip link; Tabs go on to the run,
	// and Enter opens it.
	b.do(t, chromedp.KeyEvent(kb.Tab))
	if cls := eval[string](t, b, `document.activeElement.className`); cls != "skip" {
		t.Errorf("the first Tab focuses %q, want the skip link", cls)
	}
	for i := 0; i < 30 && !eval[bool](t, b, `document.activeElement.matches("a.run-link")`); i++ {
		b.do(t, chromedp.KeyEvent(kb.Tab))
	}
	b.do(t, chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.ID("inflight")))
	if got := eval[string](t, b, `document.querySelector("#inflight tr.stuck td:nth-child(3)").textContent`); got != "LEASE_PASSED" {
		t.Errorf("the stuck call shows %q, want LEASE_PASSED", got)
	}
	if n := eval[int](t, b, `document.querySelectorAll("svg.timeline rect").length`); n != 6 {
		t.Errorf("timeline draws %d calls, want 6", n)
	}
	if n := eval[int](t, b, `document.querySelectorAll("a.abandon, #reap-run, #close-run").length`); n != 0 {
		t.Errorf("%d action links without AllowActions", n)
	}

	b.do(t, chromedp.Click(chromedp.CSS(`a.call-link[href*="`+seed.Hostile+`"]`)), chromedp.WaitVisible(chromedp.ID("result")))
	result := eval[string](t, b, `document.getElementById("result").textContent`)
	for _, p := range []string{seed.ScriptPayload, seed.OnerrorPayload} {
		if !strings.Contains(result, p) {
			t.Errorf("the result does not show %q as text: %q", p, result)
		}
	}
	if n := eval[int](t, b, `document.querySelectorAll("main script, main img, main [onerror]").length`); n != 0 {
		t.Errorf("stored payloads became %d elements", n)
	}
	if n := eval[int](t, b, `document.querySelectorAll("#raw, #request").length`); n != 0 {
		t.Error("raw response or request shown without ShowRaw")
	}
	if html := eval[string](t, b, `document.documentElement.outerHTML`); strings.Contains(html, seed.Secret) {
		t.Error("the raw response's secret reached the page")
	}

	// Live refresh: the script swaps in a fresh <main> and says when.
	b.do(t, chromedp.Navigate(srv.URL+"/run?run=demo-run-ui"), chromedp.WaitVisible(chromedp.ID("inflight")))
	eval[bool](t, b, `document.getElementById("main").dataset.old = "1", true`)
	b.do(t, chromedp.Sleep(2500*time.Millisecond))
	if old := eval[bool](t, b, `document.getElementById("main").dataset.old === "1"`); old {
		t.Error("the run page did not refresh itself")
	}
	if st := eval[string](t, b, `document.getElementById("live-state").textContent`); !strings.HasPrefix(st, "live · ") || strings.Contains(st, "paused") {
		t.Errorf("live state %q", st)
	}
	b.clean(t)

	// Without JavaScript the pages read the same.
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	b.do(t, chromedp.Navigate(srv.URL+"/run?run=demo-run-ui"), chromedp.WaitVisible(chromedp.ID("calls")))
	if n := eval[int](t, b, `document.querySelectorAll("#calls tbody tr").length`); n != 4 {
		t.Errorf("without JavaScript the run page lists %d completed calls, want 4", n)
	}
}

// TestBrowserActions runs the actions on an in-memory store with ShowRaw
// and AllowActions: the raw response shows redacted, payloads as text; an
// abandon of the passed lease goes through its confirmation; a forged POST
// from another site, without the page's token, is refused.
func TestBrowserActions(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	if err := seed.Run(ctx, s, "demo-run-mem", time.Hour); err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	var logMu sync.Mutex
	srv := serve(t, s, ui.Options{ShowRaw: true, AllowActions: true, Log: newLog(&logged, &logMu)})
	b := newBrowser(t)

	b.do(t, chromedp.Navigate(srv.URL+"/call?run=demo-run-mem&call=call_kb_1"), chromedp.WaitVisible(chromedp.ID("raw")))
	raw := eval[string](t, b, `document.getElementById("raw").textContent`)
	if strings.Contains(raw, seed.Secret) || !strings.Contains(raw, "api_key") {
		t.Errorf("raw response not redacted: %q", raw)
	}
	b.do(t, chromedp.Navigate(srv.URL+"/call?run=demo-run-mem&call="+seed.Hostile), chromedp.WaitVisible(chromedp.ID("raw")))
	if raw := eval[string](t, b, `document.getElementById("raw").textContent`); !strings.Contains(raw, seed.ScriptPayload) {
		t.Errorf("raw response does not show the payload as text: %q", raw)
	}
	if n := eval[int](t, b, `document.querySelectorAll("main script, main img").length`); n != 0 {
		t.Errorf("stored payloads became %d elements", n)
	}

	b.do(t, chromedp.Navigate(srv.URL+"/run?run=demo-run-mem"), chromedp.WaitVisible(chromedp.CSS(`a.abandon`)))
	if n := eval[int](t, b, `document.querySelectorAll("a.abandon").length`); n != 1 {
		t.Fatalf("%d abandon links, want 1 (the passed lease only)", n)
	}
	b.do(t, chromedp.Click(chromedp.CSS(`a.abandon`)), chromedp.WaitVisible(chromedp.ID("confirm")))
	if u, _ := s.Get(ctx, "demo-run-mem", seed.Stuck); u.Status != canonical.StatusProjecting {
		t.Fatal("the confirmation page acted before it was confirmed")
	}
	b.do(t, chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("done")))
	rec, err := s.Get(ctx, "demo-run-mem", seed.Stuck)
	if err != nil || rec.Error != canonical.CodeExecutionAbandoned {
		t.Fatalf("after the abandon the call is %v %v, %v", rec.Status, rec.Error, err)
	}
	logMu.Lock()
	if !strings.Contains(logged.String(), "ui: action") || !strings.Contains(logged.String(), seed.Stuck) {
		t.Errorf("the action was not logged: %q", logged.String())
	}
	logMu.Unlock()
	b.clean(t)

	// A page of another site posts the form it would need, without the token.
	if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: "demo-run-mem", ToolCallID: "call_stuck_2", Tool: "kb.search",
		Owner: canonical.NewOwner(), Principal: seed.Principal, Request: []byte(`{}`), TTL: time.Hour, Lease: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<form method="post" action="%s/act"><input name="do" value="abandon"><input name="confirm" value="abandon">
<input name="run" value="demo-run-mem"><input name="call" value="call_stuck_2"><input name="csrf" value="guess"></form>
<script>document.forms[0].submit()</script>`, srv.URL)
	}))
	defer evil.Close()
	b.do(t, chromedp.Navigate(evil.URL), chromedp.WaitVisible(chromedp.ID("error-code")))
	if code := eval[string](t, b, `document.getElementById("error-code").dataset.code`); code != string(ui.CodeCSRF) {
		t.Errorf("forged POST answered %q, want %s", code, ui.CodeCSRF)
	}
	b.forget()
	if rec, _ := s.Get(ctx, "demo-run-mem", "call_stuck_2"); rec.Status != canonical.StatusProjecting {
		t.Error("the forged POST abandoned the call")
	}
}

// TestBrowserScreens draws the three main pages of a Redis store (an
// active, a closed, a lost and a long run) at 1280 and 390 pixels:
// none is wider than its window (tables scroll in their own box). With
// TOOLCANON_UI_SCREENSHOTS=DIR set it writes the screenshots the README
// shows there.
func TestBrowserScreens(t *testing.T) {
	s := redisStore(t)
	ctx := context.Background()
	for _, r := range []string{"demo-run-a1", "demo-run-b2", "demo-run-c3"} {
		if err := seed.Run(ctx, s, r, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := seed.Long(ctx, s, "batch-run-d4", 120, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.CloseRun(ctx, "demo-run-b2", seed.Principal); err != nil {
		t.Fatal(err)
	}
	// demo-run-c3 loses its state, as an eviction would.
	if _, err := redistest.Command(redistest.Addr(t), "DEL", s.Keys().Run("demo-run-c3")); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, s, ui.Options{AllowActions: true})
	b := newBrowser(t)
	dir := os.Getenv("TOOLCANON_UI_SCREENSHOTS")
	pages := []struct{ name, path, ready string }{
		{"runs", "/", "#runs"},
		{"run", "/run?run=demo-run-a1", "#calls"},
		{"call", "/call?run=demo-run-a1&call=" + seed.Hostile, "#result"},
	}
	for _, w := range []int64{1280, 390} {
		for _, p := range pages {
			b.do(t, chromedp.EmulateViewport(w, 900), chromedp.Navigate(srv.URL+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready)))
			if sw := eval[int64](t, b, `document.documentElement.scrollWidth`); sw > w {
				t.Errorf("%s at %d px is %d px wide", p.name, w, sw)
			}
			if dir == "" {
				continue
			}
			ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("ui-%s-%d.png", p.name, w)), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	b.clean(t)
}

// TestBrowserSignsInAndOut signs in through the login page in chromium:
// the cookie it keeps holds a random session id that expires, never the
// token, and scripts cannot read it; "Sign out" ends the session, and its
// cookie is no sign-in afterwards.
func TestBrowserSignsInAndOut(t *testing.T) {
	const tok = "0123456789abcdef-browser-operator"
	s := memstore.New()
	ctx := context.Background()
	if err := seed.Run(ctx, s, "demo-run-login", time.Hour); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, s, ui.Options{BearerTokens: []string{tok}})
	b := newBrowser(t)
	cookies := func() []*network.Cookie {
		t.Helper()
		cctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		defer cancel()
		res, err := chromedp.Call(cctx, network.GetCookies, network.GetCookiesParams{URLs: []string{srv.URL}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Cookies
	}

	b.do(t, chromedp.Navigate(srv.URL+"/run?run=demo-run-login"), chromedp.WaitVisible(chromedp.ID("token")))
	b.do(t, chromedp.SendKeys(chromedp.ID("token"), tok), chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.ID("sign-out")))
	cs := cookies()
	if len(cs) != 1 {
		t.Fatalf("%d cookies after sign-in", len(cs))
	}
	c := cs[0]
	expires := time.Unix(int64(c.Expires), 0)
	if c.Name != "toolcanon_ui_session" || strings.Contains(c.Value, tok) || !c.HTTPOnly || c.Session ||
		expires.Before(time.Now().Add(ui.DefaultSessionTTL-time.Minute)) || expires.After(time.Now().Add(ui.DefaultSessionTTL+time.Minute)) {
		t.Fatalf("session cookie %+v", c)
	}
	if got := eval[string](t, b, `document.cookie`); got != "" {
		t.Errorf("a script reads the cookie: %q", got)
	}

	b.do(t, chromedp.Click(chromedp.ID("sign-out")), chromedp.WaitVisible(chromedp.ID("token")))
	if cs := cookies(); len(cs) != 0 {
		t.Errorf("cookies after signing out: %+v", cs)
	}
	b.do(t, chromedp.Navigate(srv.URL+"/run?run=demo-run-login"), chromedp.WaitVisible(chromedp.ID("token")))
	req, _ := http.NewRequest("GET", srv.URL+"/run?run=demo-run-login", nil)
	req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the signed-out session's cookie: %d, want the login page", resp.StatusCode)
	}
	b.clean(t)
}
