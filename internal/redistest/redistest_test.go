package redistest

import (
	"net"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

func TestStandaloneAnswers(t *testing.T) {
	addr := Addr(t)
	if _, err := Command(addr, "SET", "redistest:k", "v"); err != nil {
		t.Fatal(err)
	}
	got, err := Command(addr, "GET", "redistest:k")
	if err != nil || got != "v" {
		t.Fatalf("GET = %q, %v", got, err)
	}
}

func TestClusterHasThreeMastersCoveringAllSlots(t *testing.T) {
	addrs := ClusterAddrs(t)
	info, err := Command(addrs[0], "CLUSTER", "INFO")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_size:3"} {
		if !strings.Contains(info, want) {
			t.Fatalf("CLUSTER INFO lacks %q:\n%s", want, info)
		}
	}
}

// A paused server answers nothing until it is resumed; then it answers.
func TestPauseStopsTheServerUntilResume(t *testing.T) {
	s, err := StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", s.Addr, time.Second) // the kernel still accepts
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.Read(make([]byte, 16)); err == nil {
		t.Fatalf("a paused server answered %d bytes", n)
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if got, err := Command(s.Addr, "PING"); err != nil || got != "PONG" {
		t.Fatalf("after Resume: %q, %v", got, err)
	}
	if k := Kind(t); k != s.Kind || (k != KindRedis && k != KindValkey) {
		t.Fatalf("Kind() = %q, the server's %q", k, s.Kind)
	}
}
