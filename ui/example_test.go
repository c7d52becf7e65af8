package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"time"

	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/ui"
	"github.com/toolcanon/toolcanon/ui/internal/seed"
)

// A Go host mounts the UI of its in-memory store on its own mux, read-only
// and without raw responses, behind whatever authentication it has.
func ExampleHandler() {
	store := memstore.New()
	if err := seed.Run(context.Background(), store, "run-1", time.Hour); err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/", ui.Handler(store, ui.Options{}))

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/run?run=run-1", nil))
	body := rec.Body.String()
	fmt.Println(rec.Code, rec.Header().Get("X-Frame-Options"))
	fmt.Println(strings.Contains(body, "call_stuck_1"), strings.Contains(body, "LEASE_PASSED"))
	// Output:
	// 200 DENY
	// true true
}

// Behind a reverse proxy that terminates TLS, the UI believes the proxy's
// X-Forwarded-Proto: the sign-in cookie is Secure, and holds a session id
// that expires, never the token.
func ExampleHandler_behindAProxy() {
	const token = "0123456789abcdef-operator"
	h := ui.Handler(memstore.New(), ui.Options{BearerTokens: []string{token}, SessionTTL: time.Hour,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}})
	r := httptest.NewRequest("POST", "/login", strings.NewReader("token="+token)) // from 192.0.2.1, the proxy
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Forwarded-Proto", "https")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	c := rec.Result().Cookies()[0]
	fmt.Println(rec.Code, c.Name, c.Value != token, c.MaxAge, c.Secure, c.HttpOnly)
	// Output:
	// 303 toolcanon_ui_session true 3600 true true
}
