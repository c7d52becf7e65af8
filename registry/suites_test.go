package registry

import (
	"os"
	"path/filepath"
	"testing"
)

// suiteTestdata returns the path of a vendored external test suite under
// testdata/ (RFC 8785 vectors in testdata/jcs, JSON-Schema-Test-Suite files
// in testdata/json-schema-test-suite; each directory carries its upstream
// licence and a README with its provenance). A missing file fails the test:
// these suites are the evidence for the package's claims.
func suiteTestdata(tb testing.TB, elem ...string) string {
	tb.Helper()
	p := filepath.Join(append([]string{"testdata"}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("vendored test suite missing: %v", err)
	}
	return p
}

// ok fails the test on a non-nil error.
func ok(tb testing.TB, err error, context ...any) {
	tb.Helper()
	if err != nil {
		tb.Fatal(append(context, err)...)
	}
}
