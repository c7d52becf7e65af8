// Package redistest gives tests a real server: a standalone server and a
// 3-master cluster, of Redis or of Valkey.
//
// Where a server comes from, in order: the address in TOOLCANON_REDIS_ADDR
// (TOOLCANON_REDIS_CLUSTER_ADDRS, comma-separated, for a cluster); else a
// server binary started on free loopback ports in a temporary directory and
// stopped when the test binary exits; else, where a Docker engine answers,
// the same server processes in containers started through testcontainers-go,
// one container per server on the host's network so that cluster nodes,
// failover and Kill/Restart behave exactly as with the binary; containers
// need a test binary that imports internal/redistest/container, a module of
// its own so that the root module requires no container library. When none is
// there the test fails with one message naming the ways: a test that needs
// a server never silently skips.
//
// TOOLCANON_SERVER says which server: "redis" (the default) or "valkey".
// Redis is the redis-server on PATH; when there is none, every test runs on
// Valkey instead, and the harness says so in one line. Valkey is
// TOOLCANON_VALKEY_SERVER when set, else valkey-server built once from the
// vendored source (third_party/valkey, checked against its sha256) into the
// user's cache directory and reused by every later run; containers use
// redis:7 or valkey/valkey:8 (TOOLCANON_REDIS_IMAGE, TOOLCANON_VALKEY_IMAGE).
// `make test` runs the store, durability and cluster suites once on each.
//
// One server (and one cluster) is shared by all tests of a package; tests keep
// apart by using their own run ids, never by flushing.
package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Env variables that point the harness at servers it does not start.
const (
	EnvAddr         = "TOOLCANON_REDIS_ADDR"
	EnvClusterAddrs = "TOOLCANON_REDIS_CLUSTER_ADDRS"
)

// Env variables that choose the servers the harness starts: EnvServer is
// KindRedis (or empty) or KindValkey; EnvValkeyServer is the path of a
// valkey-server binary to use instead of building one.
const (
	EnvServer       = "TOOLCANON_SERVER"
	EnvValkeyServer = "TOOLCANON_VALKEY_SERVER"
)

// The kinds of server the harness runs.
const (
	KindRedis  = "redis"
	KindValkey = "valkey"
)

// Server is one running server process started by the harness, on this
// machine or in a container.
type Server struct {
	Addr    string
	Port    int
	Kind    string // KindRedis or KindValkey
	TLSAddr string // the TLS port's address, of a server StartTLSServer started
	dir     string
	args    []string
	bin     string    // server binary; "" when the server runs in ctr
	ctr     Container // the container of a server the binary does not run
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
}

var (
	mu        sync.Mutex
	started   []*Server
	single    []string
	singleErr error
	cluster   []string
	clusterE  error
	singleOK  bool
	clusterOK bool
)

// Main runs the package's tests and then stops every server the harness
// started. Use it from TestMain: func TestMain(m *testing.M) { redistest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	StopAll()
	os.Exit(code)
}

// StopAll stops every server the harness started.
func StopAll() {
	mu.Lock()
	defer mu.Unlock()
	for _, s := range started {
		s.Stop()
	}
	started = nil
}

// Addr returns the address of a standalone Redis for tb, starting one on first
// use. It fails tb when no Redis can be had.
func Addr(tb testing.TB) string {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if !singleOK {
		singleOK = true
		if a := os.Getenv(EnvAddr); a != "" {
			single = []string{a}
		} else {
			var s *Server
			s, singleErr = StartServer()
			if singleErr == nil {
				started = append(started, s)
				single = []string{s.Addr}
			}
		}
	}
	if singleErr != nil {
		tb.Fatalf("redistest: no Redis for this test: %v", singleErr)
	}
	return single[0]
}

// ClusterAddrs returns the seed addresses of a 3-master Redis Cluster for tb,
// starting one on first use. It fails tb when no cluster can be had.
func ClusterAddrs(tb testing.TB) []string {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if !clusterOK {
		clusterOK = true
		if a := os.Getenv(EnvClusterAddrs); a != "" {
			cluster = strings.Split(a, ",")
		} else {
			var nodes []*Server
			nodes, clusterE = StartCluster(3)
			started = append(started, nodes...)
			for _, n := range nodes {
				cluster = append(cluster, n.Addr)
			}
		}
	}
	if clusterE != nil {
		tb.Fatalf("redistest: no Redis Cluster for this test: %v", clusterE)
	}
	return append([]string(nil), cluster...)
}

// Kind returns the kind of server the harness starts in this process
// (KindRedis or KindValkey), choosing it on first use. It fails tb when no
// server can be had. Servers given by address are not asked.
func Kind(tb testing.TB) string {
	tb.Helper()
	b, err := serverBackend()
	if err != nil {
		tb.Fatalf("redistest: no server for this test: %v", err)
	}
	return b.kind
}

// CLI returns the command-line client that matches the servers the harness
// starts (redis-cli or valkey-cli). It fails tb when there is none, as when
// servers run in containers.
func CLI(tb testing.TB) string {
	tb.Helper()
	b, err := serverBackend()
	if err != nil {
		tb.Fatalf("redistest: no server for this test: %v", err)
	}
	if b.cli == "" {
		tb.Fatalf("redistest: no %s command-line client beside the servers the harness starts (binary %q, image %q)", b.kind, b.binary, b.image)
	}
	return b.cli
}

// binary finds redis-server.
func binary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/bin", "/usr/sbin", "/usr/local/bin"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH: install it (Debian: apt-get install -y redis-server) or set %s", name, EnvAddr)
}

// StartServer starts a standalone server (Kind's) on a free loopback port,
// with extra arguments after the harness's own: a binary, or a container
// where only a Docker engine is there.
func StartServer(extra ...string) (*Server, error) {
	return start(extra...)
}

func start(extra ...string) (*Server, error) {
	be, err := serverBackend()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort(len(extra) > 0 && extra[0] == "--cluster-enabled")
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "toolcanon-redis-")
		if err != nil {
			return nil, err
		}
		s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, Kind: be.kind, dir: dir, bin: be.binary}
		s.args = append([]string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no",
			"--logfile", filepath.Join(dir, "redis.log"),
		}, extra...)
		if be.binary == "" {
			s.ctr, err = startContainer(be.image, be.command(), containerArgs(s.args))
			if err == nil {
				err = s.waitPing(nil)
			}
			if err != nil {
				if s.ctr != nil {
					s.ctr.Remove()
				}
				os.RemoveAll(dir)
				return nil, err
			}
			return s, nil
		}
		if err := s.run(); err != nil {
			lastErr = err
			os.RemoveAll(dir)
			continue
		}
		return s, nil
	}
	return nil, lastErr
}

func (s *Server) run() error {
	s.cmd = exec.Command(s.bin, s.args...)
	s.cmd.Dir = s.dir
	if err := s.cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	s.done = exited
	go func() { _ = s.cmd.Wait(); close(exited) }()
	if err := s.waitPing(exited); err != nil {
		_ = s.cmd.Process.Kill()
		return err
	}
	return nil
}

// waitPing waits until the server answers PING, or exited is closed.
func (s *Server) waitPing(exited <-chan struct{}) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("%s-server exited at start: %s", s.Kind, tail(filepath.Join(s.dir, "redis.log"), 500))
		default:
		}
		if reply, err := Command(s.Addr, "PING"); err == nil && reply == "PONG" {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s-server on %s did not answer PING within 10s", s.Kind, s.Addr)
}

// LogTail returns the last lines of the server's log, for a test to show
// what the server did when something went wrong.
func (s *Server) LogTail() string {
	if s.ctr != nil {
		return s.ctr.LogTail(8000)
	}
	return tail(filepath.Join(s.dir, "redis.log"), 8000)
}

// Stop kills the server and removes its directory (or its container).
func (s *Server) Stop() {
	if s.ctr != nil {
		s.ctr.Remove()
		s.ctr = nil
	}
	s.kill()
	os.RemoveAll(s.dir)
}

// Kill stops the process abruptly, as a crash would; Restart brings it back.
func (s *Server) Kill() { s.kill() }

// Pause stops the process with SIGSTOP: it holds its connections but reads,
// answers and replicates nothing until Resume. Only a server the binary
// runs can be paused.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	if s.cmd == nil || s.cmd.Process == nil {
		return fmt.Errorf("redistest: %s runs in a container: only a local binary can be sent %v", s.Addr, sig)
	}
	return s.cmd.Process.Signal(sig)
}

func (s *Server) kill() {
	if s.ctr != nil {
		if err := s.ctr.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "redistest: stopping the container of %s: %v\n", s.Addr, err)
		}
		return
	}
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
		}
	}
}

// Restart kills the server and starts it again on the same port, empty (no
// persistence): what a client sees when Redis crashes and comes back.
func (s *Server) Restart() error {
	s.kill()
	if s.ctr != nil {
		if err := s.ctr.Start(); err != nil {
			return err
		}
		return s.waitPing(nil)
	}
	return s.run()
}

// StartCluster starts n masters with cluster mode on, assigns the 16384 slots
// evenly, joins them and waits until every node reports cluster_state:ok.
func StartCluster(n int) ([]*Server, error) {
	masters, _, err := StartClusterWithReplicas(n, 0)
	return masters, err
}

// StartClusterWithReplicas starts n masters and one replica for each when
// replicas is 1 (0: none), so that a master can fail over. It returns the
// masters and the replicas in master order.
func StartClusterWithReplicas(n, replicas int) (masters, reps []*Server, err error) {
	var all []*Server
	fail := func(err error) ([]*Server, []*Server, error) {
		for _, s := range all {
			s.Stop()
		}
		return nil, nil, err
	}
	for i := 0; i < n*(1+replicas); i++ {
		s, err := start("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000", "--cluster-require-full-coverage", "yes")
		if err != nil {
			return fail(err)
		}
		all = append(all, s)
	}
	masters, reps = all[:n], all[n:]
	for i, s := range masters {
		lo, hi := i*16384/n, (i+1)*16384/n-1
		if _, err := Command(s.Addr, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return fail(err)
		}
	}
	for _, s := range all[1:] {
		if _, err := Command(s.Addr, "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(all[0].Port)); err != nil {
			return fail(err)
		}
	}
	if err := waitCluster(all, len(all), 30*time.Second); err != nil {
		return fail(err)
	}
	for i, r := range reps {
		id, err := Command(masters[i].Addr, "CLUSTER", "MYID")
		if err != nil {
			return fail(err)
		}
		// The replica must know the master before it can follow it.
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err = Command(r.Addr, "CLUSTER", "REPLICATE", id)
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			return fail(err)
		}
	}
	if err := waitCluster(all, len(all), 30*time.Second); err != nil {
		return fail(err)
	}
	// Until a replica has synced and its master streams to it, it
	// acknowledges nothing (WAIT counts it out), a write it has not received
	// is lost with its master, and it may not take over: wait for the steady
	// state, on both ends of each link.
	for i, r := range reps {
		if err := waitInfo(r.Addr, "master_link_status:up", 30*time.Second); err != nil {
			return fail(err)
		}
		if err := waitInfo(masters[i].Addr, "state=online", 30*time.Second); err != nil {
			return fail(err)
		}
		key, err := keyInSlots(masters[i].Addr, i*16384/n, (i+1)*16384/n-1)
		if err != nil {
			return fail(err)
		}
		if err := waitStreaming(masters[i].Addr, key, 30*time.Second); err != nil {
			return fail(err)
		}
	}
	return masters, reps, nil
}

// waitStreaming waits until the master at addr streams its writes to its
// replica: a write of its own (a probe key that expires at once) is
// acknowledged by WAIT. A master puts a freshly synced replica online some
// time before it starts streaming to it.
func waitStreaming(addr, key string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		var replies []string
		replies, err = Pipeline(addr, []string{"SET", key, "1", "PX", "1000"}, []string{"WAIT", "1", "1000"})
		if err == nil && replies[1] == "1" {
			return nil
		}
	}
	return fmt.Errorf("%s: no replica acknowledged a write within %v (%v)", addr, timeout, err)
}

// keyInSlots returns a probe key whose slot is in lo..hi.
func keyInSlots(addr string, lo, hi int) (string, error) {
	for i := 0; i < 10000; i++ {
		key := "redistest:probe:{" + strconv.Itoa(i) + "}"
		s, err := Command(addr, "CLUSTER", "KEYSLOT", key)
		if err != nil {
			return "", err
		}
		if slot, _ := strconv.Atoi(s); slot >= lo && slot <= hi {
			return key, nil
		}
	}
	return "", fmt.Errorf("no probe key in slots %d..%d", lo, hi)
}

// waitInfo waits until the replication section of INFO at addr contains
// want.
func waitInfo(addr, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if info, err := Command(addr, "INFO", "replication"); err == nil && strings.Contains(info, want) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s: INFO replication did not show %q within %v", addr, want, timeout)
}

// waitCluster waits until every live node of nodes reports cluster_state:ok
// and knows want nodes.
func waitCluster(nodes []*Server, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ok := true
		for _, s := range nodes {
			info, err := Command(s.Addr, "CLUSTER", "INFO")
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(want)) {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("cluster of %d nodes did not reach cluster_state:ok within %v", want, timeout)
}

// freePort finds a loopback port that is free; for a cluster node the bus
// port (port+10000) must be free too.
func freePort(withBus bool) (int, error) {
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !withBus {
			return port, nil
		}
		if port+10000 > 65535 {
			continue
		}
		if b, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000)); err == nil {
			b.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free loopback port")
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}

// Pipeline sends cmds over one fresh connection, in one write, and returns
// their replies rendered as Command renders one; an error reply fails the
// whole pipeline.
func Pipeline(addr string, cmds ...[]string) ([]string, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	for _, args := range cmds {
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return nil, err
	}
	r := bufio.NewReader(conn)
	out := make([]string, len(cmds))
	for i := range cmds {
		if out[i], err = readReply(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Command sends one command over a fresh connection in RESP and returns the
// reply rendered as text (bulk and simple strings as they are, integers in
// decimal, arrays one element per line). It lets the harness and tests look
// at a server without going through the client under test.
func Command(addr string, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	return readReply(bufio.NewReader(conn))
}

func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("redis: %s", line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		var parts []string
		for i := 0; i < n; i++ {
			p, err := readReply(r)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, "\n"), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

// KeyTTLs returns every key matching pattern on the servers at addrs (every
// master of a cluster) with its PTTL in milliseconds (-1: no TTL), read over
// one connection per server: SCAN, then one pipelined PTTL per key. Tests use
// it to see what a store wrote without going through the store.
func KeyTTLs(addrs []string, pattern string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, addr := range addrs {
		if err := keyTTLs(addr, pattern, out); err != nil {
			return nil, fmt.Errorf("%s: %w", addr, err)
		}
	}
	return out, nil
}

func keyTTLs(addr, pattern string, out map[string]int64) error {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(conn)
	send := func(cmds ...[]string) error {
		var b strings.Builder
		for _, args := range cmds {
			fmt.Fprintf(&b, "*%d\r\n", len(args))
			for _, a := range args {
				fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
			}
		}
		_, err := conn.Write([]byte(b.String()))
		return err
	}
	cursor := "0"
	for {
		if err := send([]string{"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}); err != nil {
			return err
		}
		reply, err := readReply(r)
		if err != nil {
			return err
		}
		lines := strings.Split(reply, "\n")
		cursor = lines[0]
		var keys []string
		var cmds [][]string
		for _, k := range lines[1:] {
			if k != "" {
				keys = append(keys, k)
				cmds = append(cmds, []string{"PTTL", k})
			}
		}
		if len(cmds) > 0 {
			if err := send(cmds...); err != nil {
				return err
			}
			for _, k := range keys {
				p, err := readReply(r)
				if err != nil {
					return err
				}
				ms, err := strconv.ParseInt(p, 10, 64)
				if err != nil {
					return fmt.Errorf("PTTL %s: %q", k, p)
				}
				if ms != -2 { // expired between SCAN and PTTL
					out[k] = ms
				}
			}
		}
		if cursor == "0" {
			return nil
		}
	}
}

// Evicter returns a DEL of one key of a run, named as its last part ("run",
// "calls", "live"), sent to every server at addrs, as eviction would:
// exactly one of them must hold the key, or the test fails.
func Evicter(addrs []string, prefix string) func(*testing.T, string, string) {
	return func(t *testing.T, runID, key string) {
		t.Helper()
		full := prefix + ":{" + runID + "}:" + key
		deleted := 0
		for _, addr := range addrs {
			if n, err := Command(addr, "DEL", full); err == nil && n == "1" {
				deleted++
			}
		}
		if deleted != 1 {
			t.Fatalf("DEL %s deleted %d keys", full, deleted)
		}
	}
}
