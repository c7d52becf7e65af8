package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) {
	if os.Getenv(envOrphan) != "" {
		orphan()
		return
	}
	Main(m)
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// A test's database takes a table and gives back what was written; the
// server runs with the settings the harness promises.
func TestDatabaseAnswers(t *testing.T) {
	conn := connect(t, Database(t))
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE TABLE kv (k text PRIMARY KEY, v bytea NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO kv VALUES ($1, $2)", "a", []byte{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	var v []byte
	if err := conn.QueryRow(ctx, "SELECT v FROM kv WHERE k = 'a'").Scan(&v); err != nil || string(v) != "\x00\x01\x02" {
		t.Fatalf("read back %q, %v", v, err)
	}
	for name, want := range map[string]string{"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
		"listen_addresses": "127.0.0.1", "server_encoding": "UTF8"} {
		var got string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&got); err != nil || got != want {
			t.Errorf("%s = %q (%v), want %q", name, got, err, want)
		}
	}
	s := Shared(t)
	if s.Version == "" || !strings.HasPrefix(s.Version, strings.Split(versionOf(must(BinDir())), ".")[0]) {
		t.Errorf("server_version %q does not match the binaries in %s", s.Version, must(BinDir()))
	}
	// The Unix socket answers too, where the harness says it is.
	sock := connect(t, fmt.Sprintf("host=%s port=%d user=%s dbname=postgres", s.SocketDir, s.Port, User))
	if err := sock.Ping(ctx); err != nil {
		t.Fatalf("socket in %s: %v", s.SocketDir, err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Two tests' databases do not see each other's tables, and a database is
// gone once its test has ended.
func TestDatabasesAreApartAndDropped(t *testing.T) {
	var first string
	t.Run("one", func(t *testing.T) {
		first = Database(t)
		conn := connect(t, first)
		if _, err := conn.Exec(context.Background(), "CREATE TABLE mine (x int)"); err != nil {
			t.Fatal(err)
		}
		other := connect(t, Database(t))
		var n int
		if err := other.QueryRow(context.Background(), "SELECT count(*) FROM pg_tables WHERE tablename = 'mine'").Scan(&n); err != nil || n != 0 {
			t.Fatalf("the other database sees %d tables named mine (%v)", n, err)
		}
	})
	name := first[strings.LastIndex(first, "/")+1 : strings.Index(first, "?")]
	conn := connect(t, Shared(t).DSN("postgres"))
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil || n != 0 {
		t.Fatalf("database %s still exists after its test (%d, %v)", name, n, err)
	}
}

// A server of its own: as root it runs as the postgres user, which owns its
// data directory; otherwise as this process's user. Stop ends the process,
// frees the port and removes the directory.
func TestStartAndStop(t *testing.T) {
	s, err := Start("max_connections=42")
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			s.Stop()
		}
	}()
	conn := connect(t, s.DSN("postgres"))
	var mc string
	if err := conn.QueryRow(context.Background(), "SHOW max_connections").Scan(&mc); err != nil || mc != "42" {
		t.Fatalf("a setting given to Start: max_connections = %q, %v", mc, err)
	}
	want := os.Geteuid()
	if want == 0 {
		cred, err := runAs()
		if err != nil {
			t.Fatal(err)
		}
		want = int(cred.Uid)
		if want == 0 {
			t.Fatalf("the %s user is root", User)
		}
	}
	if uid := processUID(t, s.PID()); uid != want {
		t.Errorf("postgres runs as uid %d, want %d", uid, want)
	}
	fi, err := os.Stat(s.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	if uid := int(fi.Sys().(*syscall.Stat_t).Uid); uid != want {
		t.Errorf("the data directory is owned by uid %d, want %d", uid, want)
	}
	conn.Close(context.Background())
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if err := s.Stop(); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("the directory %s is still there (%v)", s.dir, err)
	}
	if running(s.PID()) {
		t.Errorf("the server process %d is still running", s.PID())
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), time.Second); err == nil {
		c.Close()
		t.Errorf("port %d still accepts connections", s.Port)
	}
}

// running reports whether process pid exists and has not exited: an exited
// server whose parent died stays a zombie until init reaps it.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// processUID reads the real uid of a process from /proc.
func processUID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
			uid, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			return uid
		}
	}
	t.Fatalf("no Uid line in /proc/%d/status", pid)
	return 0
}

// envOrphan makes the test binary start a server, print its pid and die
// without stopping it (TestServerDiesWithItsStarter).
const envOrphan = "PGTEST_ORPHAN"

func orphan() {
	s, err := Start()
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Printf("pid %d dir %s\n", s.PID(), s.dir)
	os.Exit(0) // no Stop: the kernel's parent-death signal must end the server
}

// A process that starts a server and dies without stopping it (as a test
// binary killed by its timeout does) leaves no server running.
func TestServerDiesWithItsStarter(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envOrphan+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var pid int
	var dir string
	if _, err := fmt.Sscanf(string(out), "pid %d dir %s", &pid, &dir); err != nil {
		t.Fatalf("child said %q: %v", out, err)
	}
	defer os.RemoveAll(dir)
	deadline := time.Now().Add(10 * time.Second)
	for running(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the server %d outlived the process that started it by 10 s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Without the binaries, the error names the package to install; the newest
// installed version is chosen, by number.
func TestBinDir(t *testing.T) {
	root := t.TempDir()
	none := func() string { return "" }
	_, err := findBinDir("", none, filepath.Join(root, "*", "bin"))
	if err == nil || !strings.Contains(err.Error(), "apt-get install -y postgresql") || !strings.Contains(err.Error(), EnvBinDir) {
		t.Fatalf("no binaries: %v", err)
	}
	if _, err := findBinDir(root, none, ""); err == nil || !strings.Contains(err.Error(), "apt-get install -y postgresql") {
		t.Fatalf("an empty %s: %v", EnvBinDir, err)
	}
	for _, v := range []string{"9.6", "15", "16", "17"} {
		dir := filepath.Join(root, v, "bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		names := []string{"initdb", "postgres"}
		if v == "17" { // incomplete: no postgres
			names = names[:1]
		}
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := findBinDir("", none, filepath.Join(root, "*", "bin"))
	if want := filepath.Join(root, "16", "bin"); err != nil || got != want {
		t.Fatalf("found %q, %v; want %s", got, err, want)
	}
	pgc := func() string { return filepath.Join(root, "9.6", "bin") }
	if got, err := findBinDir("", pgc, filepath.Join(root, "*", "bin")); err != nil || got != pgc() {
		t.Fatalf("pg_config's answer comes first: %q, %v", got, err)
	}
	if got, err := findBinDir(filepath.Join(root, "15", "bin"), pgc, ""); err != nil || got != filepath.Join(root, "15", "bin") {
		t.Fatalf("%s comes first: %q, %v", EnvBinDir, got, err)
	}
	// This machine's binaries: found, or the test fails (never skips).
	if dir, err := BinDir(); err != nil || !hasServer(dir) {
		t.Fatalf("BinDir() = %q, %v", dir, err)
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		sign int
	}{{"16", "9.6", 1}, {"9.6", "16", -1}, {"15", "15", 0}, {"15.1", "15", 1}, {"10", "9", 1}} {
		got := compareVersions(c.a, c.b)
		if got > 0 && c.sign <= 0 || got < 0 && c.sign >= 0 || got == 0 && c.sign != 0 {
			t.Errorf("compareVersions(%q, %q) = %d, want sign %d", c.a, c.b, got, c.sign)
		}
	}
}
