// Package pgtest gives tests and benchmarks a real PostgreSQL server: the
// postgres binary of the machine's installation, started on a free loopback
// port in a temporary directory (initdb, then postgres), and removed when it
// stops.
//
// The binaries are found in TOOLCANON_POSTGRES_BINDIR when set, else in
// `pg_config --bindir`, else in the newest /usr/lib/postgresql/<version>/bin
// (Debian's layout). Without them, starting a server fails with a message
// naming the package to install (Debian: apt-get install -y postgresql):
// a test that needs PostgreSQL never skips.
//
// The server refuses to run as root, so a root process runs initdb and
// postgres as the installation's postgres user (as `runuser -u postgres`
// would, but with no process between the harness and the server, so that
// stopping it signals the server itself), with the temporary directory owned
// by that user. The server trusts every connection from loopback, keeps
// nothing across a crash (fsync, synchronous_commit and full_page_writes
// off: fast, and the directory is thrown away anyway) and, on Linux, is
// stopped if the process that started it dies.
//
// One server is shared by the tests of a package (Shared, stopped by Main);
// Database gives each test a database of its own, dropped when the test
// ends, so tests keep apart without truncating anything.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvBinDir names the directory of initdb and postgres when set.
const EnvBinDir = "TOOLCANON_POSTGRES_BINDIR"

// Package is the Debian package that installs the server.
const Package = "postgresql"

// User is the database superuser of every server the harness starts.
const User = "postgres"

// StartTimeout bounds how long Start waits for a new server to accept
// connections.
const StartTimeout = 30 * time.Second

// Server is a running PostgreSQL server started by Start.
type Server struct {
	Host      string // 127.0.0.1
	Port      int
	SocketDir string // the directory of its Unix socket
	Version   string // server_version, e.g. "15.14 (Debian 15.14-0+deb12u1)"
	dir       string // the temporary directory: data/, the socket, postgres.log
	cmd       *exec.Cmd
	done      chan struct{} // closed when the process has exited
	stopOnce  sync.Once
	stopErr   error
}

// DSN returns the connection string of database on s as the superuser.
func (s *Server) DSN(database string) string {
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", User, net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), database)
}

// PID returns the process id of the server (the postmaster).
func (s *Server) PID() int { return s.cmd.Process.Pid }

// DataDir returns the server's data directory.
func (s *Server) DataDir() string { return filepath.Join(s.dir, "data") }

// LogTail returns the last n bytes of the server's log.
func (s *Server) LogTail(n int) string { return tail(filepath.Join(s.dir, "postgres.log"), n) }

// Stop shuts the server down (a fast shutdown, then a kill after 10 s) and
// removes its directory. It is safe to call more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		s.stopErr = os.RemoveAll(s.dir)
	})
	return s.stopErr
}

// BinDir returns the directory that holds initdb and postgres, or an error
// that names the package to install.
func BinDir() (string, error) {
	return findBinDir(os.Getenv(EnvBinDir), pgConfigBinDir, "/usr/lib/postgresql/*/bin")
}

// pgConfigBinDir asks pg_config on PATH, "" when there is none.
func pgConfigBinDir() string {
	out, err := exec.Command("pg_config", "--bindir").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// findBinDir looks in env, then pgConfig's answer, then the newest version
// that glob matches; a directory counts when it holds initdb and postgres.
func findBinDir(env string, pgConfig func() string, glob string) (string, error) {
	hint := fmt.Sprintf("install PostgreSQL's server (Debian: apt-get install -y %s) or set %s", Package, EnvBinDir)
	if env != "" {
		if hasServer(env) {
			return env, nil
		}
		return "", fmt.Errorf("pgtest: %s=%s holds no initdb and postgres: %s", EnvBinDir, env, hint)
	}
	var tried []string
	if d := pgConfig(); d != "" {
		if hasServer(d) {
			return d, nil
		}
		tried = append(tried, d+" (pg_config --bindir)")
	}
	dirs, _ := filepath.Glob(glob)
	// Newest first: versions compare as numbers (16 after 9.6).
	slices.SortFunc(dirs, func(a, b string) int { return compareVersions(versionOf(b), versionOf(a)) })
	for _, d := range dirs {
		if hasServer(d) {
			return d, nil
		}
		tried = append(tried, d)
	}
	tried = append(tried, glob)
	return "", fmt.Errorf("pgtest: no PostgreSQL server binaries (initdb, postgres) in %s: %s", strings.Join(tried, ", "), hint)
}

func hasServer(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// versionOf returns the version directory of .../<version>/bin.
func versionOf(binDir string) string { return filepath.Base(filepath.Dir(binDir)) }

// compareVersions compares dotted versions part by part, numerically where
// both parts are numbers.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		if i >= len(pa) {
			return -1
		}
		if i >= len(pb) {
			return 1
		}
		x, errx := strconv.Atoi(pa[i])
		y, erry := strconv.Atoi(pb[i])
		if errx != nil || erry != nil {
			if c := strings.Compare(pa[i], pb[i]); c != 0 {
				return c
			}
			continue
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

// runAs is the user the server runs as: nil for this process's own user;
// the installation's postgres user when this process is root, since the
// server refuses to run as root.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(User)
	if err != nil {
		return nil, fmt.Errorf("pgtest: this process is root, which PostgreSQL refuses to run as, and there is no %q user to run it as (Debian's %s package creates it): %w", User, Package, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("pgtest: user %s has uid %q and gid %q", User, u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// command returns bin with args, run as cred in dir, with its output going
// to log.
func command(cred *syscall.Credential, dir string, log *os.File, bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	// A fixed locale: the server's messages and initdb's defaults do not
	// depend on the caller's environment.
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	cmd.SysProcAttr = sysProcAttr(cred)
	return cmd
}

// Start initialises a cluster in a new temporary directory and starts a
// server on a free loopback port, with settings ("name=value", given to the
// server as -c flags) after the harness's own. It returns once the server
// accepts connections.
func Start(settings ...string) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "toolcanon-postgres-")
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	log, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer log.Close()
	data := filepath.Join(dir, "data")
	initdb := command(cred, dir, log, filepath.Join(bin, "initdb"), "-D", data, "-U", User, "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if err := initdb.Run(); err != nil {
		defer os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %v: %s", err, tail(log.Name(), 2000))
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ { // a free port can be taken before the server binds it
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s := &Server{Host: "127.0.0.1", Port: port, SocketDir: dir, dir: dir}
		args := []string{"-D", data, "-k", dir, "-p", strconv.Itoa(port), "-h", s.Host,
			"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"}
		for _, kv := range settings {
			args = append(args, "-c", kv)
		}
		s.cmd = command(cred, dir, log, filepath.Join(bin, "postgres"), args...)
		if lastErr = s.run(); lastErr == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

// run starts the server and waits until it accepts a connection.
func (s *Server) run() error {
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	s.done = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(StartTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err == nil {
			err = conn.QueryRow(ctx, "SHOW server_version").Scan(&s.Version)
			conn.Close(ctx)
			cancel()
			if err == nil {
				return nil
			}
		}
		cancel()
		select {
		case <-s.done:
			return fmt.Errorf("pgtest: postgres exited at start: %s", s.LogTail(2000))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = s.cmd.Process.Kill()
			<-s.done
			return fmt.Errorf("pgtest: postgres on port %d did not accept connections within %v (%v): %s", s.Port, StartTimeout, err, s.LogTail(2000))
		}
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}

var (
	mu        sync.Mutex
	shared    *Server
	sharedErr error
	dbSeq     atomic.Int64
)

// Main runs the package's tests, then stops the shared server. Use it from
// TestMain: func TestMain(m *testing.M) { pgtest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	StopShared()
	os.Exit(code)
}

// StopShared stops the shared server, if one was started.
func StopShared() {
	mu.Lock()
	defer mu.Unlock()
	if shared != nil {
		_ = shared.Stop()
	}
	shared, sharedErr = nil, errors.New("pgtest: the shared server was stopped")
}

// Shared returns the server shared by the tests of this process, starting
// it on first use. It fails tb when no server can be started.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if shared == nil && sharedErr == nil {
		shared, sharedErr = Start()
	}
	if sharedErr != nil {
		tb.Fatalf("pgtest: no PostgreSQL for this test: %v", sharedErr)
	}
	return shared
}

// Database creates a database of tb's own on the shared server and returns
// its DSN; the database is dropped, with whatever connections are left on
// it, when tb ends.
func Database(tb testing.TB) string {
	tb.Helper()
	s := Shared(tb)
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	if err := s.exec(context.Background(), "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: %v", err)
		}
	})
	return s.DSN(name)
}

// CreateDatabase creates a database named name on s and returns its DSN.
func (s *Server) CreateDatabase(ctx context.Context, name string) (string, error) {
	if err := s.exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return s.DSN(name), nil
}

// exec runs one statement on the server's postgres database.
func (s *Server) exec(ctx context.Context, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}
