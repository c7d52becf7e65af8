package redistest

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// The vendored Valkey source (third_party/valkey) and its checksum, which the
// harness verifies before building from it.
const (
	valkeyVersion = "8.0.1"
	valkeyArchive = "valkey-" + valkeyVersion + ".tar.gz"
	valkeySHA256  = "c3cd9d307a724fbb0054e67e66a0fb4024a8666df2f2cc191d15b895fa3b3621"
)

// Bounds of a build: how long one may take, how long another process waits
// for it, and how many bytes the archive may unpack to.
const (
	buildTimeout = 20 * time.Minute
	lockWait     = 25 * time.Minute
	maxUnpacked  = 512 << 20
)

// valkeyDirName names the cache directory by version and checksum prefix.
var valkeyDirName = "valkey-" + valkeyVersion + "-" + valkeySHA256[:12]

// valkeyBinaries are the paths of a built valkey-server and valkey-cli.
type valkeyBinaries struct {
	server, cli string
}

// valkeyCacheDir is where the build is kept between runs: outside the
// repository, under the user's cache directory, named by version and
// checksum so that another archive never reuses it.
func valkeyCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the Valkey build (set XDG_CACHE_HOME or HOME): %w", err)
	}
	return filepath.Join(base, "toolcanon", valkeyDirName), nil
}

// repoRoot finds the repository this package was built from: the directory
// of the go.mod above this source file, else above the working directory
// (tests run in their package's directory).
func repoRoot() (string, error) {
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range starts {
		for d := dir; ; d = filepath.Dir(d) {
			if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil &&
				strings.Contains(string(b), "module github.com/toolcanon/toolcanon\n") {
				return d, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("the toolcanon repository (its go.mod) is not above this package or the working directory")
}

// valkeyBuilt returns the cached build of the vendored Valkey, building it
// first when no build is cached. Test binaries of several packages run at
// once and may all ask: a lock in the cache directory lets one build while
// the others wait for it.
func valkeyBuilt() (valkeyBinaries, error) {
	dir, err := valkeyCacheDir()
	if err != nil {
		return valkeyBinaries{}, err
	}
	bins := valkeyBinaries{server: filepath.Join(dir, "bin", "valkey-server"), cli: filepath.Join(dir, "bin", "valkey-cli")}
	if cached(bins) {
		return bins, nil
	}
	root, err := repoRoot()
	if err != nil {
		return valkeyBinaries{}, err
	}
	archive := filepath.Join(root, "third_party", "valkey", valkeyArchive)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return valkeyBinaries{}, err
	}
	unlock, err := lockFile(filepath.Join(dir, "build.lock"), lockWait)
	if err != nil {
		return valkeyBinaries{}, err
	}
	defer unlock()
	if cached(bins) { // built by another process while this one waited
		return bins, nil
	}
	if err := buildValkey(archive, dir); err != nil {
		return valkeyBinaries{}, err
	}
	if !cached(bins) {
		return valkeyBinaries{}, fmt.Errorf("the Valkey build in %s left no binaries", dir)
	}
	return bins, nil
}

// cached reports whether a complete build is there. The bin directory
// appears whole (a rename), so its server means a finished build.
func cached(b valkeyBinaries) bool {
	for _, p := range []string{b.server, b.cli} {
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// buildValkey verifies the archive, unpacks it under dir, runs make and
// moves the two binaries to dir/bin. The source tree is removed after.
func buildValkey(archive, dir string) error {
	if err := verifySHA256(archive, valkeySHA256); err != nil {
		return err
	}
	var missing []string
	for _, tool := range []string{"make", "cc"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("building Valkey from %s needs %s on PATH (Debian: apt-get install -y make gcc)",
			archive, strings.Join(missing, " and "))
	}
	work, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := unpack(archive, work, maxUnpacked); err != nil {
		return fmt.Errorf("unpacking %s: %w", archive, err)
	}
	src := filepath.Join(work, "valkey-"+valkeyVersion, "src")
	logPath := filepath.Join(dir, "build.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	jobs := fmt.Sprintf("-j%d", max(1, min(runtime.NumCPU(), 8)))
	fmt.Fprintf(os.Stderr, "redistest: building valkey-server %s from %s into %s (once; a few minutes)\n", valkeyVersion, archive, dir)
	started := time.Now()
	cmd := exec.CommandContext(ctx, "make", "-C", src, jobs, "valkey-server", "valkey-cli")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "BUILD_TLS=no")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building Valkey (make in %s): %v; the end of %s:\n%s", src, err, logPath, tail(logPath, 2000))
	}
	staged := filepath.Join(work, "bin")
	if err := os.Mkdir(staged, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"valkey-server", "valkey-cli"} {
		if err := os.Rename(filepath.Join(src, name), filepath.Join(staged, name)); err != nil {
			return err
		}
	}
	_ = os.RemoveAll(filepath.Join(dir, "bin")) // a partial bin of an interrupted run
	if err := os.Rename(staged, filepath.Join(dir, "bin")); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "redistest: built valkey-server %s in %v\n", valkeyVersion, time.Since(started).Round(time.Second))
	return nil
}

// verifySHA256 fails unless the file's SHA-256 is want (hex).
func verifySHA256(path, want string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("the vendored Valkey source: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%s has sha256 %s, want %s: not the vendored archive", path, got, want)
	}
	return nil
}

// unpack extracts a .tar.gz into dst: directories, regular files and
// symbolic links, each of them inside dst, at most limit bytes in all.
func unpack(archive, dst string, limit int64) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("entry %q leaves the directory", h.Name)
		}
		path := filepath.Join(dst, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			total += h.Size
			if total > limit {
				return fmt.Errorf("unpacks to more than %d bytes", limit)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			out, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, os.FileMode(h.Mode)&0o755|0o600)
			if err != nil {
				return err
			}
			_, err = io.CopyN(out, tr, h.Size)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			target := filepath.Join(filepath.Dir(name), h.Linkname)
			if filepath.IsAbs(h.Linkname) || !filepath.IsLocal(target) {
				return fmt.Errorf("link %q -> %q leaves the directory", h.Name, h.Linkname)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, path); err != nil {
				return err
			}
		case tar.TypeXGlobalHeader:
			// git archive's commit id; nothing to extract
		default:
			return fmt.Errorf("entry %q has an unsupported type %c", h.Name, h.Typeflag)
		}
	}
}
