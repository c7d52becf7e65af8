package registry

import (
	"os"
	"path/filepath"
	"testing"
)

// sharedTestdata locates the shared test suites, which are never copied into
// this repository (their licences travel with them). TOOLCANON_SHARED names
// the shared directory; otherwise the nearest ancestor with a sibling
// shared/testdata is used. A missing directory fails the test: these suites
// are the evidence for the package's claims.
func sharedTestdata(tb testing.TB, elem ...string) string {
	tb.Helper()
	var base string
	if d := os.Getenv("TOOLCANON_SHARED"); d != "" {
		base = filepath.Join(d, "testdata")
	} else {
		dir, err := os.Getwd()
		if err != nil {
			tb.Fatal(err)
		}
		for {
			if fi, err := os.Stat(filepath.Join(dir, "shared", "testdata")); err == nil && fi.IsDir() {
				base = filepath.Join(dir, "shared", "testdata")
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				tb.Fatal("shared/testdata not found above the package directory; set TOOLCANON_SHARED")
			}
			dir = parent
		}
	}
	p := filepath.Join(append([]string{base}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("shared test data missing: %v", err)
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
