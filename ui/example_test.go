package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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
