package ui_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/ui"
)

// The runs page shows the audit export's lag of a store with an audit
// stream, and warns when it is far behind; a store without shows nothing.
func TestRunsPageShowsExportLag(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	s := memstore.New(memstore.WithAudit(canonical.AuditOptions{Key: make([]byte, 32), KeyID: "k"}))
	h := ui.Handler(s, ui.Options{Now: func() time.Time { return now }})
	_, body, _ := get(h, "GET", "/", nil)
	if !strings.Contains(body, `id="audit-export"`) || !strings.Contains(body, "no export pass has run yet") {
		t.Fatalf("before any pass: %s", excerpt(body))
	}
	if err := s.AuditReport(context.Background(), canonical.AuditStatus{LastPass: now.Add(-time.Minute), Pending: 7,
		OldestEvent: now.Add(-20 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	_, body, _ = get(h, "GET", "/", nil)
	if !strings.Contains(body, "lag 20m0s, 7 event(s) left pending") || !strings.Contains(body, "is the exporter running") {
		t.Fatalf("after a pass: %s", excerpt(body))
	}
	_, body, _ = get(ui.Handler(memstore.New(), ui.Options{}), "GET", "/", nil)
	if strings.Contains(body, `id="audit-export"`) {
		t.Fatal("a store without audit shows an export line")
	}
}

func excerpt(body string) string {
	if i := strings.Index(body, "<h1>"); i >= 0 {
		return body[i:min(len(body), i+400)]
	}
	return body[:min(len(body), 400)]
}
