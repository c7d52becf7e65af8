package redistest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The harness builds from the vendored archive only when its checksum is
// the one its README of origin states, and it keeps the build where that
// README says.
func TestVendoredValkeyMatchesItsREADME(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "third_party", "valkey")
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sha256: " + valkeySHA256 + "\n", valkeyDirName, EnvValkeyServer} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("third_party/valkey/README.md lacks %q", want)
		}
	}
	if err := verifySHA256(filepath.Join(dir, valkeyArchive), valkeySHA256); err != nil {
		t.Fatal(err)
	}
	if lic, err := os.ReadFile(filepath.Join(dir, "COPYING")); err != nil || !bytes.Contains(lic, []byte("BSD 3-Clause License")) {
		t.Fatalf("third_party/valkey/COPYING: %v", err)
	}
}

func TestVerifySHA256RefusesAnotherArchive(t *testing.T) {
	p := filepath.Join(t.TempDir(), valkeyArchive)
	if err := os.WriteFile(p, []byte("not the archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := verifySHA256(p, valkeySHA256); err == nil || !strings.Contains(err.Error(), "not the vendored archive") {
		t.Fatalf("verifySHA256 of another file: %v", err)
	}
}

func TestValkeyCacheIsOutsideTheTreeAndNamedByChecksum(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", base)
	dir, err := valkeyCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(base, "toolcanon", "valkey-8.0.1-"+valkeySHA256[:12]); dir != want {
		t.Fatalf("cache dir %s, want %s", dir, want)
	}
}

// tarGz builds an archive of the given entries.
func tarGz(t *testing.T, entries ...*tar.Header) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range entries {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bytes.Repeat([]byte("x"), int(h.Size))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "a.tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUnpackKeepsEverythingInside(t *testing.T) {
	ok := tarGz(t,
		&tar.Header{Name: "v/", Typeflag: tar.TypeDir, Mode: 0o755},
		&tar.Header{Name: "v/src/a.c", Typeflag: tar.TypeReg, Mode: 0o644, Size: 3},
		&tar.Header{Name: "v/run.sh", Typeflag: tar.TypeReg, Mode: 0o755, Size: 1},
		&tar.Header{Name: "v/src/b.c", Typeflag: tar.TypeSymlink, Linkname: "a.c"})
	dst := t.TempDir()
	if err := unpack(ok, dst, 1<<20); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "v", "src", "b.c")); err != nil || string(b) != "xxx" {
		t.Fatalf("through the link: %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "v", "run.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Fatalf("run.sh lost its execute bit: %v, %v", fi, err)
	}
	for name, bad := range map[string]string{
		"a path out": tarGz(t, &tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}),
		"a link out": tarGz(t, &tar.Header{Name: "v/l", Typeflag: tar.TypeSymlink, Linkname: "../../etc/passwd"}),
		"too large":  tarGz(t, &tar.Header{Name: "v/big", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2 << 20}),
	} {
		if err := unpack(bad, t.TempDir(), 1<<20); err == nil {
			t.Errorf("%s: unpacked", name)
		}
	}
}

// Packages' test binaries run at once: while one holds the build lock,
// another waits, and takes it once the first lets go.
func TestBuildLockIsExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "build.lock")
	unlock, err := lockFile(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockFile(path, 300*time.Millisecond); err == nil {
		t.Fatal("a second holder took the lock while the first held it")
	}
	got := make(chan error, 1)
	go func() {
		u, err := lockFile(path, 5*time.Second)
		if err == nil {
			u()
		}
		got <- err
	}()
	time.Sleep(300 * time.Millisecond)
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("the waiter never got the lock after its release: %v", err)
	}
}
